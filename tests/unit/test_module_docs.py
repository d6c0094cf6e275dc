"""Every module in library/ documents itself the way ansible-doc and AWX read it: the real
ansible-doc renders it (text and --json) without a warning, its DOCUMENTATION, EXAMPLES and
RETURN are YAML, every RETURN key says what it is, when it is returned and its type, and the
dicts that AWX receives through set_stats list what they contain."""

import ast
import glob
import json
import os
import re
import subprocess

import pytest
import yaml

from tests.conftest import BIN, REPO, ansible_env

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


def awx_read_returns():
    """{(module, RETURN key)} that reach AWX: a set_stats value reading REGISTERED.KEY where
    REGISTERED is a module of library/'s registered result. Found in the roles and playbooks,
    so a new set_stats is held to the same rule."""
    files = glob.glob(os.path.join(REPO, "roles", "*", "tasks", "*.yml")) + \
        glob.glob(os.path.join(REPO, "playbooks", "*.yml")) + glob.glob(os.path.join(REPO, "playbooks", "tasks", "*.yml"))
    registered, stats = {}, []
    for path in files:
        with open(path) as fh:
            for task in _tasks(yaml.safe_load(fh)):
                module = next((k.split(".")[-1] for k in task if k.split(".")[-1] in MODULES), None)
                if module and task.get("register"):
                    registered[task["register"]] = module
                data = (task.get("ansible.builtin.set_stats") or task.get("set_stats") or {}).get("data") or {}
                stats.extend(str(v) for v in data.values())
    out = set()
    for expr in stats:
        for var, key in re.findall(r"\b(\w+)\.(\w+)", expr):
            if var in registered:
                out.add((registered[var], key))
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
    assert not problems, problems


@pytest.mark.parametrize("module", MODULES)
def test_ansible_doc_renders_every_return_key(module):
    proc = ansible_doc(module)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "WARNING" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr[-2000:]
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
    proc = ansible_doc("--json", module)
    assert proc.returncode == 0, proc.stderr[-2000:]
    assert "WARNING" not in proc.stderr and "ERROR" not in proc.stderr, proc.stderr[-2000:]
    doc = json.loads(proc.stdout)[module]
    returns = yaml.safe_load(doc_blocks(module)["RETURN"])
    assert doc["doc"]["module"] == module
    assert doc["examples"].strip()

    def keys(tree, path=()):
        return {path + (k,) for k in tree} | {p for k, v in tree.items() if isinstance(v, dict) and v.get("contains")
                                             for p in keys(v["contains"], path + (k,))}
    assert keys(doc["return"]) == keys(returns)
