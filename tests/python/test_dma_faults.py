"""Device reads the host refuses (config.link.faults.wqe_read_error_rate and
shadow_read_error_rate), as a validation engineer uses them: the shipped scenario holds over
seeds 1-20 with every refused read reported where it struck, the same seed strikes the same
reads, and runs that cannot carry them refuse them."""

import json

import pytest

import irdma_sim

from conftest import failed_checks
from irdma_sim.trace import lines as trace_lines


def test_every_refused_read_is_reported_and_nothing_else_is_lost_over_seeds_1_to_20(scenario, tmp_path):
    totals = {}
    fatal = 0
    for seed in range(1, 21):
        report = irdma_sim.run(scenario("dma_faults.yaml"), tmp_path / str(seed), seed=seed, trace=False)
        assert report["passed"], (seed, failed_checks(report))
        assert "every_refused_read_reported" in {c["name"] for c in report["checks"]}
        for key, n in report["counts"].items():
            if isinstance(n, int):
                totals[key] = totals.get(key, 0) + n
        fatal += sum(s["count"] for s in report["counts"]["by_status"] if s["name"] == "IB_WC_FATAL_ERR")
    assert totals["wqe_reads_failed"] >= 20 and totals["shadow_reads_failed"] >= 20, totals
    assert totals["wqe_fetch_errors"] == totals["wqe_reads_failed"]
    assert totals["cqs_catastrophic"] == totals["shadow_reads_failed"] == totals["cq_errors"]
    assert totals["pairs_torn_down"] >= totals["cq_errors"] // 2
    assert fatal > 0, "no refused fetch reached the workload as IB_WC_FATAL_ERR"


def test_the_same_seed_strikes_the_same_reads(scenario, tmp_path):
    a = irdma_sim.run(scenario("dma_faults.yaml"), tmp_path / "a", seed=6)
    b = irdma_sim.run(scenario("dma_faults.yaml"), tmp_path / "b", seed=6)
    assert a["counts"] == b["counts"]
    for name in ("trace.bin", "completions.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    events = [json.loads(line) for line in trace_lines(tmp_path / "a" / "trace.bin")]
    refused = [e for e in events if e["ev"] == "dma_read_fault"]
    assert {e["purpose"] for e in refused} == {"wqe_fetch", "cq_arm"}
    # Each refused fetch puts its QP in error at once (FLUSH_FATAL_ERR is minor 7); each
    # refused arm read loses its CQ.
    for fault in refused:
        if fault["purpose"] == "wqe_fetch":
            assert any(e["ev"] == "qp_error" and e["qp"] == fault["qp"] and e["sq_minor"] == 7 for e in events), fault
        else:
            assert any(e["ev"] == "cq_catastrophic" and e["cq"] == fault["cq"] for e in events), fault


@pytest.mark.parametrize("old,new,message", [
    ("wqe_read_error_rate: 0.004", "wqe_read_error_rate: -0.1", "config.link.faults.wqe_read_error_rate"),
    ("shadow_read_error_rate: 0.0008", "shadow_read_error_rate: yes", "config.link.faults.shadow_read_error_rate"),
    ("wqe_read_error_rate: 0.004", "wqe_read_eror_rate: 0.004", "unknown key"),
])
def test_bad_read_fault_settings_are_scenario_errors(old, new, message, refused_variant):
    stderr = refused_variant("dma_faults.yaml", old, new)
    assert message in stderr, stderr


@pytest.mark.parametrize("args,message", [
    (["--record"], "--record with link.faults"),
    (["--backend", "vfio-user"], "config.link.faults.shadow_read_error_rate: a served model cannot tell"),
    (["--backend", "vfio:0000:00:00.0"], "is silicon"),
])
def test_runs_that_cannot_carry_read_faults_refuse_them(args, message, refused_run):
    stderr = refused_run("dma_faults.yaml", *args)
    assert message in stderr, stderr


def test_a_read_fault_that_never_struck_is_a_warning(scenario, tmp_path, variant):
    path = variant("dma_faults.yaml", "shadow_read_error_rate: 0.0008", "shadow_read_error_rate: 0.0000001")
    report = irdma_sim.run(path, tmp_path / "out", seed=1, trace=False)
    assert report["passed"], failed_checks(report)
    assert report["warnings"] == ["config.link.faults.shadow_read_error_rate = 1e-07 struck nothing in this run"]
