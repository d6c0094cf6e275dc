"""report.json / report.md / report.html from an analysis. Controller only (needs jinja2);
the templates are strings here so they travel with the engine wherever it is installed."""

import json
import os

from .i18n import RUNG_LABEL, SEVERITY_LABEL, VERDICT_LABEL, finding_message, how_sure, label

MD_TEMPLATE = """\
# {{ t.title }}

{{ t.generated }}: {{ analysis.generated or "" }} · {{ t.hosts }}: {{ analysis.hosts | length }} · \
{{ t.suspects }}: {{ cluster.suspects | length }}

{% if job %}
## {{ t.job }}
| | |
|---|---|
| {{ t.job_id }} | {{ job.job_id or "-" }} |
| {{ t.verdict }} | **{{ vlabel(job.verdict) if job.verdict else "-" }}** |
| {{ t.how_sure }} | {{ md(sure(job)) or "-" }} |
| {{ t.failed_at }} | {% if job.failed_at %}epoch {{ job.failed_at.epoch }}, {{ "%.0f" % (100 * (job.failed_at.progress or 0)) }}%{% else %}-{% endif %} |
| {{ t.collective }} | {% if job.collective %}{{ job.collective.op }} SeqNum={{ job.collective.seq }}{% else %}-{% endif %} |
| {{ t.timed_out }} | {{ job.timed_out_ranks | length }} |
| {{ t.culprit }} | {% for c in job.culprits or [] %}rank {{ c.rank }} → {{ c.host or "?" }} {{ c.gpu_pci or "" }}{% if c.explained_by %} ({{ c.explained_by }}){% endif %}{% if not loop.last %}; {% endif %}{% else %}-{% endfor %} |
{% endif %}

## {{ t.suspect_hosts }}
{% if suspects %}
| host | {{ t.verdict }} | {{ t.how_sure }} | {{ t.severity }} | {{ t.next }} | {{ t.evidence }} |
|---|---|---|---|---|---|
{% for h in suspects %}| {{ h.host }} | {{ vlabel(h.verdict) }} | {{ md(sure(h)) or "-" }} | {{ slabel(h.severity) }} | {{ rlabel(h.rung) }} | {{ md(h.findings[0].evidence if h.findings else "") }} |
{% endfor %}
{% else %}
{{ t.none }}
{% endif %}
{% if cluster.healthy %}
{{ t.healthy }} ({{ cluster.healthy | length }}): {{ cluster.healthy | join(", ") }}
{% endif %}

{% for h in suspects %}
### {{ h.host }}: {{ vlabel(h.verdict) }} → {{ rlabel(h.rung) }}
{% if h.confidence %}{{ t.how_sure }}: {{ sure(h) }}
{% endif %}
{% for f in h.findings if f.severity in ("warning", "critical") %}
- **[{{ slabel(f.severity) }}] {{ f.kind }}**{% if f.xid is not none %} Xid {{ f.xid }}{% endif %}{% if f.gpu %} GPU {{ f.gpu.pci or f.gpu.index }}{% endif %}{% if f.ib %} {{ f.ib.device }}/{{ f.ib.port }}{% endif %}: {{ msg(f)[0] }}
  - {{ t.evidence }}: `{{ f.evidence | replace("`", "'") }}` ({{ f.source }})
  - {{ t.action }}: {{ msg(f)[1] }}
{% endfor %}
{% endfor %}

## {{ t.timeline }}
| {{ t.time }} | host | {{ t.event }} |
|---|---|---|
{% for e in timeline %}| {{ e.time }} | {{ e.host }} | {{ md(e.text) }} |
{% endfor %}
"""

HTML_TEMPLATE = """\
<!DOCTYPE html>
<html lang="{{ lang }}"><head><meta charset="utf-8">
<title>{{ t.title }}</title>
<style>
body{font:14px/1.45 system-ui,sans-serif;margin:2em auto;max-width:1100px;color:#222}
h1{font-size:1.5em}table{border-collapse:collapse;width:100%;margin:.5em 0 1.5em}
td,th{border:1px solid #ccc;padding:.3em .5em;text-align:left;vertical-align:top}
th{background:#f3f3f3}.critical{background:#fde2e1}.warning{background:#fff4d6}
code{font-size:12px;word-break:break-all}.tl{border-left:3px solid #888;margin-left:.5em;padding-left:1em}
.tl div{margin:.2em 0}.tl .fault{color:#b00020;font-weight:600}.tl .job{color:#0040a0;font-weight:600}
.muted{color:#777}
</style></head><body>
<h1>{{ t.title }}</h1>
<p class="muted">{{ t.generated }}: {{ analysis.generated or "" }} · {{ t.hosts }}: {{ analysis.hosts | length }} ·
{{ t.suspects }}: {{ cluster.suspects | length }}</p>
{% if job %}<h2>{{ t.job }}</h2><table>
<tr><th>{{ t.job_id }}</th><td>{{ job.job_id or "-" }}</td></tr>
<tr><th>{{ t.verdict }}</th><td><b>{{ vlabel(job.verdict) if job.verdict else "-" }}</b></td></tr>
<tr><th>{{ t.how_sure }}</th><td>{{ sure(job) or "-" }}</td></tr>
<tr><th>{{ t.failed_at }}</th><td>{% if job.failed_at %}epoch {{ job.failed_at.epoch }}, {{ "%.0f" % (100 * (job.failed_at.progress or 0)) }}%{% else %}-{% endif %}</td></tr>
<tr><th>{{ t.collective }}</th><td>{% if job.collective %}{{ job.collective.op }} SeqNum={{ job.collective.seq }}{% else %}-{% endif %}</td></tr>
<tr><th>{{ t.timed_out }}</th><td>{{ job.timed_out_ranks | length }}</td></tr>
<tr><th>{{ t.culprit }}</th><td>{% for c in job.culprits or [] %}rank {{ c.rank }} → {{ c.host or "?" }} {{ c.gpu_pci or "" }}{% if c.explained_by %} ({{ c.explained_by }}){% endif %}<br>{% else %}-{% endfor %}</td></tr>
</table>{% endif %}
<h2>{{ t.suspect_hosts }}</h2>
{% if suspects %}<table><tr><th>host</th><th>{{ t.verdict }}</th><th>{{ t.how_sure }}</th><th>{{ t.severity }}</th><th>{{ t.next }}</th><th>{{ t.evidence }}</th></tr>
{% for h in suspects %}<tr class="{{ h.severity }}"><td>{{ h.host }}</td><td>{{ vlabel(h.verdict) }}</td><td>{{ sure(h) or "-" }}</td><td>{{ slabel(h.severity) }}</td>
<td>{{ rlabel(h.rung) }}</td><td><code>{{ h.findings[0].evidence if h.findings else "" }}</code></td></tr>
{% endfor %}</table>{% else %}<p>{{ t.none }}</p>{% endif %}
{% if cluster.healthy %}<p>{{ t.healthy }} ({{ cluster.healthy | length }}): {{ cluster.healthy | join(", ") }}</p>{% endif %}
{% for h in suspects %}<h3>{{ h.host }}: {{ vlabel(h.verdict) }} → {{ rlabel(h.rung) }}</h3>
{% if h.confidence %}<p>{{ t.how_sure }}: {{ sure(h) }}</p>{% endif %}<table>
<tr><th>{{ t.severity }}</th><th>kind</th><th>{{ t.message }}</th><th>{{ t.evidence }}</th><th>{{ t.action }}</th></tr>
{% for f in h.findings if f.severity in ("warning", "critical") %}<tr class="{{ f.severity }}"><td>{{ slabel(f.severity) }}</td>
<td>{{ f.kind }}{% if f.xid is not none %} (Xid {{ f.xid }}){% endif %}</td><td>{{ msg(f)[0] }}</td>
<td><code>{{ f.evidence }}</code><br><span class="muted">{{ f.source }}</span></td><td>{{ msg(f)[1] }}</td></tr>
{% endfor %}</table>{% endfor %}
<h2>{{ t.timeline }}</h2><div class="tl">
{% for e in timeline %}<div class="{{ e.cls }}"><span class="muted">{{ e.time }}</span> <b>{{ e.host }}</b> {{ e.text }}</div>
{% else %}<div class="muted">-</div>{% endfor %}</div>
</body></html>
"""

WORDS = {
    "en": {"title": "gpu-runbook incident report", "generated": "generated", "hosts": "hosts", "suspects": "suspects",
           "job": "Job", "job_id": "job id", "verdict": "verdict", "failed_at": "failed at", "collective": "collective",
           "timed_out": "ranks timed out", "culprit": "culprit", "suspect_hosts": "Suspect hosts",
           "severity": "severity", "next": "next rung", "evidence": "evidence", "none": "No suspect host.",
           "healthy": "healthy", "action": "action", "timeline": "Timeline", "time": "time", "event": "event",
           "message": "meaning", "how_sure": "how sure"},
    "ko": {"title": "gpu-runbook 장애 보고서", "generated": "생성 시각", "hosts": "호스트", "suspects": "의심 호스트",
           "job": "작업", "job_id": "작업 ID", "verdict": "판정", "failed_at": "실패 시점", "collective": "collective",
           "timed_out": "타임아웃 랭크 수", "culprit": "원인 랭크", "suspect_hosts": "의심 호스트",
           "severity": "심각도", "next": "다음 단계", "evidence": "근거", "none": "의심 호스트 없음.",
           "healthy": "정상", "action": "조치", "timeline": "타임라인", "time": "시각", "event": "이벤트",
           "message": "의미", "how_sure": "확신도"},
}


def _md_cell(s):
    return (s or "").replace("|", "\\|").replace("\n", " ").strip()


def _env(lang, autoescape):
    import jinja2
    env = jinja2.Environment(autoescape=autoescape, trim_blocks=True, lstrip_blocks=True,
                             undefined=jinja2.ChainableUndefined)
    env.globals.update(
        t=WORDS.get(lang, WORDS["en"]), lang=lang,
        vlabel=lambda v: label(VERDICT_LABEL, lang, v), rlabel=lambda r: label(RUNG_LABEL, lang, r),
        slabel=lambda s: label(SEVERITY_LABEL, lang, s), msg=lambda f: finding_message(f, lang), md=_md_cell,
        sure=lambda r: how_sure(r, lang))
    return env


def _context(analysis):
    cluster = analysis.get("cluster") or {}
    suspects = [h for h in analysis["hosts"] if h["host"] in (cluster.get("suspects") or [])]
    timeline = []
    for e in cluster.get("timeline") or []:
        cls = "job" if e.get("host") == "job" else ("fault" if e.get("first_fault") else "")
        timeline.append(dict(e, cls=cls))
    return {"analysis": analysis, "cluster": cluster, "suspects": suspects, "job": analysis.get("job"),
            "timeline": timeline}


def render_markdown(analysis, lang="en"):
    return _env(lang, False).from_string(MD_TEMPLATE).render(**_context(analysis))


def render_html(analysis, lang="en"):
    return _env(lang, True).from_string(HTML_TEMPLATE).render(**_context(analysis))


def write_reports(analysis, directory, lang="en"):
    """Write report.json, report.md, report.html; -> list of paths."""
    os.makedirs(directory, exist_ok=True)
    paths = []
    for name, body in (("report.json", json.dumps(analysis, indent=2, ensure_ascii=False, default=str)),
                       ("report.md", render_markdown(analysis, lang)),
                       ("report.html", render_html(analysis, lang))):
        path = os.path.join(directory, name)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(body)
        paths.append(path)
    return paths

