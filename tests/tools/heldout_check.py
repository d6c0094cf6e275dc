#!/usr/bin/env python3
"""Before a held-out set is scored: which of its cases are not unseen.

    python tests/tools/heldout_check.py HELDOUT_DIR KNOWN_DIR... [--sources-out FILE]

KNOWN_DIR: directories of cases already seen (tests/fixtures/real, the reference captures). A
held-out case is not unseen when its source names a thread or file a known case names (URLs
compared without scheme, "www." or trailing punctuation: "github.com/x/y/issues/3" and
"https://github.com/x/y/issues/3" are one), or when one of its capture files is, blanks at its
ends aside, byte for byte a known capture. Prints one line per such case and exits 1 when there
is one. ``--sources-out``: writes every known source, one per line (the list an examiner's brief
points at), and does nothing else.
"""

import argparse
import hashlib
import json
import os
import re
import sys

_URL = re.compile(r"(?:https?://)?(?:www\.)?((?:github\.com|gitlab\.com|[a-z0-9-]+(?:\.[a-z0-9-]+)+)/[^\s)\"',]+)", re.I)


# a repository named with its thread in words: 'github.com/NVIDIA/nccl issue #902', '... PR #12'
_REPO_THREAD = re.compile(r"\b((?:github\.com|gitlab\.com)/[\w.\-]+/[\w.\-]+)\s{1,4}(issue|pr|pull request|pull)\s{0,2}#(\d+)",
                          re.I)


def sources_of(text):
    """The normalised addresses a case.json's source names (a thread named in words, 'github.com/x/y
    issue #3', as its address github.com/x/y/issues/3)."""
    out = {m.group(1).rstrip(".;:").rstrip("/").lower() for m in _URL.finditer(text or "")}
    for m in _REPO_THREAD.finditer(text or ""):
        out.add("%s/%s/%s" % (m.group(1).lower(), "issues" if m.group(2).lower() == "issue" else "pull", m.group(3)))
    return out


def content_key(path):
    with open(path, "rb") as fh:
        return hashlib.sha256(fh.read().strip()).hexdigest()


def cases(root):
    """(case directory, its case.json as a dict, its capture files) under ``root``."""
    for dirpath, _dirs, files in os.walk(root):
        if "case.json" not in files:
            continue
        try:
            with open(os.path.join(dirpath, "case.json"), encoding="utf-8") as fh:
                meta = json.load(fh)
        except (OSError, ValueError):
            meta = {}
        yield dirpath, meta, [os.path.join(dirpath, f) for f in sorted(files) if f != "case.json"]


def known(roots):
    """({normalised source: case}, {capture content key: file}) of the known cases."""
    srcs, contents = {}, {}
    for root in roots:
        for case, meta, files in cases(root):
            for s in sources_of(meta.get("source")):
                srcs.setdefault(s, case)
            for f in files:
                if os.path.isfile(f):
                    contents.setdefault(content_key(f), f)
    return srcs, contents


def seen_before(heldout, roots):
    """[(held-out case, why it is not unseen)]."""
    srcs, contents = known(roots)
    out = []
    for case, meta, files in sorted(cases(heldout)):
        why = ["source %s is %s's" % (s, srcs[s]) for s in sorted(sources_of(meta.get("source"))) if s in srcs]
        why += ["%s is %s" % (os.path.basename(f), contents[content_key(f)]) for f in files
                if os.path.isfile(f) and content_key(f) in contents]
        if why:
            out.append((case, "; ".join(why)))
    return out


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("heldout")
    ap.add_argument("known", nargs="+")
    ap.add_argument("--sources-out")
    args = ap.parse_args(argv)
    if args.sources_out:
        srcs, _ = known([args.heldout] + args.known)
        with open(args.sources_out, "w", encoding="utf-8") as fh:
            fh.write("".join(s + "\n" for s in sorted(srcs)))
        return 0
    found = seen_before(args.heldout, args.known)
    for case, why in found:
        print("%s: %s" % (case, why))
    return 1 if found else 0


if __name__ == "__main__":
    sys.exit(main())
