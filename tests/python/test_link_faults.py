"""Link and interrupt faults (config.link.faults), as a validation engineer uses them: the
shipped scenario holds over seeds 1-20, the checks catch what the driver cannot survive, and
bad settings are scenario errors."""

import json
import os
import subprocess

import pytest

import irdma_sim

from conftest import failed_checks
from irdma_sim.trace import lines as trace_lines


def test_every_fault_kind_strikes_and_nothing_is_lost_over_seeds_1_to_20(scenario, tmp_path):
    totals = {}
    for seed in range(1, 21):
        report = irdma_sim.run(scenario("link_faults.yaml"), tmp_path / str(seed), seed=seed, trace=False)
        assert report["passed"], (seed, failed_checks(report))
        for key, n in report["counts"].items():
            if isinstance(n, int):
                totals[key] = totals.get(key, 0) + n
        assert "lost_interrupts_recovered" in {c["name"] for c in report["checks"]} or report["counts"]["msix_lost"] == 0
    for kind in ("msix_lost", "msix_duplicated", "msix_delayed", "posted_writes_delayed", "posted_writes_split",
                 "msix_masked_by_host", "msix_sent_on_unmask"):
        assert totals[kind] > 100, (kind, totals[kind])
    assert totals["missed_interrupts_recovered"] >= totals["msix_lost"] // 2
    assert totals["extended_cqes"] > 0  # halves split and held apart too


def test_the_same_seed_draws_the_same_faults(scenario, tmp_path):
    a = irdma_sim.run(scenario("link_faults.yaml"), tmp_path / "a", seed=4)
    b = irdma_sim.run(scenario("link_faults.yaml"), tmp_path / "b", seed=4)
    assert a["counts"] == b["counts"]
    for name in ("trace.bin", "completions.jsonl"):
        assert (tmp_path / "a" / name).read_bytes() == (tmp_path / "b" / name).read_bytes(), name
    trace = "\n".join(trace_lines(tmp_path / "a" / "trace.bin"))
    for kind in ("msix_lost", "msix_duplicated", "msix_delayed"):
        assert f'"ev":"{kind}"' in trace, kind


def test_without_the_watchdog_a_lost_interrupt_stalls_its_completions(scenario, tmp_path, variant):
    path = variant("link_faults.yaml", "eq_watchdog_us: 50", "eq_watchdog_us: 0")
    report = irdma_sim.run(path, tmp_path / "out", seed=1, trace=False)
    failed = failed_checks(report)
    assert "no_stall" in failed and "lost_interrupts_recovered" in failed, failed


def test_a_cqe_torn_against_the_ordering_rules_is_caught(scenario, tmp_path, variant):
    # split_reversed lands a CQE's valid qword before the rest: the poll path takes stale
    # words, and the scoreboard must see it.
    path = variant("link_faults.yaml", "split_rate: 0.1", "split_rate: 0.01\n      split_reversed: true")
    report = irdma_sim.run(path, tmp_path / "out", seed=1, trace=False)
    failed = failed_checks(report)
    assert {"every_signaled_wr_completed_once", "every_message_received_once_in_order"} <= set(failed), failed


@pytest.mark.parametrize("old,new,message", [
    ("msix_lost_rate: 0.05", "msix_lost_rate: 1.5", "config.link.faults.msix_lost_rate"),
    ("split_rate: 0.1\n      split_gap_ns: 700", "split_rate: 0\n      split_reversed: true",
     "'split_reversed' needs a split_rate above 0"),
    ("msix_delayed_rate: 0.05", "msix_delayed_rate: 0", "'msix_delay_max_ns' needs a msix_delayed_rate above 0"),
    ("split_rate: 0.1", "split_rate: 0", "'split_gap_ns' needs a split_rate above 0"),
    ("msix_delay_max_ns: 20000", "msix_delay_max_ns: 20000\n      seed: 3", "its own seed"),
    ("eq_watchdog_us: 50", "eq_watchdog_us: 50\n  sync: {mode: loose}", "need sync.mode approximate"),
    ("max_cqe: 512", "max_cqe: 512\n    ceq_itr_us: 60", "within device.ceq_itr_us"),
    ("posted_delay_rate: 0.02", "posted_delay_rat: 0.02", "unknown key"),
])
def test_bad_fault_settings_are_scenario_errors(old, new, message, refused_variant):
    stderr = refused_variant("link_faults.yaml", old, new)
    assert message in stderr, stderr


@pytest.mark.parametrize("args,message", [
    (["--record"], "--record with link.faults"),
    (["--backend", "vfio-user"], "config.link.faults.posted_delay_rate, config.link.faults.split_rate, "
                                 "config.link.faults.msix_delayed_rate, config.link.faults.msix_mask_rate: a served "
                                 "model cannot carry these"),
    (["--backend", "vfio:0000:00:00.0"], "is silicon"),
])
def test_runs_that_cannot_carry_link_faults_refuse_them(args, message, refused_run):
    stderr = refused_run("link_faults.yaml", *args)
    assert message in stderr, stderr


def test_a_fault_kind_that_never_struck_is_a_warning(scenario, tmp_path, variant):
    path = variant("link_faults.yaml", "msix_delayed_rate: 0.05", "msix_delayed_rate: 0.0000001")
    report = irdma_sim.run(path, tmp_path / "out", seed=1, trace=False)
    assert report["passed"]
    assert report["warnings"] == ["config.link.faults.msix_delayed_rate = 1e-07 struck nothing in this run"]


def test_a_served_model_loses_and_duplicates_interrupts_too(scenario, tmp_path):
    # The driver on this process's OS threads, its watchdog against real interrupt threads.
    report = irdma_sim.run(scenario("interrupt_faults.yaml"), tmp_path / "out", backend="vfio-user", trace=False)
    assert report["passed"], failed_checks(report)
    counts = report["counts"]
    assert counts["msix_lost"] > 0 and counts["msix_duplicated"] > 0, counts
    assert counts["missed_interrupts_recovered"] > 0


def test_a_served_model_refuses_the_faults_it_cannot_carry(tmp_path):
    # Served alone, as `irdma-sim serve` does: a fault it would not inject is an error, not a no-op.
    config = tmp_path / "config.yaml"
    config.write_text("link:\n  faults: {msix_lost_rate: 0.1, msix_mask_rate: 0.1}\n")
    serve = os.path.join(os.environ["IRDMA_SIM_BIN"], "..", "model", "system", "irdma-sim-serve")
    proc = subprocess.run([serve, "--socket", str(tmp_path / "s.sock"), "--config", str(config), "--once"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "config.link.faults.msix_mask_rate: a served model cannot carry" in proc.stderr, proc.stderr
    assert "serving at" not in proc.stderr
