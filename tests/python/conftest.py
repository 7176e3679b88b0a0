import contextlib
import os
import signal
import socket
import subprocess
import sys
from pathlib import Path

import irdma_sim
import pytest

pytest_plugins = ["irdma_sim.pytest_plugin"]

SOURCE = Path(os.environ.get("IRDMA_SIM_SOURCE_DIR", Path(__file__).resolve().parents[2]))


@pytest.fixture
def source_dir():
    return SOURCE


@pytest.fixture
def scenario(source_dir):
    return lambda name: str(source_dir / "scenarios" / name)


@pytest.fixture
def run_python():
    """Runs a snippet in a fresh interpreter (one SystemC elaboration each)."""

    def run(code):
        return subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=300)

    return run


@pytest.fixture
def run_scenario_file():
    """irdma-sim-run on a scenario file with extra arguments: the finished process."""
    runner = os.path.join(os.environ["IRDMA_SIM_BIN"], "..", "model", "system", "irdma-sim-run")

    def run(path, out, *args, timeout=60):
        return subprocess.run([runner, str(path), "--out", str(out), *args], capture_output=True, text=True,
                              timeout=timeout)

    return run


@pytest.fixture
def variant(scenario, tmp_path):
    """A shipped scenario with one piece of text replaced, as tmp_path/variant.yaml."""

    def make(name, old, new):
        text = open(scenario(name)).read()
        assert old in text, old
        path = tmp_path / "variant.yaml"
        path.write_text(text.replace(old, new))
        return str(path)

    return make


@pytest.fixture
def refused_variant(variant, run_scenario_file, tmp_path):
    """A shipped scenario with `old` replaced by `new`, which must be refused as a scenario
    error (exit 2, naming the file): its stderr."""

    def run(name, old, new):
        proc = run_scenario_file(variant(name, old, new), tmp_path / "out")
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert "variant.yaml" in proc.stderr, proc.stderr
        return proc.stderr

    return run


@pytest.fixture
def refused_run(scenario, run_scenario_file, tmp_path):
    """A shipped scenario run with `args` that must refuse it before running (exit 2, no
    report): its stderr."""

    def run(name, *args):
        proc = run_scenario_file(scenario(name), tmp_path / "out", *args)
        assert proc.returncode == 2, proc.stdout + proc.stderr
        assert not (tmp_path / "out" / "report.json").exists()
        return proc.stderr

    return run


def failed_checks(report):
    """A report's failed checks: name -> detail."""
    return {c["name"]: c["detail"] for c in report["checks"] if not c["passed"]}


def passing_runs(path, out_dir, seeds):
    """Runs the scenario at each seed (no trace), asserting every check passed: (seed, report)."""
    for seed in seeds:
        report = irdma_sim.run(str(path), out_dir / str(seed), seed=seed, trace=False)
        assert report["passed"], (seed, failed_checks(report))
        yield seed, report


def free_port():
    """A TCP port nothing listens on now (for a pingpong or perftest pair: tests run side by
    side, and the tools' default ports would collide)."""
    with socket.socket() as s:
        s.bind(("localhost", 0))
        return s.getsockname()[1]


@contextlib.contextmanager
def device_host(directory, *args):
    """irdma-sim host --dir DIR ARGS..., running inside the block: (dir, process, its exports)."""
    proc = subprocess.Popen([os.path.join(os.environ["IRDMA_SIM_BIN"], "irdma-sim"), "host", "--dir", str(directory),
                             *args], stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    try:
        exports = dict(proc.stdout.readline().strip().removeprefix("export ").split("=", 1) for _ in range(3))
        yield directory, proc, exports
    finally:
        if proc.poll() is None:
            proc.send_signal(signal.SIGTERM)
            proc.wait(timeout=30)


@pytest.fixture
def host(tmp_path):
    """A device host with the default configuration, running until the test ends."""
    with device_host(tmp_path / "host") as h:
        yield h
