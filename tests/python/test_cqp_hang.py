"""A control QP that wedges (config.device.cqp_hang_after_ns), as a validation engineer uses
it: the shipped scenario holds over seeds 1-20 with the device given up once and every work
request completed once; a hang during bring-up is a clean failure; runs that cannot carry it
refuse it."""

import pytest

import irdma_sim

from conftest import failed_checks


def test_the_device_is_given_up_once_and_nothing_is_lost_over_seeds_1_to_20(scenario, tmp_path):
    for seed in range(1, 21):
        report = irdma_sim.run(scenario("cqp_hang.yaml"), tmp_path / str(seed), seed=seed, trace=False)
        assert report["passed"], (seed, failed_checks(report))
        counts = report["counts"]
        assert counts["cqp_hung"] == 1 and counts["device_resets_requested"] == 1, counts
        assert counts["device_fatal_events"] == 1
        assert counts["dma_blocked"] > 0, "the device tried nothing after it was quiesced?"
        by_status = {s["name"]: s["count"] for s in counts["by_status"]}
        # The device's completions before the hang, software flushes after it.
        assert by_status["IB_WC_SUCCESS"] > 0 and by_status["IB_WC_WR_FLUSH_ERR"] > 0, by_status
        assert "device_given_up_after_cqp_hang" in {c["name"] for c in report["checks"]}


def test_the_linux_timeout_gives_the_device_up_too(scenario, tmp_path, variant):
    # Linux's 5 s: the run waits it out in simulated time and ends as it does with 20 ms.
    path = variant("cqp_hang.yaml", "host:\n", "driver:\n    cqp_timeout_ms: 20\n  host:\n")
    fast = irdma_sim.run(path, tmp_path / "fast", seed=2, trace=False)
    slow = irdma_sim.run(scenario("cqp_hang.yaml"), tmp_path / "slow", seed=2, trace=False)
    assert fast["passed"] and slow["passed"], (failed_checks(fast), failed_checks(slow))
    assert slow["sim_time_ps"] - fast["sim_time_ps"] > 4_900_000_000_000


def test_a_hang_during_bring_up_is_a_clean_failure(scenario, tmp_path, variant, run_scenario_file):
    path = variant("cqp_hang.yaml", "cqp_hang_after_ns: 5000000", "cqp_hang_after_ns: 0")
    proc = run_scenario_file(path, tmp_path / "out", timeout=120)
    # The run could not be carried out (3), not a bad scenario (2): the probe's command timed out.
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "driver probe failed" in proc.stderr and "errno 110" in proc.stderr, proc.stderr


@pytest.mark.parametrize("old,new,message", [
    ("cqp_hang_after_ns: 5000000", "cqp_hang_after_ns: -5", "config.device.cqp_hang_after_ns"),
    ("cqp_hang_after_ns: 5000000", "cqp_hang_after_ns: soon", "config.device.cqp_hang_after_ns"),
    ("host:\n", "driver:\n    cqp_timeout_ms: 0\n  host:\n", "config.driver.cqp_timeout_ms"),
])
def test_bad_hang_settings_are_scenario_errors(old, new, message, refused_variant):
    stderr = refused_variant("cqp_hang.yaml", old, new)
    assert message in stderr, stderr


def test_a_hang_after_the_run_is_a_warning(variant, tmp_path):
    path = variant("cqp_hang.yaml", "cqp_hang_after_ns: 5000000", "cqp_hang_after_ns: 900000000000")
    report = irdma_sim.run(path, tmp_path / "out", seed=1, trace=False)
    assert report["passed"], failed_checks(report)
    assert report["counts"]["cqp_hung"] == 0
    assert report["warnings"] == ["config.device.cqp_hang_after_ns = 900000000000 struck nothing in this run: "
                                  "the control QP took no command after it"]


def test_a_served_model_refuses_it(refused_run):
    stderr = refused_run("cqp_hang.yaml", "--backend", "vfio-user")
    assert "config.device.cqp_hang_after_ns: a served model's clock" in stderr, stderr
