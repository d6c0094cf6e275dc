"""report.html in a real headless browser (Debian's chromium): the incident timeline and the
iteration-rate chart are laid out and painted, the page needs nothing from the network, and
a relative report_dir lands where ansible-playbook was run.

The report comes from the real playbook (diagnose.yml on the demo rack with the epoch-35 job
logs). Chromium is driven through its own command line: --dump-dom runs a measuring script
added to a copy of the report (the report itself has no script), --screenshot writes a PNG
whose pixels are checked. Without chromium the tests skip -- except with CI=true, where
that is a failure (as tests/cluster does)."""

import json
import os
import shutil
import struct
import subprocess
import zlib

import pytest

from tests.conftest import BIN, FIXTURES, REPO, ansible_env

JOB_LOGS = os.path.join(FIXTURES, "joblog", "epoch35-hang-combined")
REL_DIR = "incident-report"


def _chromium():
    found = shutil.which("chromium") or shutil.which("chromium-browser")
    if found:
        return found
    reason = "chromium is not installed (make test installs it as root: apt-get install chromium)"
    if os.environ.get("CI", "").lower() == "true":
        pytest.fail("headless browser required on CI: %s" % reason, pytrace=False)
    pytest.skip(reason)


@pytest.fixture(scope="module")
def browser():
    return _chromium()


@pytest.fixture(scope="module")
def report(tmp_path_factory):
    """Run diagnose.yml from a directory of its own with a relative report_dir."""
    cwd = tmp_path_factory.mktemp("cwd")
    cmd = [os.path.join(BIN, "ansible-playbook"), os.path.join(REPO, "playbooks", "diagnose.yml"),
           "-i", os.path.join(REPO, "inventory-examples", "demo"), "-l", "gpu-rack3",
           "-e", "report_dir=%s" % REL_DIR, "-e", "job_log_dir=%s" % JOB_LOGS]
    proc = subprocess.run(cmd, cwd=str(cwd), env=ansible_env(), capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stdout[-3000:] + proc.stderr[-3000:]
    return {"cwd": cwd, "dir": cwd / REL_DIR, "proc": proc}


def test_relative_report_dir_is_resolved_where_the_command_ran(report):
    for name in ("report.json", "report.md", "report.html"):
        assert (report["dir"] / name).is_file(), name
    assert not os.path.exists(os.path.join(REPO, "playbooks", REL_DIR))
    with open(str(report["dir"] / "report.json"), encoding="utf-8") as fh:
        data = json.load(fh)
    # the console's last line names the report, by its absolute path
    assert str(report["dir"] / "report.html") in report["proc"].stdout
    assert data["job"]["culprits"][0]["rank"] == 11 and data["tool"]["name"] == "gpu-runbook"


MEASURE = """
<script>
(function () {
  function box(el) { if (!el) return null; var b = el.getBBox(); return [b.width, b.height]; }
  function hit(el) {  // what the browser finds at the middle of an element: is it on top? (the marks let hover through)
    if (!el) return null;
    el.scrollIntoView({block: "center"});
    var r = el.getBoundingClientRect(), at = document.elementFromPoint(r.left + r.width / 2, r.top + r.height / 2);
    return at ? (at.getAttribute("class") || at.tagName) : null;
  }
  var tl = document.querySelector("svg.timeline"), rate = document.querySelector("svg.rate");
  var line = rate && rate.querySelector(".rate-line");
  var out = {
    timeline_top: tl ? tl.getBoundingClientRect().top + window.scrollY : null,
    timeline_px: tl ? [tl.getBoundingClientRect().width, tl.getBoundingClientRect().height] : null,
    rows: Array.prototype.map.call(document.querySelectorAll("svg.timeline g.tl-row"), function (g) {
      return {host: g.getAttribute("data-host"), box: box(g), dots: g.querySelectorAll("circle").length};
    }),
    first_fault: box(document.querySelector("svg.timeline .mark-fault line")),
    watchdog: box(document.querySelector("svg.timeline .mark-watchdog line")),
    job_start: box(document.querySelector("svg.timeline .mark-start line")),
    culprit: box(document.querySelector("svg.timeline .mark-culprit line")),
    first_dot_hit: hit(document.querySelector("svg.timeline circle.first-fault")),
    rate_px: rate ? [rate.getBoundingClientRect().width, rate.getBoundingClientRect().height] : null,
    rate_line: box(line), rate_points: line ? line.points.numberOfItems : 0,
    rate_dot_hit: hit(rate && rate.querySelector(".rate-dot")),
    failed: box(document.querySelector("svg.rate .mark-fail line")),
    resources: performance.getEntriesByType("resource").map(function (e) { return e.name; })
  };
  var pre = document.createElement("pre");
  pre.id = "measure";
  pre.textContent = JSON.stringify(out);
  document.body.appendChild(pre);
})();
</script>
"""


def _run_chromium(browser, args, tmp_path):
    cmd = [browser, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", "--no-first-run",
           "--user-data-dir=%s" % (tmp_path / "profile")] + args
    return subprocess.run(cmd, capture_output=True, text=True, timeout=120)


def _measure(browser, html_path, tmp_path):
    with open(html_path, encoding="utf-8") as fh:
        page = fh.read()
    probe = tmp_path / "measured.html"
    probe.write_text(page.replace("</body>", MEASURE + "</body>"), encoding="utf-8")
    proc = _run_chromium(browser, ["--window-size=1200,900", "--dump-dom", probe.as_uri()], tmp_path)
    assert proc.returncode == 0, proc.stderr[-2000:]
    dom = proc.stdout
    start = dom.index('<pre id="measure">') + len('<pre id="measure">')
    import html
    return json.loads(html.unescape(dom[start:dom.index("</pre>", start)]))


def test_report_html_draws_the_timeline_and_the_rate_chart(browser, report, tmp_path):
    html_path = report["dir"] / "report.html"
    with open(str(html_path), encoding="utf-8") as fh:
        page = fh.read()
    assert "<script" not in page and "http://" not in page and "https://" not in page  # one offline file
    m = _measure(browser, str(html_path), tmp_path)
    assert m["resources"] == []  # nothing fetched: no font, image or style from anywhere
    assert m["timeline_px"][0] > 600 and m["timeline_px"][1] > 100
    rows = {r["host"]: r for r in m["rows"]}
    assert list(rows)[0] == "job" and "gpu-r3-n02" in rows  # the job's row, then the culprit's host
    for r in m["rows"]:
        assert r["box"][0] > 500 and r["box"][1] > 10, r
    assert rows["job"]["dots"] == 3  # the job's start, the collective that never completed, the watchdog
    assert sum(r["dots"] for r in m["rows"]) >= 3
    assert m["first_fault"][1] > 50 and m["watchdog"][1] > 50  # vertical marks across the rows
    assert m["job_start"][1] > 50  # the job's start, across the rows
    assert m["culprit"] is None  # the culprit's host logged no fault of its own here: nothing marked as its
    assert m["first_dot_hit"] and "first-fault" in m["first_dot_hit"]
    assert m["rate_px"][0] > 600 and m["rate_px"][1] > 100
    assert m["rate_points"] == 35 and m["rate_line"][0] > 500  # one point per epoch, across the chart
    assert m["rate_dot_hit"] and "rate-dot" in m["rate_dot_hit"]
    assert m["failed"][1] > 50


def test_screenshot_of_the_timeline_shows_its_marks(browser, report, tmp_path):
    html_path = report["dir"] / "report.html"
    top = int(_measure(browser, str(html_path), tmp_path)["timeline_top"])
    # chromium's --screenshot shows the top of a page: a frame around the unchanged report shifts
    # its timeline to the top of the view (a #fragment is not scrolled to before the capture)
    frame = tmp_path / "frame.html"
    frame.write_text('<!DOCTYPE html><html><body style="margin:0;overflow:hidden"><iframe src="%s" style="position:'
                     'absolute;top:-%dpx;left:0;width:1100px;height:%dpx;border:0"></iframe></body></html>'
                     % (html_path.as_uri(), top - 20, top + 600), encoding="utf-8")
    shot = tmp_path / "report-timeline.png"
    proc = _run_chromium(browser, ["--window-size=1100,600", "--allow-file-access-from-files", "--screenshot=%s" % shot,
                          frame.as_uri()], tmp_path)
    assert proc.returncode == 0 and shot.is_file(), proc.stderr[-2000:]
    print("screenshot: %s" % shot)
    width, height, pixels = _read_png(str(shot))
    assert (width, height) == (1100, 600)
    # the first fault's red line and the watchdog's purple one are painted (colours from the report's CSS)
    assert _count(pixels, (0xb0, 0x00, 0x20)) > 100
    assert _count(pixels, (0x6a, 0x1b, 0x9a)) > 100
    full = tmp_path / "report.png"
    proc = _run_chromium(browser, ["--window-size=1200,4000", "--screenshot=%s" % full, html_path.as_uri()], tmp_path)
    assert proc.returncode == 0 and full.is_file()
    print("screenshot: %s" % full)


def _count(pixels, rgb, tolerance=24):
    return sum(1 for p in pixels if all(abs(a - b) <= tolerance for a, b in zip(p, rgb)))


def _read_png(path):
    """-> (width, height, [(r, g, b)]) of an 8-bit RGB/RGBA, non-interlaced PNG (what chromium writes)."""
    with open(path, "rb") as fh:
        data = fh.read()
    assert data[:8] == b"\x89PNG\r\n\x1a\n"
    pos, idat, width = 8, b"", 0
    while pos < len(data):
        length, kind = struct.unpack(">I4s", data[pos:pos + 8])
        body = data[pos + 8:pos + 8 + length]
        if kind == b"IHDR":
            width, height, depth, colour, _c, _f, interlace = struct.unpack(">IIBBBBB", body)
            assert depth == 8 and colour in (2, 6) and interlace == 0
            bpp = 4 if colour == 6 else 3
        elif kind == b"IDAT":
            idat += body
        pos += 12 + length
    raw, stride, prev, pixels = zlib.decompress(idat), width * bpp, bytearray(width * bpp), []
    for y in range(height):
        kind, line = raw[y * (stride + 1)], bytearray(raw[y * (stride + 1) + 1:(y + 1) * (stride + 1)])
        if kind == 1:
            for i in range(bpp, stride):
                line[i] = (line[i] + line[i - bpp]) & 255
        elif kind == 2:
            line = bytearray((a + b) & 255 for a, b in zip(line, prev))
        elif kind == 3:
            for i in range(stride):
                line[i] = (line[i] + ((line[i - bpp] if i >= bpp else 0) + prev[i]) // 2) & 255
        elif kind == 4:
            for i in range(stride):
                a, b, c = (line[i - bpp] if i >= bpp else 0), prev[i], (prev[i - bpp] if i >= bpp else 0)
                p = a + b - c
                pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
                line[i] = (line[i] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
        pixels.extend(tuple(line[i:i + 3]) for i in range(0, stride, bpp))
        prev = line
    return width, height, pixels
