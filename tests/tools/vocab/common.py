"""What every vocabulary generator shares: reading a pinned source, joining C string literals,
and writing the table module (module_utils/gpu_runbook/vocab/<emitter>.py) in the one layout
vocab/__init__.py documents.

A generator reads a program's source at a pinned commit (a git checkout or a bare mirror:
``git show REV:PATH``, ``git grep``), a registry package, or a published document, derives
one row per message with its classification, and calls ``write_table``. Run it again on the
same pin and the module is byte-for-byte the same (rows sorted, no dates).
"""

import os
import re
import subprocess

REPO = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
VOCAB_DIR = os.path.join(REPO, "module_utils", "gpu_runbook", "vocab")

ROW_FIELDS = ("file", "line", "format", "kind", "category", "severity", "meaning")
CODE_FIELDS = ("number", "name", "text", "kind", "category", "severity", "meaning", "file", "line")


def git(src, *args):
    """Run git in a checkout or bare mirror ``src``; -> stdout as text (UTF-8, errors replaced)."""
    out = subprocess.run(["git", "--git-dir", _git_dir(src)] + list(args), check=True, capture_output=True)
    return out.stdout.decode("utf-8", "replace")


def _git_dir(src):
    dot = os.path.join(src, ".git")
    return dot if os.path.isdir(dot) else src


def show(src, rev, path):
    """The text of ``path`` at ``rev``."""
    return git(src, "show", "%s:%s" % (rev, path))


def ls_files(src, rev, *prefixes):
    """The paths at ``rev`` under the prefixes (all when none)."""
    out = git(src, "ls-tree", "-r", "--name-only", rev, *prefixes)
    return [p for p in out.splitlines() if p]


def resolve(src, rev):
    """The 40-hex commit of a tag, branch or commit."""
    return git(src, "rev-parse", rev + "^{commit}").strip()


_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "\\": "\\", '"': '"', "'": "'", "0": "\0", "a": "\a", "e": "\x1b"}
_C_STRING = re.compile(r'"((?:[^"\\\n]|\\.)*)"')


def c_unescape(body):
    """The text of a C string literal's body (between the quotes)."""
    out, i = [], 0
    while i < len(body):
        c = body[i]
        if c == "\\" and i + 1 < len(body):
            n = body[i + 1]
            if n == "x":
                m = re.match(r"[0-9a-fA-F]{1,2}", body[i + 2:])
                if m:
                    out.append(chr(int(m.group(0), 16)))
                    i += 2 + len(m.group(0))
                    continue
            out.append(_ESCAPES.get(n, n))
            i += 2
            continue
        out.append(c)
        i += 1
    return "".join(out)


# inttypes.h macros between literals ("%" PRIu64 "x") and what printf sees for them
PRI_MACROS = {
    "PRIu64": "lu", "PRId64": "ld", "PRIx64": "lx", "PRIX64": "lX", "PRIi64": "li",
    "PRIu32": "u", "PRId32": "d", "PRIx32": "x", "PRIX32": "X", "PRIu16": "u", "PRIu8": "u",
    "PRIuPTR": "lu", "PRIxPTR": "lx", "PRIdPTR": "ld", "PRIu": "u", "PRIx": "x",
}


def join_literals(expr, macros=None):
    """Adjacent C string literals in ``expr`` (and the inttypes macros or ``macros`` {NAME:
    text} between them) joined into one string; None when ``expr`` does not start with a
    literal or a known macro. ``"%" PRIu64 " bytes"`` -> ``"%lu bytes"``."""
    macros = dict(PRI_MACROS, **(macros or {}))
    pos, parts = 0, []
    s = expr
    while True:
        m = re.match(r"\s*", s[pos:])
        pos += m.end()
        if pos >= len(s):
            break
        if s[pos] == '"':
            m = _C_STRING.match(s, pos)
            if not m:
                break
            parts.append(c_unescape(m.group(1)))
            pos = m.end()
            continue
        m = re.match(r"[A-Za-z_][A-Za-z0-9_]*", s[pos:])
        if m and m.group(0) in macros:
            parts.append(macros[m.group(0)])
            pos += m.end()
            continue
        break
    return "".join(parts) if parts else None


def write_table(emitter_module, meta, markers, templates, rows, codes=None, code_formats=None, doc="", gate=None):
    """Write module_utils/gpu_runbook/vocab/<emitter_module>.py.

    meta: {"EMITTER", "PROJECT", "VERSION", "COMMIT", "LICENCE", "ORIGIN", "GENERATOR"};
    rows: tuples in ROW_FIELDS order (sorted here, duplicates dropped); codes: tuples in
    CODE_FIELDS order; doc: what the table covers and how rows were classified (the module
    docstring's body); gate: a regex a line's head must hold before its markers are looked for
    (GATE: the table's emitter prints every line with it, so other lines cost no marker search)."""
    for key in ("EMITTER", "PROJECT", "VERSION", "COMMIT", "LICENCE", "ORIGIN", "GENERATOR"):
        if not meta.get(key):
            raise ValueError("meta %s is missing" % key)
    rows = sorted(set(tuple(r) for r in rows), key=lambda r: (r[0], r[1], r[2]))
    for r in rows:
        if len(r) != len(ROW_FIELDS):
            raise ValueError("row of %d fields: %r" % (len(r), r))
    lines = ['"""%s messages as data: generated by %s; edit the generator, never this file.' % (
        meta["EMITTER"], meta["GENERATOR"]), ""]
    lines.append("Source: %s %s (%s), %s; licence %s." % (meta["PROJECT"], meta["VERSION"], meta["COMMIT"],
                                                          meta["ORIGIN"], meta["LICENCE"]))
    if doc:
        lines.append("")
        lines.extend(doc.strip("\n").splitlines())
    lines.append("Row layout: vocab/__init__.py.")
    lines.append('"""')
    lines.append("")
    lines.append("# flake8: noqa  (generated)")
    for key in ("EMITTER", "PROJECT", "VERSION", "COMMIT", "LICENCE", "ORIGIN", "GENERATOR"):
        lines.append("%s = %r" % (key, meta[key]))
    lines.append("MARKERS = %r" % (tuple(markers),))
    if gate is not None:
        lines.append("GATE = %r" % (gate,))
    lines.append("TEMPLATES = (")
    for t in templates:
        lines.append("    %r," % (tuple(t),))
    lines.append(")")
    lines.append("ROWS = (")
    for r in rows:
        lines.append("    %r," % (tuple(r),))
    lines.append(")")
    if codes is not None:
        lines.append("CODE_FORMATS = %r" % (tuple(code_formats or ()),))
        lines.append("CODES = (")
        # by number and name, then the rest: a code printed under two texts (PMIx's v3 "ERROR" and v4
        # "PMIX_ERROR") must not take the set's order, which changes with the string hash every run
        for c in sorted(set(tuple(c) for c in codes), key=lambda c: (c[0], c[1], repr(c[2:]))):
            if len(c) != len(CODE_FIELDS):
                raise ValueError("code of %d fields: %r" % (len(c), c))
            lines.append("    %r," % (tuple(c),))
        lines.append(")")
    path = os.path.join(VOCAB_DIR, emitter_module + ".py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write("\n".join(lines) + "\n")
    return path


# ---------------------------------------------------------------------------------------------
# C / C++ source reading (gen_nccl.py, gen_ofi.py)

def line_of(text, pos):
    """The 1-based line number of offset ``pos`` in ``text``."""
    return text.count("\n", 0, pos) + 1


def literal_end(text, i):
    """The offset just after the C string or character literal that opens at ``text[i]`` (a quote);
    one left open ends with its line."""
    quote, j, n = text[i], i + 1, len(text)
    while j < n and text[j] != quote and text[j] != "\n":
        if text[j] == "\\":
            j += 1
        j += 1
    return j + 1


def blank_comments(text):
    """``text`` with comments blanked (newlines kept, so line numbers hold); literals kept."""
    out, i, n = [], 0, len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = literal_end(text, i)
            out.append(text[i:j])
            i = j
            continue
        if text.startswith("//", i):
            j = text.find("\n", i)
            j = n if j < 0 else j
            out.append(" " * (j - i))
            i = j
            continue
        if text.startswith("/*", i):
            j = text.find("*/", i + 2)
            j = n if j < 0 else j + 2
            out.append(re.sub(r"[^\n]", " ", text[i:j]))
            i = j
            continue
        out.append(c)
        i += 1
    return "".join(out)


def call_args(text, pos):
    """The arguments of the call whose '(' is at ``pos``: (list of argument texts, end)."""
    depth, i, cur, args, n = 0, pos, [], [], len(text)
    while i < n:
        c = text[i]
        if c in "\"'":
            j = i + 1
            while j < n and text[j] != c:
                if text[j] == "\\":
                    j += 1
                j += 1
            cur.append(text[i:j + 1])
            i = j + 1
            continue
        if c in "([{":
            depth += 1
            if depth == 1:
                i += 1
                continue
        elif c in ")]}":
            depth -= 1
            if depth == 0:
                args.append("".join(cur))
                return args, i
        elif c == "," and depth == 1:
            args.append("".join(cur))
            cur = []
            i += 1
            continue
        cur.append(c)
        i += 1
    return args, n


def check_class(kind, category, severity, kinds):
    """A row's classification, checked before the table is written: a "benign" row is healthy/ok;
    any other names a kind of the taxonomy (``kinds``: taxonomy.KINDS), one of that kind's
    categories and a severity a finding has. A mistake stops the generator."""
    if kind == "benign":
        if (category, severity) != ("healthy", "ok"):
            raise SystemExit("benign with %s/%s" % (category, severity))
    elif kind not in kinds or category not in kinds[kind]["categories"] or severity not in ("info", "warning",
                                                                                             "critical"):
        raise SystemExit("bad classification %s/%s/%s" % (kind, category, severity))


def compile_rules(rules):
    """RULES of (file, site, message, kind, severity, meaning) patterns, compiled (rule_class)."""
    return [(re.compile(f), re.compile(s), re.compile(m), k, sev, mean) for f, s, m, k, sev, mean in rules]


def rule_class(compiled, kinds, path, site, fmt):
    """(kind, category, severity, meaning) of the first rule whose file, site and message patterns
    match ``path`` (an older release's "path@tag" read as its path), ``site`` and ``fmt``: a
    "benign" rule is healthy/ok, any other the first category of its kind (``kinds``:
    taxonomy.KINDS). A message no rule takes stops the generator."""
    path = path.split("@")[0]
    for f, s, m, kind, sev, mean in compiled:
        if f.search(path) and s.search(site) and m.search(fmt):
            if kind == "benign":
                return kind, "healthy", "ok", mean
            return kind, kinds[kind]["categories"][0], sev, mean
    raise AssertionError("no rule for %s [%s] %r" % (path, site, fmt))


def holds_marker(fmt, markers):
    """Whether the message ``fmt``, its conversions filled in as a whole line prints them, holds one
    of ``markers`` (the table's MARKERS: a message without one is never offered to the table)."""
    from gpu_runbook import vocab
    text = vocab.instantiate(fmt, whole=True)
    return any(m in text for m in markers)
