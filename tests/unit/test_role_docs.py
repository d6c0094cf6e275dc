"""Every role documents its settings the way ansible-doc, ansible-lint and a reader use them (the
dev-sec / geerlingguy style): meta/argument_specs.yml lists exactly the variables of
defaults/main.yml, each with a type and a description, and the role's own defaults pass its own
argument spec (Ansible's validator, as at the role's start); the README has a variables table
naming every default with its default, and sections saying what the role changes, its risks and
an example play that uses it."""

import glob
import json
import os
import re
import subprocess

import pytest
import yaml
from ansible.module_utils.common.arg_spec import ArgumentSpecValidator
from ansible.module_utils.parsing.convert_bool import boolean
from jinja2 import ChainableUndefined
from jinja2.nativetypes import NativeEnvironment

from tests.conftest import BIN, REPO, ansible_env, own_stderr

ROLES = sorted(os.path.basename(os.path.dirname(p)) for p in glob.glob(os.path.join(REPO, "roles", "*", "tasks")))
SECTIONS = ("Variables", "What it changes", "Risks", "Example")


def _yaml(role, *parts):
    with open(os.path.join(REPO, "roles", role, *parts)) as fh:
        return yaml.safe_load(fh) or {}


def defaults(role):
    return _yaml(role, "defaults", "main.yml")


def entry_points(role):
    return _yaml(role, "meta", "argument_specs.yml").get("argument_specs") or {}


def settings_entry_point(role):
    """The entry point that documents the role's settings: main, else the role's only one."""
    points = entry_points(role)
    if "main" in points:
        return "main"
    assert len(points) == 1, "%s: no main entry point and several others: %s" % (role, sorted(points))
    return next(iter(points))


def readme(role):
    with open(os.path.join(REPO, "roles", role, "README.md")) as fh:
        return fh.read()


def sections(text):
    """{level-2 heading: its text} of a Markdown file (fenced code is not searched for headings)."""
    out, name, fenced = {}, None, False
    for line in text.splitlines():
        if line.startswith("```"):
            fenced = not fenced
        if not fenced and line.startswith("## "):
            name = line[3:].strip()
            out[name] = ""
        elif name is not None:
            out[name] += line + "\n"
    return out


def section(found, name):
    """The text of the first section whose heading starts with ``name`` ('' when there is none)."""
    return next((found[h] for h in found if h.startswith(name)), "")


def _templated(value):
    if isinstance(value, str):
        return "{{" in value
    if isinstance(value, dict):
        return any(_templated(v) for v in value.values())
    if isinstance(value, list):
        return any(_templated(v) for v in value)
    return False


def _first_variable(value):
    """The first variable a templated default reads (where its value comes from)."""
    text = json.dumps(value)
    m = re.search(r"\{\{\s*[(\[]*\s*([A-Za-z_]\w*)", text)
    return m.group(1) if m else None


_ENV = NativeEnvironment(undefined=ChainableUndefined)
_ENV.filters["bool"] = boolean


def rendered(value):
    """A default as the role sees it when nothing else is set: templates rendered (native types),
    every variable they read undefined, Ansible's bool filter."""
    if isinstance(value, dict):
        return {k: rendered(v) for k, v in value.items()}
    if isinstance(value, list):
        return [rendered(v) for v in value]
    if isinstance(value, str) and "{{" in value:
        out = _ENV.from_string(value.strip()).render(groups={}, inventory_hostname="gpu-r3-n01")
        return None if isinstance(out, ChainableUndefined) else out
    return value


def spellings(value):
    """How a README may write a plain default: 30, true, /sys, "", [], [a, b], {}."""
    out = {json.dumps(value), json.dumps(value).replace(" ", "")}
    if isinstance(value, bool):
        out.add(str(value).lower())
    elif isinstance(value, (int, float)) or (isinstance(value, str) and value):
        out.add(str(value))
    elif value is None:
        out.add("null")
    elif isinstance(value, list):
        out.add("[%s]" % ",".join(str(v) for v in value))
    return out


def variables_table(text):
    """{variable: default cell} of the README's Variables table (one variable per row)."""
    rows = {}
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) >= 3 and re.fullmatch(r"`\w+`", cells[0]):
            rows[cells[0].strip("`")] = cells[1]
    return rows


def test_ansible_doc_renders_every_role():
    # what `ansible-doc -t role` (and AWX's role view) shows is read from argument_specs
    proc = subprocess.run([os.path.join(BIN, "ansible-doc"), "-t", "role", "-r", os.path.join(REPO, "roles"),
                           "--json"] + ROLES, cwd=REPO, env=ansible_env(), capture_output=True, text=True, timeout=120)
    assert proc.returncode == 0 and not own_stderr(proc.stderr), proc.stderr[-2000:]
    shown = json.loads(proc.stdout)
    assert {role: sorted(doc["entry_points"]) for role, doc in shown.items()} == \
        {role: sorted(entry_points(role)) for role in ROLES}


def test_every_role_is_checked():
    # read from roles/, not written down: a new role is held to the same rules
    assert len(ROLES) >= 10 and {"gpu_health", "rung_verify"} <= set(ROLES)


@pytest.mark.parametrize("role", ROLES)
def test_argument_specs_list_exactly_the_defaults(role):
    points = entry_points(role)
    main = settings_entry_point(role)
    names = set(defaults(role))
    problems = []
    for point, spec in points.items():
        options = spec.get("options") or {}
        if not spec.get("short_description"):
            problems.append("%s: no short_description" % point)
        stale = sorted(set(options) - names)
        if stale:
            problems.append("%s: options not in defaults/main.yml (stale): %s" % (point, stale))
        for name, option in options.items():
            missing = [k for k in ("type", "description") if not option.get(k)]
            if missing:
                problems.append("%s: %s has no %s" % (point, name, ", ".join(missing)))
    undocumented = sorted(names - set(points[main].get("options") or {}))
    if undocumented:
        problems.append("%s: defaults not in argument_specs: %s" % (main, undocumented))
    assert not problems, problems


@pytest.mark.parametrize("role", ROLES)
def test_argument_spec_defaults_are_the_role_defaults(role):
    # the default argument_specs shows (ansible-doc -t role) is what the role really uses
    # when nothing is set, and that value passes the spec Ansible checks at the role's start
    options = entry_points(role)[settings_entry_point(role)].get("options") or {}
    values = {name: rendered(value) for name, value in defaults(role).items()}
    problems = ["%s: argument_specs default %r, defaults/main.yml gives %r" % (name, options[name]["default"], value)
                for name, value in values.items() if name in options and "default" in options[name]
                and options[name]["default"] != value and not (value is None and options[name]["default"] in ("", []))]
    spec = {name: {k: v for k, v in option.items() if k in ("type", "elements", "choices", "required")}
            for name, option in options.items()}
    result = ArgumentSpecValidator(spec).validate({k: v for k, v in values.items() if v is not None})
    problems += ["validation: %s" % msg for msg in result.error_messages]
    assert not problems, problems


@pytest.mark.parametrize("role", ROLES)
def test_readme_has_variables_changes_risks_and_an_example(role):
    found = sections(readme(role))
    missing = [name for name in SECTIONS if not any(h.startswith(name) and found[h].strip() for h in found)]
    assert not missing, "README of %s lacks sections %s (has %s)" % (role, missing, sorted(found))
    example = section(found, "Example")
    plays = [yaml.safe_load(block) for block in re.findall(r"```ya?ml\n(.*?)```", example, re.S)]
    # an example play: YAML that uses the role (roles:, include_role or import_role)
    assert any(role in json.dumps(play) for play in plays), "%s: the Example has no YAML using the role" % role


@pytest.mark.parametrize("role", ROLES)
def test_readme_names_every_default_with_its_default(role):
    found = sections(readme(role))
    table = variables_table(section(found, "Variables"))
    problems = []
    for name, value in defaults(role).items():
        cell = table.get(name)
        if cell is None:
            problems.append("%s: not in the Variables table" % name)
            continue
        plain = cell.replace("`", "").replace(" ", "")
        if _templated(value):
            # where the value comes from: the variable (extra var, group var) the template reads first
            source = _first_variable(value)
            if source and source not in cell:
                problems.append("%s: default cell %r does not name %s, where its value comes from"
                                % (name, cell, source))
        elif not any(re.search(r"(?<![\w.])%s(?![\w.])" % re.escape(s.replace(" ", "")), plain)
                     for s in spellings(value)):
            problems.append("%s: default cell %r does not show the default %r" % (name, cell, value))
    assert not problems, problems
