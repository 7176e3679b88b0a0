"""A control QP that wedges (config.device.cqp_hang_after_ns), as a validation engineer uses
it: the shipped scenario holds over seeds 1-20 with the device given up once and every work
request completed once; a hang during bring-up is a clean failure; runs that cannot carry it
refuse it."""

import os
import subprocess

import pytest

import irdma_sim

RUNNER = os.path.join(os.environ["IRDMA_SIM_BIN"], "..", "model", "system", "irdma-sim-run")


def failed_checks(report):
    return {c["name"]: c["detail"] for c in report["checks"] if not c["passed"]}


def variant(scenario, tmp_path, old, new):
    """cqp_hang.yaml with one line changed."""
    text = open(scenario("cqp_hang.yaml")).read()
    assert old in text
    path = tmp_path / "variant.yaml"
    path.write_text(text.replace(old, new))
    return str(path)


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


def test_the_linux_timeout_gives_the_device_up_too(scenario, tmp_path):
    # Linux's 5 s: the run waits it out in simulated time and ends as it does with 20 ms.
    path = variant(scenario, tmp_path, "host:\n", "driver:\n    cqp_timeout_ms: 20\n  host:\n")
    fast = irdma_sim.run(path, tmp_path / "fast", seed=2, trace=False)
    slow = irdma_sim.run(scenario("cqp_hang.yaml"), tmp_path / "slow", seed=2, trace=False)
    assert fast["passed"] and slow["passed"], (failed_checks(fast), failed_checks(slow))
    assert slow["sim_time_ps"] - fast["sim_time_ps"] > 4_900_000_000_000


def test_a_hang_during_bring_up_is_a_clean_failure(scenario, tmp_path):
    path = variant(scenario, tmp_path, "cqp_hang_after_ns: 5000000", "cqp_hang_after_ns: 0")
    proc = subprocess.run([RUNNER, path, "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=120)
    # The run could not be carried out (3), not a bad scenario (2): the probe's command timed out.
    assert proc.returncode == 3, proc.stdout + proc.stderr
    assert "driver probe failed" in proc.stderr and "errno 110" in proc.stderr, proc.stderr


@pytest.mark.parametrize("old,new,message", [
    ("cqp_hang_after_ns: 5000000", "cqp_hang_after_ns: -5", "config.device.cqp_hang_after_ns"),
    ("cqp_hang_after_ns: 5000000", "cqp_hang_after_ns: soon", "config.device.cqp_hang_after_ns"),
    ("host:\n", "driver:\n    cqp_timeout_ms: 0\n  host:\n", "config.driver.cqp_timeout_ms"),
])
def test_bad_hang_settings_are_scenario_errors(scenario, tmp_path, old, new, message):
    path = variant(scenario, tmp_path, old, new)
    proc = subprocess.run([RUNNER, path, "--out", str(tmp_path / "out")], capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert message in proc.stderr and "variant.yaml" in proc.stderr, proc.stderr


def test_a_served_model_refuses_it(scenario, tmp_path):
    proc = subprocess.run([RUNNER, scenario("cqp_hang.yaml"), "--out", str(tmp_path / "out"), "--backend", "vfio-user"],
                          capture_output=True, text=True, timeout=60)
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "config.device.cqp_hang_after_ns: a served model's clock" in proc.stderr, proc.stderr
