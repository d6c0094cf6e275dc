# SPDX-License-Identifier: Apache-2.0
"""report.json / report.md / report.html from an analysis. Controller only (the HTML needs
jinja2). ``facts`` decides what the reports say, once; ``markdown`` and ``html`` write it,
each escaping for its format; ``charts`` draws the pictures; ``inputs`` adds what was read."""

import json
import os

from .. import __version__
from .facts import report_facts, shell_line
from .htmlpage import render_html
from .inputs import annotate, describe_inputs, describe_window
from .mdpage import md_code, md_rich, md_text, render_markdown
from .words import WORDS, words

__all__ = ["WORDS", "annotate", "describe_inputs", "describe_window", "md_code", "md_rich", "md_text",
           "json_text", "render_html", "render_markdown", "report_facts", "shell_line", "words", "write_reports"]


def json_text(body):
    """``body`` (a map) as JSON text: one line per top-level key and one line per element of a
    top-level list (report.json: a host per line, for grep and diff). Each line is encoded by
    json's C encoder; json.dumps(indent=2) uses the pure-Python one, ~4x the CPU at 10,000 hosts."""
    def one(value):
        # U+2028/2029 are line breaks to splitlines() and some editors: escaped, a host stays one line
        return json.dumps(value, ensure_ascii=False, default=str).replace("\u2028", "\\u2028").replace(
            "\u2029", "\\u2029")

    parts = []
    for key, value in body.items():
        if isinstance(value, list) and value:
            inner = ",\n".join("    " + one(v) for v in value)
            parts.append("  %s: [\n%s\n  ]" % (one(key), inner))
        else:
            parts.append("  %s: %s" % (one(key), one(value)))
    return "{\n" + ",\n".join(parts) + "\n}\n" if parts else "{}\n"


def write_reports(analysis, directory, lang="en"):
    """Write report.json, report.md, report.html into ``directory`` (resolved to an absolute
    path by the caller); -> list of paths. Each is written whole to a new temporary file and
    renamed over its name, never through a link (a symlink there is refused: WriteRefused),
    readable by no one the directory does not already let in."""
    from ..safewrite import check_target, write_atomic
    os.makedirs(directory, exist_ok=True)
    mode = 0o644 & os.stat(directory).st_mode
    body = dict(analysis)
    body.setdefault("tool", {"name": "gpu-runbook", "version": __version__})
    said = report_facts(analysis, lang)  # what both pages say (the remediation plan behind it): made once
    pages = (("report.json", lambda: json_text(body)),
             ("report.md", lambda: render_markdown(analysis, lang, facts=said)),
             ("report.html", lambda: render_html(analysis, lang, facts=said)))
    paths = [os.path.join(directory, name) for name, _ in pages]
    for path in paths:  # every name first: a refused one leaves no half a set behind
        check_target(path, "report file")
    texts = [render() for _, render in pages]  # every page made before any is written
    for path, text in zip(paths, texts):
        write_atomic(path, text, mode=mode, what="report file")
    return paths
