"""The engine's shape, as tests: small files and functions, and an import graph that flows
one way -- probes -> parsers -> findings -> verdict -> cluster -> report -- with nothing
pointing back (a parser never reaches for the verdict, a probe never parses)."""

import ast
import os

import pytest

ENGINE = os.path.join(os.path.dirname(__file__), "..", "..", "module_utils", "gpu_runbook")

# Layer of every engine module (a package counts as one module). A module may import only
# modules of a LOWER layer, or its own package.
LAYERS = {
    # what everything speaks: the taxonomy, the finding, source names, text and time helpers
    "taxonomy": 0, "hostvars": 0, "sources": 0, "textio": 0, "timeutil": 0, "safewrite": 0, "validate": 0, "korean": 0, "findings": 1,
    # the only I/O on a host; which family a line is; the emitters' vocabularies (data and matching)
    "probes": 2, "linefamily": 2, "vocab": 2, "gpud_components": 2, "autopilot_checks": 2,
    # NVIDIA's Xid catalog (vocab/xid.py) with gpu-runbook's triage of each code
    "xid_catalog": 2.5,
    # the one rule for "a GPU reset cannot fix this" (taxonomy rungs + Xid catalog), for plan and module
    "reset_rule": 2.7,
    # a Slurm node's Gres line: its resource names and GPU count (slurm's node records, the inventory plugin)
    "slurm_gres": 2.8,
    # pure parsers, one per format family
    "nvsmi": 3, "kernlog": 3, "infiniband": 3, "joblog": 3, "bugreport": 3, "slurm": 3, "dcgm": 3, "gpud": 3, "autopilot": 3, "lspci": 3, "systemd_units": 3,
    "k8s_node": 3, "nccl_topo": 3, "pkglog": 3,
    # one job in squeue and what requeue / scancel said (reads slurm's hostlists); its output files' names
    "slurm_jobs": 3.2,
    # sinfo -R's rows as each node's record in scontrol's words (reads slurm's hostlists)
    "slurm_reasons": 3.2,
    # PBS's pbsnodes: a node's state and comment (its comment read by slurm's reason reader)
    "pbsnodes": 3.2,
    # the active tier: its judges read the parsers' facts; run.py runs the tools (probes' runner)
    "active": 3.3,
    # what a text holds, by content: its structured blocks (a parser's own opening, as dcgm's) and
    # the rest for the line readers
    "content": 3.5,
    "verdict": 4,
    # one host: dispatch, probe errors, capture loading
    "probe_findings": 5, "capture": 5, "confidence": 5, "analyze": 6,
    # the edge where Ansible's registered results meet the engine (their shape is read only there)
    "hostresult": 6.5,
    # a job's verdict from its logs' findings (cluster joins them with the hosts')
    "job_verdict": 6.8,
    "cluster": 7,
    # words and reports, then the one orchestration and the command line
    "i18n": 8, "plan": 8, "ledger": 8, "render": 9, "reports": 9, "diagnose": 10, "runbook": 10, "cli": 11, "report_step": 11, "plan_step": 11,
    "__init__": 0,
}
PARSERS = ("nvsmi", "kernlog", "infiniband", "joblog", "bugreport", "slurm", "dcgm", "gpud", "autopilot", "lspci", "systemd_units")


def _modules():
    for root, _dirs, files in os.walk(ENGINE):
        for name in sorted(files):
            if name.endswith(".py"):
                path = os.path.join(root, name)
                rel = os.path.relpath(path, ENGINE)
                yield rel, path


def _top(rel):
    """'nvsmi/rules.py' -> 'nvsmi'; 'analyze.py' -> 'analyze'."""
    return rel.split(os.sep)[0].replace(".py", "")


def _imports(rel, path):
    """Engine modules (top names) that ``rel`` imports, relative or absolute."""
    depth = rel.count(os.sep)  # 0 for a top-level module
    with open(path) as fh:
        tree = ast.parse(fh.read(), path)
    out = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom) and node.level:
            up = node.level - 1 - depth  # how far above the engine's root the import climbs
            if up > 0:
                continue
            if node.level - 1 < depth:  # inside its own package: '.x' from nvsmi/a.py
                out.add(_top(rel))
                continue
            if node.module:
                out.add(node.module.split(".")[0])
            else:
                out.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("gpu_runbook"):
            parts = node.module.split(".")
            out.add(parts[1] if len(parts) > 1 else "__init__")
    return out


def test_every_engine_module_has_a_layer():
    missing = sorted({_top(rel) for rel, _ in _modules()} - set(LAYERS))
    assert not missing, "give these modules a layer in LAYERS: %s" % missing


@pytest.mark.parametrize("rel,path", list(_modules()), ids=[rel for rel, _ in _modules()])
def test_imports_flow_one_way(rel, path):
    me = _top(rel)
    if me not in LAYERS:
        pytest.skip("no layer yet (see test_every_engine_module_has_a_layer)")
    back = sorted(m for m in _imports(rel, path) if m != me and m in LAYERS and LAYERS[m] >= LAYERS[me])
    assert not back, "%s (layer %s) imports %s: imports must flow to lower layers only" % (
        rel, LAYERS[me], ", ".join("%s (layer %s)" % (m, LAYERS[m]) for m in back))
    if me in PARSERS:
        assert "probes" not in _imports(rel, path), "parsers are pure: %s imports probes" % rel


def test_probes_import_no_parser():
    bad = {}
    for rel, path in _modules():
        if _top(rel) == "probes":
            hit = sorted(_imports(rel, path) & set(PARSERS + ("analyze", "capture", "probe_findings")))
            if hit:
                bad[rel] = hit
    assert not bad


def _generated(path):
    """A table a generator writes (vocab/*.py: 'generated by tests/tools/...; edit the generator')."""
    with open(path) as fh:
        return "edit the generator, never this file" in fh.readline()


def test_no_engine_file_over_500_lines():
    big = {}
    for rel, path in _modules():
        if _generated(path):
            continue  # data, one row a line: its size is the emitter's vocabulary
        with open(path) as fh:
            n = sum(1 for _ in fh)
        if n > 520:
            big[rel] = n
    assert not big, "split these along their seams: %s" % big


def test_no_engine_function_over_100_lines():
    long_ = {}
    for rel, path in _modules():
        with open(path) as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)):
                n = node.end_lineno - node.lineno + 1
                if n > 105:
                    long_["%s:%s" % (rel, node.name)] = n
    assert not long_, "break these up: %s" % long_


def test_one_way_to_never_raise():
    """Only findings.never_raise catches every exception in the parsers."""
    broad = []
    for rel, path in _modules():
        if _top(rel) not in PARSERS:
            continue
        with open(path) as fh:
            tree = ast.parse(fh.read(), path)
        for node in ast.walk(tree):
            if isinstance(node, ast.ExceptHandler):
                t = node.type
                names = [t] if not isinstance(t, ast.Tuple) else list(t.elts)
                if t is None or any(isinstance(n, ast.Name) and n.id in ("Exception", "BaseException") for n in names):
                    broad.append("%s:%d" % (rel, node.lineno))
    assert not broad, "use findings.never_raise instead of a broad except: %s" % broad
