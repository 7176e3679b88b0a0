"""Self-contained HTML reports: one per run (summary, checks, counts, plots, coverage) and
one per sweep (every run's verdict, the merged coverage, the failing and slowest runs
linked to their own pages). Pictures are embedded, so a page is one file to archive.

Each page ends with a script that marks <body data-rendered="ok:N"> once its N pictures
have decoded (or "broken:..." naming the first that did not): what a headless browser
test reads.
"""

import base64
import html
import json
import os
from pathlib import Path

from irdma_sim import coverage
from irdma_sim.report import summary

STYLE = """
body { font: 14px/1.4 system-ui, sans-serif; margin: 24px; color: #222; max-width: 1100px; }
h1 { font-size: 22px; } h2 { font-size: 18px; margin-top: 28px; border-bottom: 1px solid #ccc; }
table { border-collapse: collapse; margin: 8px 0; } td, th { padding: 3px 8px; border: 1px solid #ddd;
  text-align: left; vertical-align: top; } th { background: #f3f3f3; }
.pass { color: #17702a; font-weight: 600; } .fail { color: #b3171d; font-weight: 600; }
.verdict { font-size: 18px; padding: 8px 12px; display: inline-block; border-radius: 4px; }
.verdict.pass { background: #e3f4e6; } .verdict.fail { background: #fbe4e4; }
pre { background: #f7f7f7; padding: 10px; overflow-x: auto; font-size: 12px; }
figure { margin: 16px 0; } figcaption { color: #555; font-size: 13px; max-width: 800px; }
.bar { background: #dde; height: 10px; display: inline-block; vertical-align: middle; }
.holes { font-size: 12px; color: #555; }
"""

CHECK_IMAGES = """
<script>
window.addEventListener("load", function () {
  var images = Array.prototype.slice.call(document.images);
  var broken = images.filter(function (img) { return !img.complete || img.naturalWidth === 0; });
  document.body.dataset.rendered = broken.length ? "broken:" + broken[0].alt : "ok:" + images.length;
});
</script>
"""


def _e(text):
    return html.escape(str(text))


def _page(title, body):
    return (f"<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\"><title>{_e(title)}</title>"
            f"<style>{STYLE}</style></head>\n<body data-rendered=\"pending\">\n{body}\n{CHECK_IMAGES}</body></html>\n")


def _write(path, text):
    path = Path(path)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(text, encoding="utf-8")
    tmp.replace(path)
    return path


def _coverage_section(doc, heading="Coverage"):
    doc = coverage.with_holes(json.loads(json.dumps(doc)))
    rows = []
    for g in doc["groups"]:
        if not g["observed"]:
            rows.append(f"<tr><td>{_e(g['name'])}</td><td colspan=\"2\">not observed (the device ran in another "
                        f"process)</td><td></td></tr>")
            continue
        holes = ", ".join("/".join(h) for h in g["holes"]) or "none"
        unreachable = sum("unreachable" in b for b in g["bins"])
        rows.append(f"<tr><td title=\"{_e(g['description'])}\">{_e(g['name'])}</td><td>{g['percent']} %"
                    f" <span class=\"bar\" style=\"width:{int(g['percent'])}px\"></span></td>"
                    f"<td>{g['covered']} of {g['reachable']} ({unreachable} unreachable)</td>"
                    f"<td class=\"holes\">{_e(holes)}</td></tr>")
    return (f"<h2>{_e(heading)}: {doc['percent']} % of {doc['reachable']} reachable bins</h2>"
            "<table><tr><th>group</th><th>covered</th><th>bins</th><th>holes</th></tr>" + "".join(rows) + "</table>")


def run_page(run_dir):
    """Writes RUN_DIR/report.html from the run's outputs; returns its path."""
    from irdma_sim.plots import run_plots  # matplotlib only when pictures are asked for
    run_dir = Path(run_dir)
    report = json.loads((run_dir / "report.json").read_text(encoding="utf-8"))
    verdict = "PASSED" if report["passed"] else "FAILED"
    cls = "pass" if report["passed"] else "fail"
    parts = [f"<h1>{_e(report['scenario'])} · seed {report['seed']}</h1>",
             f"<p class=\"verdict {cls}\">{verdict}</p>",
             f"<p>{_e(report['file'])} · {report['sim_time_ps'] / 1e9:.3f} ms simulated in "
             f"{report['wall_time_s']:.2f} s</p>"]
    checks = "".join(f"<tr><td class=\"{'pass' if c['passed'] else 'fail'}\">{'ok' if c['passed'] else 'FAIL'}</td>"
                     f"<td>{_e(c['name'])}</td><td>{_e(c['detail'])}</td></tr>" for c in report["checks"])
    parts.append(f"<h2>Checks</h2><table><tr><th></th><th>check</th><th>detail</th></tr>{checks}</table>")
    plots, traced = run_plots(run_dir)
    parts.append("<h2>Pictures</h2>")
    if not traced:
        parts.append("<p>This run wrote no trace (trace.bin or trace.jsonl): the pictures of CQEs, CEQEs and interrupts need one "
                     "(run without --no-trace).</p>")
    for p in plots:
        data = base64.b64encode(p.png).decode("ascii")
        parts.append(f"<figure><img alt=\"{_e(p.name)}\" src=\"data:image/png;base64,{data}\">"
                     f"<figcaption><b>{_e(p.title)}.</b> {_e(p.caption)}</figcaption></figure>")
    if (run_dir / "coverage.json").exists():
        parts.append(_coverage_section(coverage.load(run_dir / "coverage.json")))
    counts = report["counts"]
    rows = "".join(f"<tr><td>{_e(k)}</td><td>{_e(v)}</td></tr>" for k, v in counts.items()
                   if not isinstance(v, (list, dict)))
    parts.append(f"<h2>Counts</h2><table>{rows}</table>")
    parts.append(f"<h2>Summary</h2><pre>{_e(summary(report))}</pre>")
    return _write(run_dir / "report.html", _page(f"{report['scenario']} seed {report['seed']}: {verdict}", "\n".join(parts)))


def sweep_page(sweep_dir, slowest=5):
    """Writes SWEEP_DIR/report.html from its runs.jsonl, summary.json and coverage.json,
    and a page for each failing run and each of the `slowest` slowest; returns its path."""
    sweep_dir = Path(sweep_dir)
    runs = [json.loads(line) for line in (sweep_dir / "runs.jsonl").read_text(encoding="utf-8").splitlines() if line]
    summary_doc = json.loads((sweep_dir / "summary.json").read_text(encoding="utf-8"))
    timed = sorted((r for r in runs if r.get("wall_time_s") is not None), key=lambda r: -r["wall_time_s"])
    wanted = {r["out"] for r in runs if r["status"] != "PASS"} | {r["out"] for r in timed[:slowest]}
    linked = {}
    for out in wanted:
        if (Path(out) / "report.json").exists():
            linked[out] = run_page(out)

    def name(r):
        label = f"{r['scenario']} seed {r['seed']}"
        page = linked.get(r["out"])
        return f"<a href=\"{_e(os.path.relpath(page, sweep_dir))}\">{_e(label)}</a>" if page else _e(label)

    def num(value, fmt):
        return "" if value is None else format(value, fmt)

    ok = summary_doc["passed"] == summary_doc["runs"]
    parts = [f"<h1>Sweep: {summary_doc['runs']} runs</h1>",
             f"<p class=\"verdict {'pass' if ok else 'fail'}\">{summary_doc['passed']} passed, {summary_doc['failed']} "
             f"failed, {summary_doc['errors']} could not run, {summary_doc['interrupted']} interrupted</p>"]
    failing = [r for r in runs if r["status"] != "PASS"]
    if failing:
        items = "".join(f"<li>{name(r)}: {_e(r['status'])} {_e(', '.join(r['failed_checks']) or r['error'] or '')}</li>"
                        for r in failing)
        parts.append(f"<h2>Failing runs</h2><ul>{items}</ul>")
    items = "".join(f"<li>{name(r)}: {r['wall_time_s']:.2f} s wall</li>" for r in timed[:slowest])
    parts.append(f"<h2>Slowest runs</h2><ul>{items}</ul>")
    if (sweep_dir / "coverage.json").exists():
        parts.append(_coverage_section(coverage.load(sweep_dir / "coverage.json"), "Coverage, merged"))
    rows = "".join(
        f"<tr><td>{name(r)}</td><td class=\"{'pass' if r['status'] == 'PASS' else 'fail'}\">{_e(r['status'])}</td>"
        f"<td>{_e(r.get('completions') or '')}</td>"
        f"<td>{num(None if r.get('sim_time_ps') is None else r['sim_time_ps'] / 1e9, '.3f')}</td>"
        f"<td>{num(r.get('wall_time_s'), '.2f')}</td>"
        f"<td>{_e(', '.join(r['failed_checks']) or r.get('error') or '')}</td></tr>" for r in runs)
    parts.append("<h2>Every run</h2><table><tr><th>run</th><th>verdict</th><th>completions</th><th>simulated ms</th>"
                 f"<th>wall s</th><th>failed checks / error</th></tr>{rows}</table>")
    return _write(sweep_dir / "report.html", _page(f"sweep of {summary_doc['runs']} runs", "\n".join(parts)))
