"""A reset of the function under the driver (config.device.function_reset_at_ns), as a
validation engineer uses it: the shipped scenario holds over seeds 1-20 with the reset found
and the device given up once, every work request completed once; without the watchdog
nothing tells the driver and the run says so; a session recovers by probing the driver
again; runs that cannot carry it refuse it."""

import json
import textwrap

import pytest

import irdma_sim

from conftest import failed_checks
from irdma_sim.trace import lines as trace_lines


def test_the_reset_is_found_and_nothing_is_lost_over_seeds_1_to_20(scenario, tmp_path):
    for seed in range(1, 21):
        report = irdma_sim.run(scenario("function_reset.yaml"), tmp_path / str(seed), seed=seed, trace=False)
        assert report["passed"], (seed, failed_checks(report))
        counts = report["counts"]
        assert counts["function_resets"] == 1 and counts["function_resets_found"] == 1, counts
        assert counts["device_resets_requested"] == 1 and counts["device_fatal_events"] == 1, counts
        assert counts["mmio_refused_in_reset"] > 0, "no doorbell between the reset and its finding?"
        by_status = {s["name"]: s["count"] for s in counts["by_status"]}
        # The device's completions before the reset, software flushes after it.
        assert by_status["IB_WC_SUCCESS"] > 0 and by_status["IB_WC_WR_FLUSH_ERR"] > 0, by_status
        assert "device_given_up_after_function_reset" in {c["name"] for c in report["checks"]}


def test_the_trace_says_when_the_function_reset_and_when_its_engines_were_done(scenario, tmp_path):
    irdma_sim.run(scenario("function_reset.yaml"), tmp_path / "out", seed=4)
    events = [line for line in trace_lines(tmp_path / "out" / "trace.bin")
              if '"ev":"function_reset' in line]
    assert events[0] == '{"t_ps":5000000000,"ev":"function_reset","cause":"fault"}', events
    assert '"ev":"function_reset_done"' in events[1] and len(events) == 2, events


def test_without_the_watchdog_the_run_fails_and_says_why(variant, tmp_path):
    # Nothing tells the driver (Linux's irdma hears of a reset from the LAN driver): the
    # traffic stalls, and only teardown's first control command finds the function gone.
    path = variant("function_reset.yaml", "    eq_watchdog_us: 200\n", "    cqp_timeout_ms: 50\n")
    report = irdma_sim.run(path, tmp_path / "out", seed=1, trace=False)
    assert not report["passed"]
    failed = failed_checks(report)
    assert "no_stall" in failed, failed
    assert "0 found by the driver's watchdog, 1 reset(s) requested" in failed["device_given_up_after_function_reset"]
    assert report["counts"]["device_fatal_events"] == 1, "the control command that found it gone gave it up"


def test_a_reset_at_any_moment_of_bring_up_and_setup_is_a_clean_failure(variant, run_scenario_file, tmp_path):
    # Every 5 us of the first 150: before the driver enables the function it strikes nothing;
    # during the probe the probe fails (exit 3); while the workload sets up, its setup check
    # fails (exit 1); after, the run passes. Never a crash or a hang (a reset once met the
    # workload's device-fatal handler before its ready set was sized).
    outcomes = set()
    for at_ns in range(0, 150_000, 5_000):
        path = variant("function_reset.yaml", "function_reset_at_ns: 5000000", f"function_reset_at_ns: {at_ns}")
        proc = run_scenario_file(path, tmp_path / str(at_ns), "--no-trace", timeout=120)
        assert proc.returncode in (0, 1, 3), (at_ns, proc.returncode, proc.stderr[-2000:])
        if proc.returncode == 3:
            assert "driver probe failed" in proc.stderr, proc.stderr
        if proc.returncode == 1:
            report = json.loads((tmp_path / str(at_ns) / "report.json").read_text())
            assert "setup" in failed_checks(report), (at_ns, failed_checks(report))
            # The log says what failed, not only where the report is.
            assert "irdma-sim-run: check setup failed: " in proc.stderr, proc.stderr
        outcomes.add(proc.returncode)
    assert outcomes == {0, 1, 3}, outcomes


def test_a_session_recovers_by_probing_the_driver_again(run_python):
    proc = run_python(textwrap.dedent("""
        from irdma_sim import Session, VerbsError
        s = Session(config_yaml="device: {function_reset_at_ns: 300000}\\ndriver: {eq_watchdog_us: 50}")
        def pair():
            cq = s.pool_get(16, comp_vector=-1)
            return (cq,) + s.create_qp_pair(cq, cq, sq_depth=4, rq_depth=4, max_msg_bytes=64)
        def exchange(cq, a, b, step_ns=10000):
            s.post_recv(b)
            s.post_send(a, b"ping")
            got = []
            for _ in range(100):
                if len(got) == 2:
                    break
                s.run_for_ns(step_ns)
                got += s.poll(cq)
            return sorted(c["status"] for c in got)
        old = pair()
        assert exchange(*old) == [0, 0]
        s.run_for_ns(400000)  # past the reset
        # Flushed in software, after the driver's flush delay (20 ms).
        assert exchange(*old, step_ns=1000000) == [5, 5], "flushed: the device was given up"
        assert s.counters()["function_resets"] == 1
        try:
            s.alloc_cq(16)
            raise AssertionError("a new CQ on a device given up")
        except VerbsError as e:
            assert e.errno == 16, e
        assert s.counters()["device_resets_requested"] == 1
        s.recover()
        assert exchange(*pair()) == [0, 0], "the driver probed again drives the device"
        # The new driver counts from 0; the device goes on counting (the recovery's FLR too).
        assert s.counters()["device_resets_requested"] == 0 and s.counters()["function_resets"] == 2
        s.shutdown()
        print("recovered")
    """))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "recovered" in proc.stdout


@pytest.mark.parametrize("old,new", [
    ("function_reset_at_ns: 5000000", "function_reset_at_ns: -1"),
    ("function_reset_at_ns: 5000000", "function_reset_at_ns: later"),
])
def test_bad_reset_times_are_scenario_errors(old, new, refused_variant):
    stderr = refused_variant("function_reset.yaml", old, new)
    assert "config.device.function_reset_at_ns" in stderr, stderr


def test_a_reset_after_the_run_is_a_warning(variant, tmp_path):
    path = variant("function_reset.yaml", "function_reset_at_ns: 5000000", "function_reset_at_ns: 900000000000")
    report = irdma_sim.run(path, tmp_path / "out", seed=1, trace=False)
    assert report["passed"], failed_checks(report)
    assert report["counts"]["function_resets"] == 0
    assert report["warnings"] == ["config.device.function_reset_at_ns = 900000000000 struck nothing in this run: "
                                  "it ended before, or came before the driver enabled the function"]


def test_a_served_model_refuses_it(refused_run):
    stderr = refused_run("function_reset.yaml", "--backend", "vfio-user")
    assert "config.device.function_reset_at_ns: a served model's clock" in stderr, stderr
