#!/usr/bin/env python3
"""Write module_utils/gpu_runbook/vocab/index.py: each generated table's MARKERS (and GATE), so the line
readers' prefilters know them without loading any table (a table is loaded when a line holds
one of its markers; on a node, every module a gather imports is compiled from source).

    .venv/bin/python tests/tools/vocab/write_index.py

Run it after a generator; tests/unit/test_vocab_tables.py fails when the index and the tables
disagree."""

import importlib
import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(os.path.dirname(os.path.dirname(HERE)))
sys.path.insert(0, os.path.join(REPO, "module_utils"))


def index_text():
    from gpu_runbook import vocab
    lines = ['"""The markers of each generated vocabulary table (vocab/<emitter>.py MARKERS): written by',
             'tests/tools/vocab/write_index.py; edit the tables\' generators, never this file."""', "",
             "MARKERS = {"]
    gates = []
    for name in vocab.EMITTERS:
        path = os.path.join(REPO, "module_utils", "gpu_runbook", "vocab", name + ".py")
        if not os.path.isfile(path):
            continue
        module = importlib.import_module("gpu_runbook.vocab." + name)
        lines.append("    %r: %r," % (name, tuple(module.MARKERS)))
        if getattr(module, "GATE", None):
            gates.append("    %r: %r," % (name, module.GATE))
    lines.append("}")
    # a table's GATE: what a line's head must hold before its markers are looked for
    lines.extend(["", "GATES = {"] + gates + ["}"])
    return "\n".join(lines) + "\n"


def main():
    path = os.path.join(REPO, "module_utils", "gpu_runbook", "vocab", "index.py")
    with open(path, "w", encoding="utf-8") as fh:
        fh.write(index_text())
    print(path)


if __name__ == "__main__":
    main()
