# SPDX-License-Identifier: Apache-2.0
"""report.html: one self-contained page (no script, nothing fetched) with the pictures inline.
The template is a string here so it travels with the engine wherever it is installed; jinja2
(the controller has it) autoescapes every value."""

from .facts import _s, report_facts

HTML_TEMPLATE = """\
<!DOCTYPE html>
<html lang="{{ r.lang }}"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>{{ t.title }}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222;padding:0 1em}
h1{font-size:1.5em}table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3;white-space:nowrap}.critical{background:#fde2e1}.warning{background:#fff4d6}
code{font-size:12px;word-break:break-all}.muted{color:#777}.cmd{background:#f6f8fa;padding:.1em .3em}
.tl div{margin:.2em 0}.tl .fault{color:#b00020;font-weight:600}.tl .job{color:#0040a0;font-weight:600}
svg.chart{display:block;margin:.5em 0 1.5em;font:12px system-ui,sans-serif;background:#fff}
svg .lane{fill:#f4f5f7}svg .lane-job{fill:#e8eefb}svg .row-label{font-weight:600;fill:#222}
svg .axis line,svg line.grid{stroke:#bbb;stroke-width:1}svg line.grid{stroke-dasharray:2 3}
svg .axis text{fill:#555}svg .muted{fill:#999}
svg .ev{stroke:#fff;stroke-width:1}svg .ev-other{fill:#888}svg .ev-fault{fill:#d32f2f}svg .ev-down{fill:#ef6c00}
svg .ev-up{fill:#43a047}svg .ev-job{fill:#1565c0}svg .ev-watchdog{fill:#6a1b9a}
svg .first-fault{fill:#b00020;stroke:#000;stroke-width:2}svg .culprit-fault{fill:#b00020;stroke:#000;stroke-width:3}
svg .mark-fault line,svg .mark-culprit line{stroke:#b00020;stroke-width:2}
svg .mark-fault text,svg .mark-culprit text{fill:#b00020;font-weight:600}
svg .mark-start line{stroke:#1565c0;stroke-width:1.5;stroke-dasharray:2 3}svg .mark-start text{fill:#1565c0}
svg .mark-watchdog line,svg .mark-fail line{stroke:#6a1b9a;stroke-width:2;stroke-dasharray:6 3}
svg .mark-watchdog text,svg .mark-fail text{fill:#6a1b9a;font-weight:600}
svg .rate-line{fill:none;stroke:#1565c0;stroke-width:2.5}svg .rate-dot{fill:#1565c0}
svg .mark-fault,svg .mark-culprit,svg .mark-start,svg .mark-watchdog,svg .mark-fail{pointer-events:none}
</style></head><body>
<h1>{{ t.title }}</h1>
<p class="muted">{{ r.version }} · {{ t.generated }}: {{ r.generated }} · {{ t.hosts }}: {{ r.n_hosts }} ·
{{ t.suspects }}: {{ r.n_suspects }}</p>
<p class="muted">{{ t.window }}: {{ r.window }}</p>
{% if job %}<h2 id="job">{{ t.job }}</h2><table class="job">
<tr><th>{{ t.job_id }}</th><td>{{ job.job_id }}</td></tr>
<tr><th>{{ t.verdict }}</th><td><b>{{ job.verdict }}</b></td></tr>
<tr><th>{{ t.decided_by }}</th><td>{{ job.decided_by }}</td></tr>
<tr><th>{{ t.how_sure }}</th><td>{{ job.how_sure }}</td></tr>
<tr><th>{{ t.failed_at }}</th><td>{{ job.failed_at }}</td></tr>
<tr><th>{{ t.collective }}</th><td>{{ job.collective }}</td></tr>
<tr><th>{{ t.timed_out }}</th><td>{{ job.timed_out }}</td></tr>
</table>
{% if job.chain %}<h3>{{ t.culprit_chain }}</h3><ul class="chain">
{% for chain in job.chain %}<li>{{ chain | join(" → ") }}</li>
{% endfor %}</ul>{% endif %}
<h3>{{ t.job_findings }}</h3>
{% if job.findings %}<table class="job-findings"><tr><th>{{ t.severity }}</th><th>{{ t.finding }}</th><th>{{ t.rank }}</th>
<th>{{ t.message }}</th><th>{{ t.seen }}</th><th>{{ t.evidence }}</th><th>{{ t.action }}</th></tr>
{% for f in job.findings %}<tr class="{{ f.sev }}"><td>{{ f.severity }}</td><td>{{ f.name }}</td><td>{{ f.rank }}</td>
<td>{{ f.message }}</td><td>{{ f.seen }}</td><td><code>{{ f.evidence }}</code><br><span class="muted">{{ f.source }}</span></td>
<td>{{ f.action | rich }}</td></tr>
{% endfor %}</table>{% else %}<p>{{ t.no_job_findings }}</p>{% endif %}
{% if job.nccl_errors %}<h3>{{ t.nccl_errors }}</h3><table class="nccl-errors"><tr><th>{{ t.rank }}</th>
<th>{{ t.host }}</th><th>{{ t.peer }}</th><th>{{ t.hca }}</th><th>{{ t.error }}</th><th>{{ t.times }}</th><th>{{ t.source }}</th></tr>
{% for e in job.nccl_errors %}<tr><td>{{ e.rank }}</td><td>{{ e.host }}</td><td>{{ e.peer }}</td><td>{{ e.hca }}</td>
<td>{{ e.error }}</td><td>{{ e.times }}</td><td>{{ e.source }}</td></tr>
{% endfor %}</table>{% endif %}
{% if job.rate_svg %}<h3 id="rate">{{ t.rate }}</h3><p>{{ job.rate_text }}</p>
{{ job.rate_svg | safe }}{% endif %}
{% endif %}
<h2 id="suspects">{{ t.suspect_hosts }}</h2>
{% if r.suspects %}<table class="suspects"><tr><th>{{ t.host }}</th><th>{{ t.verdict }}</th><th>{{ t.how_sure }}</th>
<th>{{ t.severity }}</th><th>{{ t.next }}</th><th>{{ t.command }}</th></tr>
{% for s in r.suspects %}<tr class="{{ s.sev }}"><td>{{ s.host }}{% if s.outside %} <span class="muted">({{ s.outside }})</span>{% endif %}</td>
<td>{{ s.verdict }}</td><td>{{ s.how_sure }}</td><td>{{ s.severity }}</td><td>{{ s.rung }}</td>
<td><code class="cmd">{{ s.command }}</code></td></tr>
{% endfor %}</table>{% else %}<p>{{ t.none }}</p>{% endif %}
{% if r.healthy %}<p>{{ t.healthy }} ({{ r.healthy | length }}): {{ r.healthy | join(", ") }}</p>{% endif %}
{% if r.cluster_findings %}<h2>{{ t.cluster }}</h2><ul>
{% for f in r.cluster_findings %}<li><b>{{ f.severity }}</b> {{ f.message }}</li>
{% endfor %}</ul>{% endif %}
{% for s in r.suspects %}<h3>{{ s.host }}: {{ s.verdict }} → {{ s.rung }}</h3>
<p>{{ t.how_sure }}: {{ s.how_sure }}<br>{{ t.command }}: <code class="cmd">{{ s.command }}</code><br>
{{ t.plan }}: {{ s.decision }}: {{ s.why }}</p>
<table class="evidence"><tr><th>{{ t.severity }}</th><th>{{ t.finding }}</th><th>{{ t.message }}</th><th>{{ t.seen }}</th>
<th>{{ t.evidence }}</th><th>{{ t.action }}</th></tr>
{% for f in s.findings %}<tr class="{{ f.sev }}"><td>{{ f.severity }}</td><td>{{ f.name }}{% if f.target %} {{ f.target }}{% endif %}</td>
<td>{{ f.message }}{% if f.counters != "-" %}<br><span class="muted">{{ t.counters }}: {{ f.counters }}</span>{% endif %}</td>
<td>{{ f.seen }}</td><td><code>{{ f.evidence }}</code><br><span class="muted">{{ f.source }}</span></td><td>{{ f.action | rich }}</td></tr>
{% endfor %}</table>{% endfor %}
<h2 id="timeline">{{ t.timeline }}</h2>
{% if r.events %}{{ r.timeline_svg | safe }}
{% if r.quiet %}<p class="muted">{{ r.quiet }}</p>{% endif %}
<div class="tl">{% for e in r.events %}<div class="{{ e.cls }}"><span class="muted">{{ e.time }}</span> <b>{{ e.host }}</b>
{% if e.mark %}[{{ e.mark }}] {% endif %}{{ e.text }}</div>
{% endfor %}</div>{% else %}<p class="muted">{{ t.timeline_none }}</p>{% endif %}
<h2>{{ t.inputs }}</h2>
<table class="inputs"><tr><th>{{ t.host }}</th><th>{{ t.read }}</th><th>{{ t.not_read }}</th></tr>
{% for i in r.inputs.hosts %}<tr><td>{{ i.host }}</td><td>{{ i.read }}</td><td>{{ i.not_read }}</td></tr>
{% endfor %}</table>
<p>{{ t.job_logs }}: {{ r.inputs.job_logs }}<br>{{ t.problems }}: {{ r.inputs.problems }}</p>
</body></html>
"""


def _html_rich(value):
    """Text of our own (an action): escaped, its `code` parts in <code>."""
    from markupsafe import Markup, escape
    parts = str(escape(_s(value))).split("`")
    if len(parts) % 2 == 0:
        return escape(_s(value))
    return Markup("".join("<code>%s</code>" % p if i % 2 else p for i, p in enumerate(parts)))


def render_html(analysis, lang="en", facts=None):
    """report.html; ``facts`` as for render_markdown."""
    import jinja2
    env = jinja2.Environment(autoescape=True, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.ChainableUndefined, finalize=lambda v: "-" if v is None else v)
    env.filters["rich"] = _html_rich
    r = facts if facts is not None else report_facts(analysis, lang)
    return env.from_string(HTML_TEMPLATE).render(r=r, t=r["t"], job=r["job"])
