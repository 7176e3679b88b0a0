"""The RTL CQ writer in the loop, as a user reaches it: the scenario key, the --cq-writer
flag of run and replay, the report's section and summary, toggle coverage, bad input."""

import json
import os
import subprocess
import sys
from pathlib import Path

import yaml

import irdma_sim
from irdma_sim.report import summary


def cli(*args):
    return subprocess.run([sys.executable, "-m", "irdma_sim", *args], capture_output=True, text=True, timeout=600)


def small(scenario, tmp_path, name, **device):
    """events.yaml, its traffic cut down, with `device` keys added."""
    doc = yaml.safe_load(open(scenario("events.yaml")))
    doc.setdefault("config", {}).setdefault("device", {}).update(device)
    doc["traffic"]["sends_per_qp"] = 200
    path = tmp_path / f"{name}.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def test_the_flag_puts_the_rtl_in_the_loop_and_the_outputs_are_the_tlm_runs(scenario, tmp_path):
    path = small(scenario, tmp_path, "plain")
    tlm = irdma_sim.run(path, tmp_path / "tlm")
    assert "cq_writer" not in tlm, "a TLM run's report is as it was"
    # The stage costs are the RTL's cycles, charged where it spends them: with either as the
    # clock, every output is the TLM run's.
    for writer in ("rtl", "rtl:model"):
        out = tmp_path / writer.replace(":", "_")
        proc = cli("run", str(path), "--out", str(out), "--cq-writer", writer)
        assert proc.returncode == 0, proc.stderr
        for name in ("completions.jsonl", "trace.bin", "coverage.json"):
            assert (tmp_path / "tlm" / name).read_bytes() == (out / name).read_bytes(), (writer, name)
    assert "rtl_coverage.dat" in proc.stdout and "RTL        cq_writer in lock-step" in proc.stdout
    report = json.loads((tmp_path / "rtl_model" / "report.json").read_text())
    w = report["cq_writer"]
    assert w["timing"] == "model" and w["lockstep_requests"] > 1000
    rows = {r["request"]: r for r in w["correlation"]}
    written = sum(rows[k]["count"] for k in ("cqe", "extended_cqe", "cqe_head_read") if k in rows)
    assert written == report["counts"]["cqes_written"] + report["counts"]["ccq_cqes"]
    for row in rows.values():  # the fitted stage costs are the RTL's cycles in the loop
        assert abs(row["rtl_cycles_mean"] - row["model_cycles_mean"]) <= 0.1 * row["rtl_cycles_mean"], row
    cov = w["rtl_coverage"]
    assert 0 < cov["line_hit"] <= cov["line_total"] and cov["toggle_total"] == 0
    assert (tmp_path / "rtl_model" / "rtl_coverage.dat").stat().st_size > 0
    assert "RTL/model" in summary(report) and "lines " in summary(report)


def test_with_costs_of_its_own_the_rtls_clock_differs_and_the_verdict_holds(scenario, tmp_path):
    path = small(scenario, tmp_path, "rtl", cq_writer="rtl", cycles={"cqe_write": 1})
    report = irdma_sim.run(path, tmp_path / "out")
    assert report["passed"] and report["cq_writer"]["timing"] == "rtl"
    cqe = next(r for r in report["cq_writer"]["correlation"] if r["request"] == "cqe")
    assert (cqe["rtl_cycles_mean"], cqe["model_cycles_mean"]) == (11, 8)


def test_toggle_coverage_is_counted_when_asked_for(scenario, tmp_path):
    path = small(scenario, tmp_path, "toggle", cq_writer="rtl", rtl_toggle_coverage=True)
    cov = irdma_sim.run(path, tmp_path / "out", trace=False)["cq_writer"]["rtl_coverage"]
    assert 0 < cov["toggle_hit"] < cov["toggle_total"]


def test_a_recording_replays_identically_against_the_rtl(scenario, tmp_path):
    path = small(scenario, tmp_path, "rec")
    assert irdma_sim.run(path, tmp_path / "rec", record=True)["passed"]
    for writer in ("rtl:model", "rtl"):
        r = irdma_sim.replay(tmp_path / "rec", cq_writer=writer)
        assert r["identical"] and r["writes"] > 1000, (writer, r["difference"])


def test_bad_choices_are_one_clear_error(scenario, tmp_path):
    proc = cli("run", scenario("smoke.yaml"), "--out", str(tmp_path / "o"), "--cq-writer", "verilog")
    assert proc.returncode == 2 and "invalid choice: 'verilog'" in proc.stderr
    for device, message in (({"cq_writer": "vhdl"}, "cq_writer"),
                            ({"rtl_toggle_coverage": True}, "coverage is counted by the RTL CQ writer"),
                            ({"cq_writer_timing": "fast"}, "cq_writer_timing")):
        proc = cli("run", str(small(scenario, tmp_path, "bad", **device)), "--out", str(tmp_path / "o"))
        assert proc.returncode == 2 and message in proc.stderr, proc.stderr
    # A command line's CQ writer that would leave a setting of the scenario's unused.
    for device, flag, message in (({"cq_writer": "rtl", "rtl_toggle_coverage": True}, "tlm", "rtl_toggle_coverage"),
                                  ({"cq_writer": "rtl", "cq_writer_timing": "model"}, "tlm", "cq_writer_timing"),
                                  ({"formatter": "rtl"}, "rtl", "'formatter'")):
        proc = cli("run", str(small(scenario, tmp_path, "over", **device)), "--out", str(tmp_path / "o"),
                   "--cq-writer", flag)
        assert proc.returncode == 2 and message in proc.stderr and "command line" in proc.stderr, proc.stderr
    runner = Path(os.environ["IRDMA_SIM_BIN"]).parent / "model" / "system" / "irdma-sim-run"
    run = subprocess.run([str(runner), scenario("smoke.yaml"), "--out", str(tmp_path / "o"), "--cq-writer", "rtl:fast"],
                         capture_output=True, text=True)
    assert run.returncode == 2 and "--cq-writer: the CQ writer is tlm, rtl or rtl:model" in run.stderr


def test_a_served_device_runs_the_rtl_and_the_report_says_where_its_figures_are(scenario, tmp_path):
    path = small(scenario, tmp_path, "served", cq_writer="rtl", rtl_vcd="served.vcd")
    report = irdma_sim.run(path, tmp_path / "out", backend="vfio-user")
    assert report["passed"] and "cq_writer" not in report
    # The server's process ran the RTL: its waveform is there, in simulated time.
    vcd = (tmp_path / "out" / "served.vcd").read_text()
    assert " m_axi_awaddr " in vcd and vcd.count("\n#") > 1000
    assert any("ran in the served device's process" in w for w in report["warnings"]), report["warnings"]
