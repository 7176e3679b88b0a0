"""Runs scenarios, each in its own Python process, and reads back their reports."""

import concurrent.futures
import json
import os
import subprocess
import sys
from pathlib import Path


class RunFailed(RuntimeError):
    """A scenario could not run: malformed file, or the simulation itself failed."""

    def __init__(self, scenario, returncode, stderr):
        # A scenario error already names the file (and the line).
        super().__init__(stderr.strip() or f"{scenario}: exit status {returncode}")
        self.scenario = scenario
        self.returncode = returncode
        self.stderr = stderr


def run(scenario, out, seed=None, trace=True, timeout=None):
    """Runs `scenario` into directory `out` in a child process; returns report.json as a dict.

    Check failures are in the report (report["passed"] is False); RunFailed is raised only
    when no report could be made.
    """
    cmd = [sys.executable, "-m", "irdma_sim._worker", str(scenario), str(out)]
    cmd.append("" if seed is None else str(seed))
    cmd.append("trace" if trace else "no-trace")
    env = dict(os.environ, SYSTEMC_DISABLE_COPYRIGHT_MESSAGE="1")
    proc = subprocess.run(cmd, capture_output=True, text=True, env=env, timeout=timeout)
    if proc.returncode not in (0, 1):
        raise RunFailed(str(scenario), proc.returncode, proc.stderr)
    with open(Path(out) / "report.json", encoding="utf-8") as f:
        return json.load(f)


def run_many(jobs, workers=None):
    """Runs (scenario, out, seed) jobs in parallel processes; returns their reports in order."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count()) as pool:
        return list(pool.map(lambda job: run(*job), jobs))
