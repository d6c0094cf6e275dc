"""Every module in library/ documents itself the way ansible-doc and AWX read it: the real
ansible-doc renders it (text and --json) without a warning, its DOCUMENTATION, EXAMPLES and
RETURN are YAML, every RETURN key says what it is, when it is returned and its type, and the
dicts that AWX receives through set_stats list what they contain, with samples. Like
ansible.posix / community.general modules each declares check mode and diff mode support
(agreeing with its AnsibleModule call and its code), platforms, requirements and valid
seealso entries, and everything a role or playbook reads from a module's result is in its
RETURN with a sample."""

import ast
import functools
import glob
import json
import os
import re
import subprocess

import ansible.modules
import pytest
import yaml

from tests.conftest import BIN, REPO, ansible_env, own_stderr

LIBRARY = os.path.join(REPO, "library")
MODULES = sorted(os.path.basename(p)[:-3] for p in glob.glob(os.path.join(LIBRARY, "*.py")))
DOC_BLOCKS = ("DOCUMENTATION", "EXAMPLES", "RETURN")
# the fields a return value may have (Ansible's documentation format)
RETURN_FIELDS = {"description", "returned", "type", "elements", "sample", "contains", "version_added"}
OPTION_FIELDS = {"description", "type", "required", "default", "choices", "elements", "aliases", "version_added",
                 "suboptions", "no_log"}


def doc_blocks(module):
    """The module's DOCUMENTATION, EXAMPLES and RETURN strings, read from its source."""
    with open(os.path.join(LIBRARY, module + ".py")) as fh:
        tree = ast.parse(fh.read())
    return {node.targets[0].id: node.value.value for node in tree.body
            if isinstance(node, ast.Assign) and len(node.targets) == 1
            and getattr(node.targets[0], "id", None) in DOC_BLOCKS}


def ansible_doc(*args):
    return subprocess.run([os.path.join(BIN, "ansible-doc"), "-M", LIBRARY] + list(args), cwd=REPO,
                          env=ansible_env(), capture_output=True, text=True, timeout=120)


@functools.lru_cache(maxsize=None)
def ansible_doc_json(module):
    """What ansible-doc --json says about ``module`` (doc fragments merged), read once per module."""
    proc = ansible_doc("--json", module)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not own_stderr(proc.stderr), proc.stderr[-2000:]  # no warning, no deprecation, nothing
    return json.loads(proc.stdout)[module]


def module_source(module):
    with open(os.path.join(LIBRARY, module + ".py")) as fh:
        return ast.parse(fh.read())


def supports_check_mode(tree):
    """The supports_check_mode of the module's AnsibleModule(...) call (False when not given)."""
    calls = [node for node in ast.walk(tree) if isinstance(node, ast.Call)
             and getattr(node.func, "id", getattr(node.func, "attr", None)) == "AnsibleModule"]
    assert len(calls) == 1, "expected one AnsibleModule(...) call, found %d" % len(calls)
    kw = {k.arg: k.value for k in calls[0].keywords}
    value = kw.get("supports_check_mode")
    assert value is None or isinstance(value, ast.Constant), "supports_check_mode is not a literal"
    return bool(value.value) if value is not None else False


def reads_diff_mode(tree):
    """Whether the module's code looks at module._diff (what it returns in diff mode)."""
    return any(isinstance(node, ast.Attribute) and node.attr == "_diff" for node in ast.walk(tree))


CORE_MODULES = {os.path.basename(p)[:-3] for p in glob.glob(os.path.join(os.path.dirname(ansible.modules.__file__),
                                                                          "*.py"))}


def known_module(fqcn):
    """A module a reader can open: one of library/ (ansible.legacy.NAME) or of ansible-core (ansible.builtin.NAME)."""
    namespace, _, name = fqcn.rpartition(".")
    return ((namespace == "ansible.legacy" and name in MODULES)
            or (namespace == "ansible.builtin" and name in CORE_MODULES))


def return_entries(returns, path=()):
    """(path, entry) for every RETURN key, nested ones (under contains) too."""
    for key, entry in (returns or {}).items():
        yield path + (key,), entry
        if isinstance(entry, dict) and isinstance(entry.get("contains"), dict):
            yield from return_entries(entry["contains"], path + (key,))


def _tasks(node):
    """Every task dict in a parsed task file or playbook, blocks and plays opened."""
    if isinstance(node, list):
        for item in node:
            yield from _tasks(item)
    elif isinstance(node, dict):
        yield node
        for key in ("tasks", "pre_tasks", "post_tasks", "handlers", "block", "rescue", "always"):
            yield from _tasks(node.get(key))


ROLE_AND_PLAYBOOK_FILES = ("roles/*/tasks/*.yml", "playbooks/*.yml", "playbooks/tasks/*.yml")
# where a registered result is read too (defaults, vars, templates); molecule scenarios are tests, not the product
READING_FILES = ROLE_AND_PLAYBOOK_FILES + ("roles/*/defaults/*.yml", "roles/*/vars/*.yml", "roles/*/templates/*")
# what every module returns (Ansible's common return values), documented once by Ansible itself
COMMON_RETURNS = {"changed", "failed", "msg", "skipped", "diff", "warnings", "invocation"}


def _files(patterns):
    return sorted(p for pattern in patterns for p in glob.glob(os.path.join(REPO, pattern)))


def registered_modules():
    """{register name: module} for every task of the roles and playbooks that runs a module of library/."""
    registered = {}
    for path in _files(ROLE_AND_PLAYBOOK_FILES):
        with open(path) as fh:
            for task in _tasks(yaml.safe_load(fh)):
                module = next((k.split(".")[-1] for k in task if k.split(".")[-1] in MODULES), None)
                if module and task.get("register"):
                    registered[task["register"]] = module
    return registered


def awx_read_returns():
    """{(module, RETURN key)} that reach AWX: a set_stats value reading REGISTERED.KEY where
    REGISTERED is a module of library/'s registered result. Found in the roles and playbooks,
    so a new set_stats is held to the same rule."""
    registered, stats = registered_modules(), []
    for path in _files(ROLE_AND_PLAYBOOK_FILES):
        with open(path) as fh:
            for task in _tasks(yaml.safe_load(fh)):
                data = (task.get("ansible.builtin.set_stats") or task.get("set_stats") or {}).get("data") or {}
                stats.extend(str(v) for v in data.values())
    out = set()
    for expr in stats:
        for var, key in re.findall(r"\b(\w+)\.(\w+)", expr):
            if var in registered:
                out.add((registered[var], key))
    return out


def workflow_reads():
    """{(module, path)}: every REGISTERED.KEY[.SUB...] the roles and playbooks read from a registered
    result of a library/ module (a task's when, a set_fact, a default), path as a tuple of keys."""
    registered, out = registered_modules(), set()
    for path in _files(READING_FILES):
        with open(path) as fh:
            text = fh.read()
        for var, keys in re.findall(r"\b(\w+)((?:\.\w+)+)", text):
            if var in registered:
                # a dict method ends the path (result.summary.get('x') reads summary)
                parts = tuple(keys.lstrip(".").split("."))
                stop = next((i for i, k in enumerate(parts) if k in ("get", "items", "keys", "values")), len(parts))
                out.add((registered[var], parts[:stop]))
    return out


def _is_text(value):
    return isinstance(value, str) or (isinstance(value, list) and all(isinstance(v, str) for v in value))


def test_every_module_is_checked():
    # the list below is read from library/, not written down: a new module is checked too
    assert len(MODULES) >= 10 and "gpu_runbook_job" in MODULES


@pytest.mark.parametrize("module", MODULES)
def test_doc_blocks_are_yaml(module):
    blocks = doc_blocks(module)
    assert set(blocks) == set(DOC_BLOCKS), "missing: %s" % (set(DOC_BLOCKS) - set(blocks))
    doc = yaml.safe_load(blocks["DOCUMENTATION"])
    assert doc["module"] == module and doc.get("short_description")
    assert isinstance(yaml.safe_load(blocks["EXAMPLES"]), list)
    assert isinstance(yaml.safe_load(blocks["RETURN"]), dict)
    # an option's description that YAML read as a mapping renders as 'KEY: null' lines
    odd = [name for name, option in (doc.get("options") or {}).items()
           if not _is_text(option.get("description")) or set(option) - OPTION_FIELDS]
    assert _is_text(doc.get("description")) and not odd, odd


@pytest.mark.parametrize("module", MODULES)
def test_every_return_key_says_what_when_and_type(module):
    returns = yaml.safe_load(doc_blocks(module)["RETURN"])
    problems = []
    for path, entry in return_entries(returns):
        name = ".".join(path)
        if not isinstance(entry, dict):
            problems.append("%s: not a mapping" % name)
            continue
        missing = [k for k in ("description", "returned", "type") if not entry.get(k)]
        if missing:
            problems.append("%s: no %s" % (name, ", ".join(missing)))
        if not _is_text(entry.get("description")):
            problems.append("%s: description is not text (a ': ' made YAML read a mapping?)" % name)
        # a comma in a flow mapping ({description: A, B, type: str}) makes B a key of its own
        strays = sorted(set(entry) - RETURN_FIELDS)
        if strays:
            problems.append("%s: stray fields %s (quote the description)" % (name, strays))
        if entry.get("contains") is not None and entry.get("type") not in ("dict", "list", "complex"):
            problems.append("%s: contains under type %s" % (name, entry.get("type")))
    assert not problems, problems


def test_dicts_awx_reads_list_what_they_contain():
    read = awx_read_returns()
    # the report's summary and the plan's summary reach AWX today; the finder must see them
    assert {("gpu_runbook_report", "summary"), ("gpu_runbook_plan", "summary")} <= read, read
    problems = []
    for module, key in sorted(read):
        entry = yaml.safe_load(doc_blocks(module)["RETURN"]).get(key)
        if entry is None:
            problems.append("%s: %s is read by set_stats but not in RETURN" % (module, key))
        elif entry.get("type") == "dict" and not entry.get("contains"):
            problems.append("%s: %s is a dict AWX reads without contains" % (module, key))
        else:
            # an approval node or a survey shows these values: each says what it looks like
            unshown = [name for name, sub in (entry.get("contains") or {"": entry}).items() if "sample" not in sub]
            if unshown:
                problems.append("%s: %s reaches AWX without a sample of %s" % (module, key, unshown))
    assert not problems, problems


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc_renders_every_return_key(module):
    proc = ansible_doc(module)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert not own_stderr(proc.stderr), proc.stderr[-2000:]  # no warning, no deprecation, nothing
    text = proc.stdout
    assert "RETURN VALUES" in text
    returns = yaml.safe_load(doc_blocks(module)["RETURN"])
    # each key starts a line of its own in the rendered text (nested ones indented; without
    # colour a key is marked '- ')
    unseen = [".".join(path) for path, _ in return_entries(returns)
              if not re.search(r"^\s*(- )?%s(\s|$)" % re.escape(path[-1]), text, re.M)]
    assert not unseen, unseen


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc_json_carries_the_same_returns(module):
    doc = ansible_doc_json(module)
    returns = yaml.safe_load(doc_blocks(module)["RETURN"])
    assert doc["doc"]["module"] == module
    assert doc["examples"].strip()

    def keys(tree, path=()):
        return {path + (k,) for k in tree} | {p for k, v in tree.items() if isinstance(v, dict) and v.get("contains")
                                             for p in keys(v["contains"], path + (k,))}
    assert keys(doc["return"]) == keys(returns)


CHECK_AND_DIFF = ("check_mode", "diff_mode")
SUPPORT = ("full", "partial", "none")


@pytest.mark.parametrize("module", MODULES)
def test_attributes_say_what_check_and_diff_mode_do(module):
    # read as ansible-doc renders them, with the action_common_attributes fragment merged
    attributes = ansible_doc_json(module)["doc"].get("attributes") or {}
    tree = module_source(module)
    problems = []
    for name in CHECK_AND_DIFF:
        attr = attributes.get(name) or {}
        if attr.get("support") not in SUPPORT:
            problems.append("%s: support %r is not one of %s" % (name, attr.get("support"), SUPPORT))
        if not attr.get("description"):
            problems.append("%s: no description (extends_documentation_fragment: action_common_attributes)" % name)
        if attr.get("support") == "partial" and not attr.get("details"):
            problems.append("%s: partial support without details saying what is left out" % name)
    check = (attributes.get("check_mode") or {}).get("support")
    if supports_check_mode(tree) != (check in ("full", "partial")):
        problems.append("check_mode support %r but AnsibleModule(supports_check_mode=%s)"
                        % (check, supports_check_mode(tree)))
    diff = (attributes.get("diff_mode") or {}).get("support")
    if reads_diff_mode(tree) != (diff in ("full", "partial")):
        problems.append("diff_mode support %r but the code %s module._diff" % (diff, "reads" if reads_diff_mode(tree)
                                                                              else "never reads"))
    if not (attributes.get("platform") or {}).get("platforms"):
        problems.append("platform: no platforms")
    assert not problems, problems


@pytest.mark.parametrize("module", MODULES)
def test_requirements_and_seealso(module):
    doc = yaml.safe_load(doc_blocks(module)["DOCUMENTATION"])
    requirements = doc.get("requirements")
    assert isinstance(requirements, list) and requirements and all(isinstance(r, str) and r.strip()
                                                                   for r in requirements), requirements
    seealso = doc.get("seealso") or []
    assert seealso, "no seealso"
    problems = []
    for entry in seealso:
        if "module" in entry:
            if not known_module(entry["module"]) or entry["module"] == "ansible.legacy." + module:
                problems.append("%s is neither another module of library/ (ansible.legacy.NAME) nor of ansible-core"
                                % entry["module"])
        elif "link" in entry:
            if not str(entry["link"]).startswith("https://") or not entry.get("name") or not entry.get("description"):
                problems.append("%r: a link needs name, description and an https:// address" % entry)
        else:
            problems.append("%r: neither a module nor a link" % entry)
    # M(...) and O/RV(...#module:...) markup names a module by FQCN (ansible-doc links it)
    text = doc_blocks(module)["DOCUMENTATION"]
    named = re.findall(r"M\(([^)]*)\)", text) + re.findall(r"(?:O|RV)\(([\w.]+)#module:", text)
    problems += ["M()/O()/RV() names %r, not a known module's FQCN" % n for n in named if not known_module(n)]
    assert not problems, problems


def _return_entry(returns, path):
    """The RETURN entry at ``path`` (keys, nested ones under contains), or None."""
    entry = {"contains": returns}
    for key in path:
        entry = (entry.get("contains") or {}).get(key) if isinstance(entry, dict) else None
        if entry is None:
            return None
    return entry


def test_what_roles_and_playbooks_read_is_documented_with_a_sample():
    reads = workflow_reads()
    # the finder sees the plan, the drain and the lock the ladder reads; it must keep seeing them
    assert {("gpu_runbook_plan", ("plan", "hosts")), ("slurm_node", ("drained",)),
            ("gpu_runbook_ledger", ("lock", "id"))} <= reads, sorted(reads)
    problems = []
    for module, path in sorted(reads):
        if path[0] in COMMON_RETURNS:
            continue
        returns = yaml.safe_load(doc_blocks(module)["RETURN"])
        for depth in range(1, len(path) + 1):
            entry = _return_entry(returns, path[:depth])
            name = "%s: %s" % (module, ".".join(path[:depth]))
            if entry is None:
                parent = _return_entry(returns, path[:depth - 1]) if depth > 1 else None
                problems.append("%s is read but %s" % (name, "not in RETURN" if parent is None or parent.get("contains")
                                                       else "%s lists no contains" % ".".join(path[:depth - 1])))
                break
            if depth == len(path) and "sample" not in entry and not entry.get("contains"):
                problems.append("%s is read but has no sample" % name)
    assert not problems, problems
