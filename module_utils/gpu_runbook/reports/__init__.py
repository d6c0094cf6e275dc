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
           "render_html", "render_markdown", "report_facts", "shell_line", "words", "write_reports"]


def write_reports(analysis, directory, lang="en"):
    """Write report.json, report.md, report.html into ``directory`` (resolved to an absolute
    path by the caller); -> list of paths. A target that is a symlink is refused."""
    from ..safewrite import check_target
    os.makedirs(directory, exist_ok=True)
    body = dict(analysis)
    body.setdefault("tool", {"name": "gpu-runbook", "version": __version__})
    paths = []
    for name, text in (("report.json", json.dumps(body, indent=2, ensure_ascii=False, default=str) + "\n"),
                       ("report.md", render_markdown(analysis, lang)),
                       ("report.html", render_html(analysis, lang))):
        path = os.path.join(directory, name)
        check_target(path)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
        paths.append(path)
    return paths
