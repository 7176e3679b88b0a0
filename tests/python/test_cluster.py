"""Sweeps past one machine: on a Dask cluster (a LocalCluster of two workers here, as a
real scheduler's address would be given) and as a Slurm job array whose tasks are run here
the way Slurm would run them, then gathered."""

import json
import os
import subprocess
import sys

import pytest


def cli(*args, timeout=600):
    return subprocess.run([sys.executable, "-m", "irdma_sim", *args], capture_output=True, text=True, timeout=timeout)


def verdicts(out):
    runs = [json.loads(l) for l in (out / "runs.jsonl").read_text().splitlines()]
    return {(r["scenario"], r["seed"]): (r["status"], r["failed_checks"], r["completions"]) for r in runs}


@pytest.fixture
def local_sweep(scenario, tmp_path):
    out = tmp_path / "local"
    proc = cli("sweep", scenario("smoke.yaml"), scenario("errors_flush.yaml"), "--seeds", "1-2", "--out", str(out))
    assert proc.returncode == 0, proc.stdout + proc.stderr
    return out


def test_a_dask_local_cluster_sweep_gives_the_verdicts_and_outputs_of_a_local_one(scenario, tmp_path, local_sweep):
    out = tmp_path / "dask"
    proc = cli("sweep", scenario("smoke.yaml"), scenario("errors_flush.yaml"), "--seeds", "1-2", "--out", str(out),
               "--dask", "local", "--jobs", "2")
    assert proc.returncode == 0, proc.stdout + proc.stderr
    assert "on the Dask cluster at local: 2 worker(s)" in proc.stdout
    assert verdicts(out) == verdicts(local_sweep) and len(verdicts(out)) == 4
    assert (out / "coverage.json").read_bytes() == (local_sweep / "coverage.json").read_bytes()
    for run in ("smoke/seed2", "errors_flush/seed1"):
        assert (out / run / "completions.jsonl").read_bytes() == (local_sweep / run / "completions.jsonl").read_bytes()


def test_a_scheduler_out_of_reach_is_one_line_and_exit_2(scenario, tmp_path):
    proc = cli("sweep", scenario("smoke.yaml"), "--seeds", "1", "--out", str(tmp_path), "--dask", "tcp://127.0.0.1:9")
    assert proc.returncode == 2
    assert proc.stderr.startswith("irdma-sim sweep: --dask: cannot reach the Dask scheduler at tcp://127.0.0.1:9")
    assert "Traceback" not in proc.stderr and not (tmp_path / "runs.jsonl").exists()


def test_a_slurm_array_runs_a_task_per_run_and_gather_says_which_did_not(scenario, tmp_path, local_sweep):
    out, script = tmp_path / "slurm", tmp_path / "sweep.sbatch"
    proc = cli("sweep", scenario("smoke.yaml"), scenario("errors_flush.yaml"), "--seeds", "1-2", "--out", str(out),
               "--slurm", str(script))
    assert proc.returncode == 0 and "a Slurm array of 4 runs" in proc.stdout, proc.stdout + proc.stderr
    text = script.read_text()
    assert "#SBATCH --array=0-3" in text and not (out / "runs.jsonl").exists(), "--slurm runs nothing"
    # Slurm runs each task with its index; the last one has not run yet.
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}  # the script sets its own
    for task in range(3):
        done = subprocess.run(["bash", str(script)], env={**env, "SLURM_ARRAY_TASK_ID": str(task)},
                              capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stdout + done.stderr
    proc = cli("gather", str(out))
    assert proc.returncode == 2, proc.stdout + proc.stderr
    assert "ERROR errors_flush seed 2: no readable" in proc.stdout and "3 of 4 runs passed" in proc.stdout
    done = subprocess.run(["bash", str(script)], env={**env, "SLURM_ARRAY_TASK_ID": "3"}, capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    proc = cli("gather", str(out), "--junit", str(out / "junit.xml"))
    assert proc.returncode == 0 and "4 of 4 runs passed" in proc.stdout, proc.stdout + proc.stderr
    assert verdicts(out) == verdicts(local_sweep)
    assert (out / "coverage.json").read_bytes() == (local_sweep / "coverage.json").read_bytes()
    assert json.loads((out / "summary.json").read_text())["passed"] == 4 and (out / "junit.xml").exists()
    assert cli("gather", str(tmp_path / "nothing")).returncode == 2


def test_one_device_is_not_handed_to_a_cluster(scenario, tmp_path):
    for flag in (["--dask", "local"], ["--slurm", str(tmp_path / "s.sbatch")]):
        proc = cli("sweep", scenario("smoke.yaml"), "--seeds", "1", "--out", str(tmp_path / "o"),
                   "--backend", "vfio:0000:01:00.0", *flag)
        assert proc.returncode == 2 and "cannot be handed to a cluster" in proc.stderr, proc.stderr
    assert not (tmp_path / "s.sbatch").exists()


def test_an_interrupted_dask_sweep_reports_the_runs_its_workers_stopped(scenario, tmp_path):
    import signal
    import time
    long = tmp_path / "long.yaml"
    long.write_text(open(scenario("smoke.yaml")).read().replace("sends_per_qp: 1500", "sends_per_qp: 900000"))
    out = tmp_path / "sw"
    proc = subprocess.Popen([sys.executable, "-m", "irdma_sim", "sweep", str(long), "--seeds", "1-4", "--out", str(out),
                             "--dask", "local", "--jobs", "2"], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    started = out / "long" / "seed1" / "completions.jsonl"
    deadline = time.monotonic() + 120
    while not (started.exists() and started.stat().st_size) and time.monotonic() < deadline:
        time.sleep(0.1)
    proc.send_signal(signal.SIGINT)
    stdout, stderr = proc.communicate(timeout=120)
    assert proc.returncode == 130, stdout + stderr
    interrupted = [l for l in stdout.splitlines() if l.startswith("INTERRUPTED long seed")]
    assert interrupted and all("by SIGTERM" in l for l in interrupted), stdout
    summary = json.loads((out / "summary.json").read_text())
    runs = [json.loads(l) for l in (out / "runs.jsonl").read_text().splitlines()]
    assert summary["interrupted"] == len(interrupted) == sum(r["status"] == "INTERRUPTED" for r in runs)
    assert summary["runs"] == len(runs) < 4, "runs not started are not reported"
