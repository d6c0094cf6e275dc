"""Every regular expression of the engine runs in time linear in its input (issue 11).

The patterns are found, not listed: every compiled pattern reachable from an engine module
(module level, in tuples/dicts, class attributes) and every literal pattern passed to a
``re.*`` call in the engine's source. For each, adversarial texts repeat prefixes of a string
the pattern matches (and runs of single characters): the classic way a backtracking engine
goes quadratic ('DataLoader worker (pid(' x N, '<!DOCTYPE[' x N). Each is timed with
``finditer`` (at least the work search, match or findall does) at n and 4n characters: a
linear pattern takes about 4x as long, a quadratic one 16x.
"""

import ast
import importlib
import os
import pkgutil
import re
import subprocess
import sys
import time

import pytest

import gpu_runbook
from gpu_runbook.joblog import parse_job_logs
from gpu_runbook.joblog.patterns import MAX_LINE as JOB_MAX_LINE
from gpu_runbook.nvsmi import parse_nvidia_smi

try:
    import re._constants as sre
    import re._parser as sre_parse
except ImportError:  # Python < 3.11
    import sre_constants as sre
    import sre_parse

SMALL = 8000          # the ratio check: n and 4n characters
MAX_LEN = JOB_MAX_LINE  # the longest line any parser is handed (job logs: 1 MiB)
_CATEGORY_CHAR = {sre.CATEGORY_DIGIT: "1", sre.CATEGORY_SPACE: " ", sre.CATEGORY_WORD: "a"}


def _engine_modules():
    for info in pkgutil.walk_packages(gpu_runbook.__path__, "gpu_runbook."):
        yield importlib.import_module(info.name)


def _compiled(owner, name, obj, depth=0):
    if isinstance(obj, re.Pattern):
        yield "%s.%s" % (owner, name), obj
    elif isinstance(obj, (list, tuple)) and depth < 2:
        for i, item in enumerate(obj):
            yield from _compiled(owner, "%s[%d]" % (name, i), item, depth + 1)
    elif isinstance(obj, dict) and depth < 2:
        for key, item in obj.items():
            yield from _compiled(owner, "%s[%r]" % (name, key), item, depth + 1)


_SEARCHING = ("search", "findall", "finditer", "sub", "subn", "split")


def _engine_source():
    root = gpu_runbook.__path__[0]
    texts = []
    for base, _dirs, files in os.walk(root):
        for f in files:
            if f.endswith(".py"):
                with open(os.path.join(base, f), encoding="utf-8") as fh:
                    texts.append(fh.read())
    return "\n".join(texts)


def anchored_only(name, source):
    """True when the engine only ever calls ``.match``/``.fullmatch`` on this pattern: it is tried
    at one position, so that is how it is timed. Inline calls carry their method in their name."""
    if ":" in name.rsplit(".", 1)[-1]:
        return name.endswith((":match", ":fullmatch"))
    attr = name.rsplit(".", 1)[-1]
    if not re.fullmatch(r"\w+", attr):  # in a table (DETECTORS[2][1]): searched
        return False
    calls = set(re.findall(r"\b%s\.(\w+)\(" % re.escape(attr), source))
    return bool(calls) and calls <= {"match", "fullmatch"}


def _literal_patterns(mod):
    """re.search(r'...', ...) and friends written inline in a module's functions."""
    path = getattr(mod, "__file__", None)
    if not path or not path.endswith(".py"):
        return
    with open(path, encoding="utf-8") as fh:
        tree = ast.parse(fh.read())
    for node in ast.walk(tree):
        if (isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
                and isinstance(node.func.value, ast.Name) and node.func.value.id == "re"
                and node.func.attr in ("compile", "search", "match", "fullmatch", "findall", "finditer",
                                       "sub", "subn", "split")
                and node.args and isinstance(node.args[0], ast.Constant) and isinstance(node.args[0].value, str)):
            yield "%s:%d:%s" % (mod.__name__, node.lineno, node.func.attr), re.compile(node.args[0].value)


def all_patterns():
    found = {}
    for mod in _engine_modules():
        for key, value in list(vars(mod).items()):
            items = list(_compiled(mod.__name__, key, value))
            if isinstance(value, type) and value.__module__ == mod.__name__:
                for attr, item in vars(value).items():
                    items.extend(_compiled(mod.__name__, "%s.%s" % (key, attr), item, 1))
            for name, rx in items:
                found.setdefault((rx.pattern, rx.flags), (name, rx))
        for name, rx in _literal_patterns(mod):  # after the named ones: a named pattern keeps its name
            found.setdefault((rx.pattern, rx.flags), (name, rx))
    return sorted(found.values(), key=lambda item: item[0])


def _sample(rx, pick):
    """A string the pattern (roughly) matches; ``pick`` chooses among alternatives."""
    out = []

    def walk(items):
        for op, av in items:
            if op is sre.LITERAL:
                out.append(chr(av))
            elif op is sre.NOT_LITERAL:
                out.append("y" if av == ord("x") else "x")
            elif op is sre.IN:
                out.append(_class_char(av))
            elif op is sre.ANY:
                out.append("a")
            elif op in (sre.MAX_REPEAT, sre.MIN_REPEAT, getattr(sre, "POSSESSIVE_REPEAT", None)):
                if av[1]:
                    for _ in range(max(av[0], 1)):
                        walk(av[2])
            elif op is sre.SUBPATTERN:
                walk(av[-1])
            elif op is sre.BRANCH:
                walk(av[1][pick % len(av[1])])
            elif op is getattr(sre, "ATOMIC_GROUP", None):
                walk(av)
            elif op is sre.CATEGORY:
                out.append(_CATEGORY_CHAR.get(av, "a"))
    walk(sre_parse.parse(rx.pattern, rx.flags))
    return "".join(out)


def _class_char(items):
    if items and items[0][0] is sre.NEGATE:
        banned = {chr(a) for o, a in items if o is sre.LITERAL}
        return next(c for c in "xyz=" if c not in banned)
    for op, av in items:
        if op is sre.LITERAL:
            return chr(av)
        if op is sre.RANGE:
            return chr(av[0])
        if op is sre.CATEGORY:
            return _CATEGORY_CHAR.get(av, "a")
    return "a"


def fragments(rx):
    """What an attacker repeats: each prefix and short slice of the pattern's samples, single characters."""
    frags = {" ", "1", ":", "a", "[", "<", "(", "=", "-", ". ", "1:", "\t", "0x", "\x1b]"}
    if rx.flags & re.MULTILINE:  # run on whole texts: `^\s*` at every line start can span the next lines
        frags.update({"\n", " \n", "\r\n", "\n\t"})
    for sample in {_sample(rx, pick) for pick in range(6)}:
        frags.update(sample[:i] for i in range(1, min(len(sample), 80) + 1))
        frags.update(sample[i:i + 6] for i in range(0, len(sample), 3))
    return sorted(f for f in frags if f)


def repeat(frag, n):
    return (frag * (n // len(frag) + 1))[:n]


def cost(rx, text, tries=1, anchored=False):
    """Seconds for the engine's kind of call: one match at the start, or a scan of every start
    (finditer: at least the work of search, findall and sub)."""
    best = float("inf")
    for _ in range(tries):
        t0 = time.perf_counter()
        if anchored:
            rx.match(text)
        else:
            for _m in rx.finditer(text):
                pass
        best = min(best, time.perf_counter() - t0)
    return best


PATTERNS = all_patterns()
ANCHORED = {name for name, _rx in PATTERNS if anchored_only(name, _engine_source())}
# patterns the engine only ever runs on a slice of bounded length (progress.py: 220 characters
# before a tqdm bar), so that is their longest input
INPUT_CAP = {"gpu_runbook.joblog.patterns.TQDM_LABEL": 220}


def test_the_patterns_are_found():
    from gpu_runbook.joblog.patterns import DL_EXITED
    from gpu_runbook.nvsmi.q_xml import _XML_TOKEN_RE
    from gpu_runbook.sources import DETECTORS
    found = {rx.pattern for _name, rx in PATTERNS}
    assert len(PATTERNS) > 200
    for expected in (DL_EXITED, _XML_TOKEN_RE, DETECTORS[2][1]):
        assert expected.pattern in found


@pytest.mark.parametrize("name,rx", PATTERNS, ids=[name for name, _rx in PATTERNS])
def test_pattern_is_linear(name, rx):
    anchored = name in ANCHORED
    worst, frag = 0.0, None
    for f in fragments(rx):
        t = cost(rx, repeat(f, SMALL), anchored=anchored)
        if t > worst:
            worst, frag = t, f
    small = cost(rx, repeat(frag, SMALL), tries=3, anchored=anchored)
    big = cost(rx, repeat(frag, 4 * SMALL), tries=3, anchored=anchored)
    assert big < 8 * small + 0.05, "%s: %r x %d: %.4fs, x %d: %.4fs (quadratic)" % (
        name, frag, SMALL, small, 4 * SMALL, big)
    n_max = INPUT_CAP.get(name, MAX_LEN)
    at_max = cost(rx, repeat(frag, n_max), anchored=anchored)
    # the longest input, held to the slope measured at 4n rather than to a wall-clock bound (a loaded
    # CI machine slows both alike): linear is n_max / 4n times 'big'; quadratic, that squared
    linear = big * n_max / (4.0 * SMALL)
    assert at_max < 4 * linear + 0.5, "%s: %r repeated to %d characters: %.2fs, %.2fs if linear" % (
        name, frag, n_max, at_max, linear)


@pytest.mark.parametrize("frag", ["DataLoader worker (pid(", "DataLoader worker (pid ", "[PG ",
                                  "NET/IB : Got completion from peer x<1> with status=", "a",
                                  "\x1b]", "1%|", "[rank"])
def test_a_job_log_line_of_a_repeated_fragment_is_read_quickly(frag):
    text = "[rank3]:[E1202 14:13:17.795 ProcessGroupNCCL.cpp:616] NCCL WARN " + repeat(frag, 1 << 20) + "\n"
    t0 = time.perf_counter()
    job, _findings = parse_job_logs({"rank-3.log": text})
    assert time.perf_counter() - t0 < 5.0
    assert isinstance(job, dict)


@pytest.mark.parametrize("frag", ["<!DOCTYPE[", "<!DOCTYPE x [<!--", "<gpu a=\"", "<a x=", "&#x"])
def test_nvidia_smi_xml_of_a_repeated_fragment_is_read_quickly(frag):
    text = '<?xml version="1.0" ?>\n<nvidia_smi_log>\n' + repeat(frag, 200 * 1024)
    t0 = time.perf_counter()
    parse_nvidia_smi(text, source="nvidia-smi-q.xml")
    assert time.perf_counter() - t0 < 5.0


def test_the_doctype_fix_keeps_a_real_doctype():
    text = ('<?xml version="1.0" ?>\n<!DOCTYPE nvidia_smi_log SYSTEM "nvsmi_device_v12.dtd">\n'
            "<nvidia_smi_log><attached_gpus>1</attached_gpus><gpu id=\"00000000:07:00.0\">"
            "<product_name>NVIDIA H100 80GB HBM3</product_name><serial>1654922006536</serial>"
            "</gpu></nvidia_smi_log>\n")
    facts, _findings = parse_nvidia_smi(text, source="nvidia-smi-q.xml")
    assert [g.get("serial") for g in facts["gpus"]] == ["1654922006536"]


def test_the_source_files_exist_for_inline_patterns():
    # the inline-pattern walk reads the engine's source: it must find some
    assert any(":" in name.rsplit(".", 1)[-1] for name, _rx in PATTERNS), os.listdir(gpu_runbook.__path__[0])


# ---------------------------------------------------------------- memory bounded by lines, not by input

_PEAK = r"""
import resource, sys
from gpu_runbook.kernlog import scan_kernel_log_file
facts, findings = scan_kernel_log_file(sys.argv[1])
hwm = [int(x.split()[1]) for x in open("/proc/self/status") if x.startswith("VmHWM:")][0]
print(hwm // 1024, resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss // 1024, facts["lines"],
      ",".join(f["source"] for f in findings if f["kind"] == "xid"))
"""
XID = b"Dec  3 10:00:00 node1 kernel: NVRM: Xid (PCI:0000:07:00): 79, pid=1, GPU has fallen off the bus.\n"
XID_OTHER = XID.replace(b"0000:07:00", b"0000:9a:00")  # another GPU: a finding of its own


def _scan_peak_mb(path):
    """(peak RSS of the scan's own process (VmHWM: ru_maxrss would carry what the parent held
    when it forked), of its largest child: grep), in MB; lines read."""
    out = subprocess.run([sys.executable, "-c", _PEAK, path], capture_output=True, text=True, timeout=120,
                         check=True, env=dict(os.environ, PYTHONPATH=os.pathsep.join(sys.path)))
    own, child, lines, xids = (out.stdout.split() + [""])[:4]
    return int(own), int(child), int(lines), xids


def test_a_file_of_nuls_is_scanned_in_bounded_memory(tmp_path):
    # one 'line' of 512 MB between two Xids: grep used to hold it whole (~1 GB); now grep's memory is
    # capped, it gives up on that line, and Python reads on from the last line grep reported
    path = tmp_path / "kern.log"
    with open(path, "wb") as fh:
        fh.write(XID)
        fh.truncate(len(XID) + (512 << 20))  # sparse: no disk
        fh.seek(len(XID) + (512 << 20))
        fh.write(b"\n" + XID_OTHER)
    own, child, lines, xids = _scan_peak_mb(str(path))
    assert (lines, xids) == (3, "kern.log:1,kern.log:3")
    assert own < 200 and child < 300, (own, child)


def test_one_huge_matching_line_costs_a_line_not_its_size(tmp_path):
    path = tmp_path / "kern.log"
    with open(path, "wb") as fh:
        fh.write(b"NVRM: ")
        for _ in range(96):
            fh.write(b"x" * (1 << 20))
        fh.write(b"\n" + XID)
    own, child, lines, xids = _scan_peak_mb(str(path))
    assert (lines, xids) == (2, "kern.log:2")
    assert own < 150 and child < 300, (own, child)  # was ~5x the line in Python (480 MB)
