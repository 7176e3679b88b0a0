"""Regression sweeps: scenarios times seeds, run in parallel processes, one line each."""

import concurrent.futures
import os
from pathlib import Path

from irdma_sim.runner import RunFailed, run


def parse_seeds(text):
    """'1-5,9' -> [1, 2, 3, 4, 5, 9]; raises ValueError on anything else."""
    seeds = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        first, last = int(lo, 0), int(hi, 0) if sep else int(lo, 0)
        if first < 0 or last < first:
            raise ValueError(f"bad seed range '{part}'")
        seeds.extend(range(first, last + 1))
    return seeds


def sweep(scenarios, seeds, out, workers=None, trace=False):
    """Runs every (scenario, seed) into out/<scenario>/seed<N>; yields (scenario, seed,
    report or None, error or None) in submission order."""
    jobs = [(s, seed, Path(out) / Path(s).stem / f"seed{seed}") for s in scenarios for seed in seeds]

    def one(job):
        scenario, seed, job_out = job
        try:
            return scenario, seed, run(scenario, job_out, seed=seed, trace=trace), None
        except RunFailed as e:
            return scenario, seed, None, str(e)

    with concurrent.futures.ThreadPoolExecutor(max_workers=workers or os.cpu_count()) as pool:
        yield from pool.map(one, jobs)


def sweep_line(scenario, seed, report, error):
    name = f"{Path(scenario).stem} seed {seed}"
    if error:
        return f"ERROR {name}: {error}"
    counts = report["counts"]
    if report["passed"]:
        return (f"PASS  {name}: {counts['completions_delivered']} completions, "
                f"{report['sim_time_ps'] / 1e9:.3f} ms simulated")
    failed = [c["name"] for c in report["checks"] if not c["passed"]]
    return f"FAIL  {name}: {', '.join(failed)}"
