"""The AWX side kept as code: the execution environment (execution-environment.yml, built by
ansible-builder) and the AWX objects (awx/assets.yml, the `awx import` format of awxkit).

No AWX server here: the objects are checked against what they must agree with in this
repository (the variables the playbooks read, the ladder's rungs, the playbook paths, the
set_stats the approval points at) and against awxkit's own model of an import (natural keys).
"""

import pathlib
import re
import shutil
import subprocess
import sys
import tomllib

import jinja2
import jinja2.nativetypes
import pytest
import yaml
from awxkit import yaml_file
from awxkit.api.pages import page
from awxkit.api.resources import resources
from jinja2 import meta

from gpu_runbook.plan.policy import normalize_policy
from gpu_runbook.taxonomy import RUNG_TABLE, RUNGS

# role templates hold regexes ('\\d'); jinja's lexer warns on them, which says nothing about AWX
pytestmark = pytest.mark.filterwarnings("ignore:invalid escape sequence:DeprecationWarning")

ROOT = pathlib.Path(__file__).resolve().parents[2]
ASSETS = ROOT / "awx" / "assets.yml"
EE_FILE = ROOT / "execution-environment.yml"
# AWX's own objects every install has; the assets refer to them without defining them
BUILTIN = [{"name": "Default", "type": "organization"}, {"name": "Machine", "kind": "ssh", "type": "credential_type"}]
SURVEY_TYPES = {"text", "textarea", "password", "integer", "float", "multiplechoice", "multiselect"}
CONDITIONS = {"when", "that", "failed_when", "changed_when", "until"}


def _assets():
    with open(ASSETS, encoding="utf-8") as f:  # awxkit's loader needs the file's name (its !include)
        return yaml.load(f, Loader=yaml_file.Loader)


def _template(assets, name):
    found = [t for t in assets["job_templates"] if t["name"] == name]
    assert len(found) == 1, "job template %r defined %d times" % (name, len(found))
    return found[0]


def _survey(template):
    return {q["variable"]: q for q in template["related"]["survey_spec"]["spec"]}


def _workflow(assets):
    (wf,) = assets["workflow_job_templates"]
    return wf, {n["identifier"]: n for n in wf["related"]["workflow_nodes"]}


# --- what the playbooks read ---------------------------------------------------------------

class _AnyName(dict):
    """Filters and tests by any name: only the variables of a template matter here."""

    def __contains__(self, key):
        return True

    def __getitem__(self, key):
        return lambda *args, **kwargs: None

    def get(self, key, default=None):
        return self[key]


_JINJA = jinja2.Environment(extensions=["jinja2.ext.do", "jinja2.ext.loopcontrols"])
_JINJA.filters = _AnyName()
_JINJA.tests = _AnyName()


class _TaggedLoader(yaml.SafeLoader):
    """Role files may carry Ansible tags (!unsafe, !vault); their values are not templates."""


_TaggedLoader.add_multi_constructor("!", lambda loader, suffix, node: None)


def _template_vars(value, key=None):
    """Every variable a templated value (or a bare condition) reads, walking lists and mappings."""
    if isinstance(value, dict):
        return set().union(*(_template_vars(v, k) for k, v in value.items())) if value else set()
    if isinstance(value, list):
        return set().union(*(_template_vars(v, key) for v in value)) if value else set()
    if not isinstance(value, str):
        return set()
    if key in CONDITIONS and "{{" not in value:
        value = "{{ %s }}" % value
    elif "{{" not in value and "{%" not in value:
        return set()
    return meta.find_undeclared_variables(_JINJA.parse(value))


def _values_under(doc, keys):
    """Every value under one of ``keys``, at any depth of a play, task or defaults file."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            if key in keys:
                yield value
            yield from _values_under(value, keys)
    elif isinstance(doc, list):
        for item in doc:
            yield from _values_under(item, keys)


def _role_refs(doc):
    """Names of the roles a play or task file runs (roles:, import_role, include_role)."""
    included = _values_under(doc, {"ansible.builtin.import_role", "ansible.builtin.include_role"})
    return {v["name"] for v in included if isinstance(v, dict)} | \
        {v for v in _values_under(doc, {"role"}) if isinstance(v, str)}


def _task_file_refs(doc):
    return {v for v in _values_under(doc, {"ansible.builtin.include_tasks", "ansible.builtin.import_tasks"})
            if isinstance(v, str)}


def _set_stats_keys(doc):
    return [key for v in _values_under(doc, {"ansible.builtin.set_stats"}) for key in (v or {}).get("data", {})]


def _load(path):
    return yaml.load(path.read_text(encoding="utf-8"), Loader=_TaggedLoader)


def variables_read(playbook):
    """The variables a playbook reads: its plays, the task files it includes, and every file
    of every role it runs (and the roles those run)."""
    path = ROOT / "playbooks" / playbook
    docs = [_load(path)]
    docs += [_load(path.parent / ref) for ref in _task_file_refs(docs[0])]
    roles, todo = set(), set().union(*(_role_refs(d) for d in docs))
    while todo:
        role = todo.pop()
        roles.add(role)
        files = sorted((ROOT / "roles" / role).glob("*/*.yml"))
        assert files, "role %s has no files" % role
        for f in files:
            doc = _load(f)
            docs.append(doc)
            todo |= _role_refs(doc) - roles
    return set().union(*(_template_vars(d) for d in docs))


# --- the execution environment --------------------------------------------------------------

def _requirement_names(lines):
    return {re.split(r"[<>=!~ \[;]", line.strip(), maxsplit=1)[0].lower(): line.strip()
            for line in lines if line.strip() and not line.lstrip().startswith("#")}


def test_ee_installs_what_pyproject_declares():
    ee = yaml.safe_load(EE_FILE.read_text(encoding="utf-8"))
    deps = ee["dependencies"]
    assert ee["version"] == 3
    declared = _requirement_names(tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]["dependencies"])
    assert deps["ansible_core"]["package_pip"] == declared.pop("ansible-core")
    assert deps["ansible_runner"]["package_pip"] == declared.pop("ansible-runner")
    python = _requirement_names((ROOT / deps["python"]).read_text(encoding="utf-8").splitlines())
    assert python == declared, "requirements.txt and pyproject.toml's dependencies differ"
    assert (ROOT / deps["system"]).is_file()


def test_ee_needs_no_collection_the_playbooks_do_not_list():
    """The playbooks and roles use ansible.builtin only; any other collection must be in the
    EE's galaxy requirements (else AWX jobs fail with 'couldn't resolve module')."""
    ee = yaml.safe_load(EE_FILE.read_text(encoding="utf-8"))
    galaxy = ee["dependencies"].get("galaxy") or {}
    if isinstance(galaxy, str):
        galaxy = yaml.safe_load((ROOT / galaxy).read_text(encoding="utf-8"))
    listed = {"ansible.builtin"} | {c["name"] if isinstance(c, dict) else c for c in galaxy.get("collections", [])}
    fqcn = re.compile(r"^\s*-?\s*([a-z0-9_]+\.[a-z0-9_]+)\.[a-z0-9_]+:", re.M)
    used = {}
    for f in sorted(ROOT.glob("roles/*/*/*.yml")) + sorted(ROOT.glob("playbooks/**/*.yml")):
        for collection in fqcn.findall(f.read_text(encoding="utf-8")):
            used.setdefault(collection, f.relative_to(ROOT))
    assert "ansible.builtin" in used
    assert {c: str(f) for c, f in used.items() if c not in listed} == {}


def test_ansible_builder_creates_the_build_context_offline(tmp_path):
    """`ansible-builder create` (no network: it only writes the context) accepts the file, and
    the Containerfile starts from the base image and installs our requirements and bindep."""
    builder = shutil.which("ansible-builder", path=str(pathlib.Path(sys.executable).parent))
    assert builder, "ansible-builder is a test dependency (pyproject.toml)"
    cmd = [builder, "create", "-f", str(EE_FILE), "--context", str(tmp_path / "ctx"),
           "--output-filename", "Containerfile"]
    # in a network namespace of its own when this machine allows one: proof it fetched nothing
    unshare = shutil.which("unshare")
    offline = bool(unshare) and subprocess.run([unshare, "--net", "true"], capture_output=True).returncode == 0
    done = subprocess.run(([unshare, "--net"] if offline else []) + cmd, cwd=ROOT, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    ee = yaml.safe_load(EE_FILE.read_text(encoding="utf-8"))
    containerfile = (tmp_path / "ctx" / "Containerfile").read_text()
    assert 'ARG EE_BASE_IMAGE="%s"' % ee["images"]["base_image"]["name"] in containerfile
    assert 'ARG PYCMD="%s"' % ee["dependencies"]["python_interpreter"]["python_path"] in containerfile
    refs = re.search(r'ARG ANSIBLE_INSTALL_REFS="([^"]*)"', containerfile).group(1).split()
    assert refs == [ee["dependencies"]["ansible_core"]["package_pip"], ee["dependencies"]["ansible_runner"]["package_pip"]]
    assert "--user-pip=requirements.txt" in containerfile and "--user-bindep=bindep.txt" in containerfile
    build = tmp_path / "ctx" / "_build"
    assert (build / "requirements.txt").read_text() == (ROOT / "requirements.txt").read_text()
    assert (build / "bindep.txt").read_text() == (ROOT / "bindep.txt").read_text()


# --- the AWX objects ------------------------------------------------------------------------

def _natural_keys(node, path="assets"):
    """(path, natural key) for every object and every reference in the assets."""
    if isinstance(node, dict):
        if "type" in node:
            yield path, node
        for key, value in node.items():
            if key != "survey_spec":  # its questions have a type too, but are no objects
                yield from _natural_keys(value, "%s.%s" % (path, key))
    elif isinstance(node, list):
        for i, value in enumerate(node):
            yield from _natural_keys(value, "%s[%d]" % (path, i))


def test_every_natural_key_has_the_fields_awxkit_matches_on():
    """awx import finds (or creates) each object by its natural key: the fields must be
    exactly those of awxkit's page class for that type, or the import duplicates objects."""
    checked = 0
    for where, key in _natural_keys(_assets()):
        endpoint = getattr(resources, key["type"], None)
        assert endpoint is not None, "%s: unknown type %r" % (where, key["type"])
        cls = page.get_registered_page(endpoint.replace(r"\d+", "1"))
        assert set(key) - {"type"} == set(cls.NATURAL_KEY), "%s: %s needs %s" % (where, key, cls.NATURAL_KEY)
        checked += 1
    assert checked > 20


def test_every_reference_names_an_object_the_assets_define():
    assets = _assets()
    defined = [dict(o["natural_key"]) for kind in assets.values() for o in kind]
    for kind in ("job_templates", "workflow_job_templates"):
        for o in assets[kind]:
            defined += [n["natural_key"] for n in o["related"].get("workflow_nodes", [])]
            defined += [s["natural_key"] for s in o["related"].get("schedules", [])]
    for where, key in _natural_keys(assets):
        if where.endswith("natural_key"):
            continue
        assert key in defined or key in BUILTIN, "%s refers to %s, which is not defined" % (where, key)


@pytest.mark.parametrize("name, playbook", [("gpu-runbook diagnose", "diagnose.yml"),
                                            ("gpu-runbook remediate", "remediate.yml")])
def test_job_template_runs_the_playbook_and_asks_only_for_what_it_reads(name, playbook):
    assets = _assets()
    jt = _template(assets, name)
    assert jt["playbook"] == "playbooks/" + playbook and (ROOT / jt["playbook"]).is_file()
    assert jt["use_fact_cache"] is False
    assert jt["ask_limit_on_launch"] is True
    read = variables_read(playbook)
    survey = _survey(jt)
    assert set(survey) <= read, "survey asks for variables %s nobody reads" % sorted(set(survey) - read)
    # the template's own extra vars: read by the playbook, or by another of its extra vars
    extra = yaml.safe_load(jt["extra_vars"])
    helpers = set().union(*(_template_vars(v) for v in extra.values())) & set(extra)
    assert set(extra) - helpers <= read, sorted(set(extra) - helpers - read)
    for var, q in survey.items():
        assert q["type"] in SURVEY_TYPES, var
        if q["required"]:
            assert q.get("default") not in (None, ""), "%s: a schedule cannot launch a required question without a default" % var
        if q["type"] in ("multiplechoice", "multiselect"):
            defaults = [d for d in str(q["default"]).split("\n") if d]
            assert set(defaults) <= set(q["choices"]), var
        if q["type"] == "integer":
            assert q["min"] <= q["default"] <= q["max"], var


def test_remediate_acts_only_when_asked_and_never_twice_at_once():
    jt = _template(_assets(), "gpu-runbook remediate")
    assert "confirm" not in yaml.safe_load(jt["extra_vars"])
    survey = _survey(jt)
    assert survey["confirm"]["default"] == "no"
    assert survey["max_drain"]["type"] == "integer" and survey["max_drain"]["min"] == 1
    # the lock and the caps hold across one job only: never sliced, never simultaneous
    assert jt["job_slice_count"] == 1 and jt["allow_simultaneous"] is False
    assert not jt["related"].get("schedules")
    # the ledger, the drain records, the RMA bundles and the job's environment go to one persistent
    # place, not the job's private dir: one variable, the others follow it
    extra = yaml.safe_load(jt["extra_vars"])
    for var in ("gpu_runbook_state_dir", "plan_dir"):
        assert var in extra, var
    for var in ("gpu_runbook_drain_dir", "gpu_runbook_job_env_dir", "gpu_runbook_rma_dir"):
        assert var not in extra, var


def test_every_controller_side_directory_follows_the_one_state_dir():
    """A role's controller-side directory defaults to a place under gpu_runbook_state_dir, so one
    variable (the AWX template's) moves all of them; none names a path of its own."""
    dirs = {}
    for f in sorted(ROOT.glob("roles/*/defaults/main.yml")):
        for k, v in (yaml.safe_load(f.read_text()) or {}).items():
            if re.search(r"_(state|drain|rma|ledger|job_env)_dir$|_nccl_env_dir$|_timeout_dir$", k):
                dirs[k] = str(v)
    assert len(dirs) >= 10, dirs
    for k, v in dirs.items():
        assert "gpu_runbook_state_dir" in v and v.count("~/.gpu-runbook/") == 1, (k, v)


def test_rung_choices_are_the_ladders_rungs():
    """Every node rung of the taxonomy and every job rung remediate.yml climbs, in the
    ladder's order; the plan's policy accepts each."""
    remediate = (ROOT / "playbooks" / "remediate.yml").read_text(encoding="utf-8")
    tags = set(re.findall(r"tags: \[(\w+)\]", remediate)) - {"always"}
    ladder = [r for r in RUNGS if RUNG_TABLE[r]["scope"] in ("gpu", "host") or r in tags]
    choices = _survey(_template(_assets(), "gpu-runbook remediate"))["rungs"]["choices"]
    assert choices == ladder
    assert tags & set(RUNGS) <= set(choices)
    assert normalize_policy({"allowed_rungs": choices, "allow_reboot": True})["allowed_rungs"] == choices


def test_only_diagnose_is_scheduled_and_hourly():
    assets = _assets()
    schedules = [(jt["name"], s) for jt in assets["job_templates"] for s in jt["related"].get("schedules", [])]
    schedules += [(wf["name"], s) for wf in assets["workflow_job_templates"] for s in wf["related"].get("schedules", [])]
    assert [name for name, _ in schedules] == ["gpu-runbook diagnose"]
    _, schedule = schedules[0]
    dtstart, rrule = schedule["rrule"].split(" ")
    assert re.fullmatch(r"DTSTART;TZID=[\w/]+:\d{8}T\d{6}", dtstart)
    parts = dict(p.split("=") for p in rrule.removeprefix("RRULE:").split(";"))
    assert parts.pop("FREQ") == "HOURLY" and parts.pop("INTERVAL", "1") == "1"
    assert parts == {}, "no BY*/COUNT/UNTIL narrowing the hourly run: %s" % parts
    # a schedule may only answer the template's own survey questions, with valid answers
    survey = _survey(_template(assets, "gpu-runbook diagnose"))
    for var, value in schedule["extra_data"].items():
        assert var in survey and value in survey[var]["choices"], var


def _edges(nodes):
    """(parent, child, kind) for every edge of the workflow graph."""
    return [(ident, ref["identifier"], kind.removesuffix("_nodes"))
            for ident, node in nodes.items()
            for kind in ("success_nodes", "failure_nodes", "always_nodes")
            for ref in node["related"].get(kind, [])]


def test_workflow_diagnoses_plans_then_acts_only_after_approval():
    wf, nodes = _workflow(_assets())
    edges = _edges(nodes)
    assert all(child in nodes for _, child, _ in edges)
    jt_of = {i: (n.get("unified_job_template") or {}).get("name") for i, n in nodes.items()}
    approvals = {i for i, n in nodes.items() if "create_approval_template" in n["related"]}
    assert all(jt_of[i] is None for i in approvals)
    roots = set(nodes) - {child for _, child, _ in edges}
    assert [jt_of[r] for r in roots] == ["gpu-runbook diagnose"]
    acting = {i for i, n in nodes.items() if jt_of[i] == "gpu-runbook remediate"
              and (n.get("extra_data") or {}).get("confirm") == "yes"}
    assert acting, "no node acts"
    for node in acting:
        parents = [(p, kind) for p, child, kind in edges if child == node]
        assert parents and all(p in approvals and kind == "success" for p, kind in parents), parents
    # before the approval: a plan-only remediate run (it publishes the plan the approver reads)
    for approval in approvals:
        parents = [p for p, child, kind in edges if child == approval and kind == "success"]
        assert parents and all(jt_of[p] == "gpu-runbook remediate"
                               and nodes[p]["extra_data"]["confirm"] == "no" for p in parents)
    # the order, start to end, along success edges only
    path, here = [], next(iter(roots))
    while here:
        path.append("approval" if here in approvals else jt_of[here])
        following = [child for parent, child, kind in edges if parent == here and kind == "success"]
        assert len(following) <= 1
        here = following[0] if following else None
    assert path == ["gpu-runbook diagnose", "gpu-runbook remediate", "approval", "gpu-runbook remediate"]
    # the workflow's own survey answers go to every node: each is read by some node's playbook
    playbooks = {_template(_assets(), name)["playbook"].removeprefix("playbooks/") for name in set(jt_of.values()) - {None}}
    read = set().union(*(variables_read(p) for p in playbooks))
    asked = {q["variable"] for q in wf["related"]["survey_spec"]["spec"]}
    assert asked <= read, sorted(asked - read)
    # every value a node passes must be a survey answer the template takes
    for ident, node in nodes.items():
        if jt_of[ident]:
            survey = _survey(_template(_assets(), jt_of[ident]))
            for var, value in (node.get("extra_data") or {}).items():
                assert var in survey and value in survey[var]["choices"], (ident, var)
    assert wf["allow_simultaneous"] is False


def test_approval_says_where_the_plan_is():
    """The approval cannot show artifacts itself: its description names the plan node, the
    set_stats key the plan publishes and the plan files."""
    _, nodes = _workflow(_assets())
    (approval,) = [n["related"]["create_approval_template"] for n in nodes.values()
                   if "create_approval_template" in n["related"]]
    stats = [key for f in sorted((ROOT / "roles" / "remediation_plan" / "tasks").glob("*.yml"))
             for key in _set_stats_keys(_load(f))]
    assert stats
    for key in stats:
        assert key in approval["description"], key
    assert "plan.md" in approval["description"] and "plan.json" in approval["description"]
    assert approval["timeout"] > 0


def test_the_act_node_acts_only_on_the_hosts_the_approver_saw():
    """The plan node publishes gpu_runbook_plan_act (set_stats); AWX hands it to the later nodes as
    an extra var; the remediate template turns it into approved_hosts, which the plan role reads
    as its approval. Rendered as AWX would: the act node gets the list, the plan node (no such
    artifact yet) and a launch outside a workflow get none, a workflow acting without it nothing."""
    assets = _assets()
    wf, nodes = _workflow(assets)
    edges = _edges(nodes)
    (act,) = [i for i, n in nodes.items() if (n.get("extra_data") or {}).get("confirm") == "yes"]
    (approval,) = [p for p, child, kind in edges if child == act]
    (plan,) = [p for p, child, kind in edges if child == approval]
    assert nodes[plan]["unified_job_template"]["name"] == nodes[act]["unified_job_template"]["name"]
    jt = _template(assets, nodes[act]["unified_job_template"]["name"])
    # the key is what the plan role publishes, and no node before the plan publishes it
    published = [key for f in sorted((ROOT / "roles" / "remediation_plan" / "tasks").glob("*.yml"))
                 for key in _set_stats_keys(_load(f))]
    assert "gpu_runbook_plan_act" in published
    before = [key for f in sorted((ROOT / "roles" / "diagnosis_report" / "tasks").glob("*.yml"))
              for key in _set_stats_keys(_load(f))]
    assert before and "gpu_runbook_plan_act" not in before
    # the template's extra var reads it; the role's knob reads the extra var
    extra = yaml.safe_load(jt["extra_vars"])
    assert "gpu_runbook_plan_act" in _template_vars(extra["approved_hosts"])
    knobs = yaml.safe_load((ROOT / "roles" / "remediation_plan" / "defaults" / "main.yml").read_text(encoding="utf-8"))
    assert "approved_hosts" in _template_vars(knobs["remediation_plan_approved_hosts"])
    assert "remediation_plan_approved_hosts" in variables_read("remediate.yml")
    env = jinja2.nativetypes.NativeEnvironment()
    env.filters["bool"] = lambda v: str(v).lower() in ("yes", "true", "1", "on")
    render = lambda **v: env.from_string(extra["approved_hosts"]).render(**v)  # noqa: E731
    assert render(gpu_runbook_plan_act=["gpu-r3-n03"], awx_workflow_job_id=7, confirm="yes") == ["gpu-r3-n03"]
    assert render(gpu_runbook_plan_act=[], awx_workflow_job_id=7, confirm="yes") == []
    assert render(awx_workflow_job_id=7, confirm="no") is None      # the plan node: plans everything
    assert render(awx_workflow_job_id=7, confirm="yes") == []       # acting in a workflow without a plan: nothing
    assert render(confirm="yes") is None                            # on its own, as from a terminal
