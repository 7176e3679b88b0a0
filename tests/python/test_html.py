"""The HTML reports as a reader sees them: rendered by a real browser (Debian's chromium,
headless), every picture decoded, a broken picture caught, the sweep's page linking the
runs it should."""

import json
import re
import shutil
import subprocess
import sys

import pytest

CHROMIUM = shutil.which("chromium")


def cli(*args):
    return subprocess.run([sys.executable, "-m", "irdma_sim", *args], capture_output=True, text=True, timeout=600)


def chromium(*args):
    assert CHROMIUM, "chromium is not installed: make deps installs it (Debian's chromium)"
    return subprocess.run([CHROMIUM, "--headless", "--no-sandbox", "--disable-gpu", "--hide-scrollbars", *args],
                          capture_output=True, text=True, timeout=120)


def rendered(page):
    """What the page's own check says once the browser loaded it: ok:N or broken:NAME."""
    dom = chromium("--dump-dom", page.as_uri()).stdout
    match = re.search(r'data-rendered="([^"]*)"', dom)
    assert match, dom[:500]
    return match.group(1)


def test_a_runs_page_renders_with_every_picture(scenario, tmp_path):
    out = tmp_path / "run"
    proc = cli("run", scenario("events.yaml"), "--out", str(out), "--html")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    page = out / "report.html"
    assert f"report     {page}" in proc.stdout
    text = page.read_text()
    for section in ("Checks", "Pictures", "Coverage", "Counts", "every_signaled_wr_completed_once", "PASSED"):
        assert section in text
    # A traced run: latency, stages, occupancy, CEQs, interrupts.
    assert rendered(page) == "ok:5"
    shot = tmp_path / "shot.png"
    chromium(f"--screenshot={shot}", "--window-size=1100,3000", page.as_uri())
    import matplotlib.image
    pixels = matplotlib.image.imread(shot)
    assert pixels.shape[0] == 3000 and pixels.shape[1] == 1100
    assert (pixels[:, :, :3] < 0.5).any(axis=2).mean() > 0.01, "the screenshot is blank"


def test_a_broken_picture_is_caught(scenario, tmp_path):
    out = tmp_path / "run"
    assert cli("run", scenario("smoke.yaml"), "--out", str(out), "--no-trace", "--html").returncode == 0
    page = out / "report.html"
    assert rendered(page) == "ok:2"  # without a trace: latency and completions over time only
    text = page.read_text()
    assert "wrote no trace" in text
    broken = tmp_path / "broken.html"
    broken.write_text(text.replace("base64,iVBOR", "base64,XXXXX", 1))
    assert rendered(broken) == "broken:latency"


def test_a_sweeps_page_lists_every_run_and_links_the_failing_and_slowest(scenario, tmp_path):
    bad = tmp_path / "bad.yaml"
    bad.write_text("name: bad\nqp_pairs:\n  - name: p\n    sq_dept: 8\n")
    out = tmp_path / "sw"
    proc = cli("sweep", scenario("smoke.yaml"), scenario("overflow.yaml"), str(bad), "--seeds", "1-4",
               "--out", str(out), "--html")
    assert proc.returncode == 2, proc.stdout + proc.stderr
    page = out / "report.html"
    text = page.read_text()
    assert "8 passed, 0 failed, 4 could not run" in text
    runs = [json.loads(l) for l in (out / "runs.jsonl").read_text().splitlines()]
    for r in runs:
        assert f"{r['scenario']} seed {r['seed']}" in text
    slowest = sorted((r for r in runs if r["wall_time_s"] is not None), key=lambda r: -r["wall_time_s"])[:5]
    for r in slowest:
        assert (out / r["scenario"] / f"seed{r['seed']}" / "report.html").exists()
        assert f'href="{r["scenario"]}/seed{r["seed"]}/report.html"' in text
    assert "sq_dept" in text and "Failing runs" in text and "Coverage, merged" in text
    assert rendered(page) == "ok:0"
    assert rendered(out / slowest[0]["scenario"] / f"seed{slowest[0]['seed']}" / "report.html") == "ok:2"


def test_report_of_a_directory_with_no_run_says_so(tmp_path):
    proc = cli("report", str(tmp_path))
    assert proc.returncode == 2 and "holds no run (report.json) or sweep (summary.json)" in proc.stderr
    (tmp_path / "report.json").write_text("{cut short")
    proc = cli("report", str(tmp_path))
    assert proc.returncode == 2 and "cannot render" in proc.stderr and "Traceback" not in proc.stderr
