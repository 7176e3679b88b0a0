"""Runs cut short: Ctrl-C, SIGTERM, a parent killed outright. The outputs stay whole
(valid JSON lines, a report that says when the run was interrupted) and no process is
left behind."""

import json
import os
import pty
import signal
import subprocess
import sys
import time

import pytest
import yaml
from irdma_sim.trace import lines as trace_lines


def long_scenario(scenario, tmp_path):
    doc = yaml.safe_load(open(scenario("smoke.yaml")))
    doc["traffic"]["sends_per_qp"] = 10_000_000  # minutes: only a signal ends it here
    path = tmp_path / "long.yaml"
    path.write_text(yaml.safe_dump(doc))
    return path


def wait_for_traffic(out, proc):
    """Until the run is well into its traffic."""
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and proc.poll() is None:
        completions = out / "completions.jsonl"
        if completions.exists() and completions.stat().st_size > 200_000:
            return
        time.sleep(0.05)
    raise AssertionError("the run never got going")


def alive(pid):
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    with open(f"/proc/{pid}/stat") as f:
        return f.read().split(")")[1].split()[0] != "Z"


def workers_of(out):
    """PIDs of run processes writing into `out`."""
    pids = []
    for pid in os.listdir("/proc"):
        if pid.isdigit():
            try:
                with open(f"/proc/{pid}/cmdline", "rb") as f:
                    cmd = f.read().split(b"\0")
            except OSError:
                continue
            if b"irdma_sim._worker" in cmd and str(out).encode() in cmd:
                pids.append(int(pid))
    return pids


def assert_outputs_whole(out, signal_name, traffic_seen=True):
    """`traffic_seen`: the signal came after the run's first completion (else it may have
    come while the run set up, and completions.jsonl may be empty)."""
    for name in ("completions.jsonl", "trace.bin"):
        lines = list(trace_lines(out / name))  # a binary trace cut mid-record raises
        assert lines or (name == "completions.jsonl" and not traffic_seen), name
        for line in lines:
            json.loads(line)
    report = json.loads((out / "report.json").read_text())
    assert report["interrupted"]["signal"] == signal_name
    assert 0 < report["interrupted"]["sim_time_ps"] <= report["sim_time_ps"]
    assert not report["passed"]
    checks = {c["name"]: c for c in report["checks"]}
    assert not checks["interrupted"]["passed"] and signal_name in checks["interrupted"]["detail"]
    # Cut short, then torn down as a run stopped on purpose is: nothing leaked or lost.
    for name in ("teardown_clean", "no_dma_memory_left_mapped", "no_completion_left_in_rings",
                 "cqes_written_equal_completions_delivered"):
        assert checks[name]["passed"], checks[name]
    completions = sum(1 for _ in open(out / "completions.jsonl"))
    assert completions == report["counts"]["completions_delivered"]
    return report


def cli(*args, **popen_args):
    return subprocess.Popen([sys.executable, "-m", "irdma_sim", *args], **popen_args)


@pytest.mark.parametrize("sig,name", [(signal.SIGINT, "SIGINT"), (signal.SIGTERM, "SIGTERM")])
def test_a_signal_stops_the_run_cleanly(scenario, tmp_path, sig, name):
    out = tmp_path / "out"
    proc = cli("run", str(long_scenario(scenario, tmp_path)), "--out", str(out),
               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_traffic(out, proc)
    proc.send_signal(sig)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 128 + sig, stdout + stderr
    assert "FAIL interrupted: stopped by " + name in stdout
    assert_outputs_whole(out, name)


def test_the_cpp_runner_stops_cleanly_too(tmp_path, scenario):
    out = tmp_path / "out"
    runner = os.path.join(os.environ["IRDMA_SIM_BIN"], "..", "model", "system", "irdma-sim-run")
    proc = subprocess.Popen([runner, str(long_scenario(scenario, tmp_path)), "--out", str(out)],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_traffic(out, proc)
    proc.send_signal(signal.SIGINT)
    stdout, _ = proc.communicate(timeout=60)
    assert proc.returncode == 130 and stdout.startswith("INTERRUPTED")
    assert_outputs_whole(out, "SIGINT")


def test_a_killed_parent_takes_its_run_with_it(scenario, tmp_path):
    out = tmp_path / "out"
    proc = cli("run", str(long_scenario(scenario, tmp_path)), "--out", str(out),
               stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    wait_for_traffic(out, proc)
    workers = workers_of(out)
    assert len(workers) == 1
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + 60
    while alive(workers[0]) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not alive(workers[0]), "the run outlived its parent"
    assert_outputs_whole(out, "SIGTERM")  # its death signal: it stopped cleanly


def test_sweep_interrupted_stops_every_run_and_says_so(scenario, tmp_path):
    out = tmp_path / "sw"
    long = long_scenario(scenario, tmp_path)
    proc = cli("sweep", str(long), "--seeds", "1-4", "--jobs", "2", "--out", str(out), "--trace",
               stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_traffic(out / "long" / "seed1", proc)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=60)
    assert proc.returncode == 130, stdout + stderr
    lines = stdout.splitlines()
    runs = [l for l in lines if l.split(" ")[0] in ("PASS", "FAIL", "ERROR", "INTERRUPTED")]
    assert sorted(l.split(":")[0] for l in runs) == ["INTERRUPTED long seed 1", "INTERRUPTED long seed 2"], stdout
    assert "2 interrupted; the sweep was stopped" in lines[-1]
    assert not (out / "long" / "seed3").exists(), "no run starts after the interruption"
    assert_outputs_whole(out / "long" / "seed1", "SIGINT")
    # The second run may not have begun when the signal came: then it made no report; or it
    # may have been setting up, before its first completion.
    if (out / "long" / "seed2" / "report.json").exists():
        assert_outputs_whole(out / "long" / "seed2", "SIGINT", traffic_seen=False)
    else:
        assert "SIGINT came before the run began" in lines[1] + lines[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] == 2 and summary["runs"] == 2 and summary["exit_status"] == 130
    assert not workers_of(out)


def test_progress_shows_on_a_terminal_only(scenario, tmp_path):
    doc = yaml.safe_load(open(scenario("smoke.yaml")))
    doc["traffic"]["sends_per_qp"] = 150_000  # a few seconds
    path = tmp_path / "mid.yaml"
    path.write_text(yaml.safe_dump(doc))
    leader, follower = pty.openpty()
    proc = cli("run", str(path), "--out", str(tmp_path / "tty"), "--no-trace",
               stdout=subprocess.PIPE, stderr=follower, text=True)
    os.close(follower)
    shown = b""
    while True:
        try:
            chunk = os.read(leader, 4096)
        except OSError:  # the terminal's other end closed
            break
        if not chunk:
            break
        shown += chunk
    proc.wait(timeout=120)
    assert proc.returncode == 0
    assert b"completions (" in shown and b"% of sends posted" in shown, shown
    quiet = cli("run", str(path), "--out", str(tmp_path / "pipe"), "--no-trace",
                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    _, stderr = quiet.communicate(timeout=120)
    assert quiet.returncode == 0 and stderr == ""
