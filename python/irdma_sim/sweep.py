"""Regression sweeps: scenarios times seeds, run in parallel processes, one line each.

Outputs: DIR/<scenario>/seed<N>/ per run (<scenario> is the file's stem, or, where two
files share one, its path below their common directory with '--' for '/'), DIR/runs.jsonl
(one object per run, written as each ends) and DIR/summary.json (the totals, at the end).
"""

import json
import os
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

from irdma_sim.runner import RunFailed, RunInterrupted, Terminated, run, stop_runs

# Statuses of a run, as lines and runs.jsonl give them.
PASS, FAIL, ERROR, INTERRUPTED = "PASS", "FAIL", "ERROR", "INTERRUPTED"
# How long an interrupted sweep waits for a run its cluster's worker started to complete its
# outputs (a run stopped by SIGTERM writes its report within a second or two).
REPORT_WAIT_S = 30


def parse_seeds(text):
    """'1-5,9' -> [1, 2, 3, 4, 5, 9]; raises ValueError on anything else."""
    seeds = []
    for part in text.split(","):
        lo, sep, hi = part.partition("-")
        try:
            first, last = int(lo, 0), int(hi, 0) if sep else int(lo, 0)
        except ValueError:
            raise ValueError(f"bad seed range '{part}' (seeds are like 1-20 or 1,5,9-12)") from None
        if first < 0 or last < first or last >= 2**64:
            raise ValueError(f"bad seed range '{part}' (seeds are like 1-20 or 1,5,9-12)")
        seeds.extend(range(first, last + 1))
    return seeds


def output_names(scenarios):
    """Each scenario file's directory name under the sweep's output: its stem, unless
    another file has the same stem; then its path below the common directory of the files
    of that stem, '--' for '/'."""
    paths = [Path(s).resolve() for s in scenarios]
    names = []
    for path in paths:
        namesakes = [p for p in paths if p.stem == path.stem]
        if len(namesakes) == 1:
            names.append(path.stem)
        else:
            common = Path(os.path.commonpath([p.parent for p in namesakes]))
            names.append("--".join(path.relative_to(common).with_suffix("").parts))
    return names


class Outcome:
    """One run of a sweep."""

    def __init__(self, scenario, name, seed, out, report=None, error=None, interrupted=False):
        self.scenario, self.name, self.seed, self.out = scenario, name, seed, out
        self.report, self.error = report, error
        self.interrupted = interrupted or bool(report and report.get("interrupted"))

    @property
    def status(self):
        if self.interrupted:
            return INTERRUPTED
        if self.error:
            return ERROR
        return PASS if self.report["passed"] else FAIL

    def failed_checks(self):
        return [c["name"] for c in self.report["checks"] if not c["passed"]] if self.report else []

    def record(self):
        r = self.report or {}
        return {"scenario": self.name, "file": str(self.scenario), "seed": self.seed, "out": str(self.out),
                "status": self.status, "failed_checks": self.failed_checks(), "error": self.error,
                "completions": r.get("counts", {}).get("completions_delivered"),
                "sim_time_ps": r.get("sim_time_ps"), "wall_time_s": r.get("wall_time_s")}

    def line(self):
        name = f"{self.name} seed {self.seed}"
        if self.status == ERROR:
            return f"ERROR {name}: {self.error}"
        if self.status == PASS:
            return (f"PASS  {name}: {self.report['counts']['completions_delivered']} completions, "
                    f"{self.report['sim_time_ps'] / 1e9:.3f} ms simulated")
        if self.status == INTERRUPTED:
            return f"INTERRUPTED {name}: " + (f"by {self.report['interrupted']['signal']}" if self.report else self.error)
        return f"FAIL  {name}: {', '.join(self.failed_checks())}"


def sweep_jobs(scenarios, seeds, out):
    """The (scenario, name, seed, output directory) of every run of a sweep, in run order."""
    # A file named twice runs once, however it is spelled (st/x.yaml, ./st/x.yaml, a link).
    first = {}
    for s in scenarios:
        first.setdefault(os.path.realpath(s), s)
    scenarios = list(first.values())
    names = output_names(scenarios)
    return [(s, name, seed, Path(out) / name / f"seed{seed}") for s, name in zip(scenarios, names) for seed in seeds]


def run_job(job, trace, backend):
    """One run of a sweep, in a process of its own; its Outcome. Module-level, so that a
    cluster's worker can be handed it."""
    scenario, name, seed, job_out = job
    try:
        return Outcome(scenario, name, seed, job_out, report=run(scenario, job_out, seed=seed, trace=trace, backend=backend))
    except RunInterrupted as e:
        return Outcome(scenario, name, seed, job_out, error=str(e), interrupted=True)
    except RunFailed as e:
        return Outcome(scenario, name, seed, job_out, error=str(e))


def sweep(scenarios, seeds, out, workers=None, trace=False, backend="sim", pool=None):
    """Runs every (scenario, seed) into out/<name>/seed<N>; yields an Outcome per run, in
    submission order, and appends it to out/runs.jsonl. On KeyboardInterrupt or Terminated
    the runs under way stop cleanly (their outcomes still come), none starts, and the
    interruption goes on. `pool`: where the runs go (an executor's submit and shutdown, as
    dask_sweep.DaskPool offers); by default threads here, `workers` at a time, each starting
    its run's process."""
    jobs = sweep_jobs(scenarios, seeds, out)
    Path(out).mkdir(parents=True, exist_ok=True)
    # A report in a run's directory is then this sweep's: one a run on a cluster's worker
    # left when the interruption stopped it is collected even though its job never returned.
    for job in jobs:
        for name in ("report.json", "completions.jsonl"):  # a run that started this sweep has a new one
            (Path(job[3]) / name).unlink(missing_ok=True)
    pool = pool or ThreadPoolExecutor(max_workers=workers or os.cpu_count())
    futures = [pool.submit(run_job, job, trace, backend) for job in jobs]
    interruption = None
    with open(Path(out) / "runs.jsonl", "w", encoding="utf-8") as log:
        for job, future in zip(jobs, futures):
            lost = None  # what kept a job from coming back (a cluster's worker that died)
            try:
                if not interruption:
                    future.result()  # waits; raises what the job raised
            except (KeyboardInterrupt, Terminated) as e:
                interruption = e
                stop_runs(e, lambda: pool.shutdown(wait=True, cancel_futures=True))
                # A cluster's worker gone, a run it started may still be completing its outputs.
                deadline = time.monotonic() + REPORT_WAIT_S
            except Exception as e:  # noqa: BLE001 - run_job catches the runs' own failures
                lost = f"{type(e).__name__}: {e}"
            # After an interruption every run has ended: those it cut short have an outcome
            # (here, or only the report they left when they ran on a cluster's worker), those
            # it kept from starting none.
            scenario, name, seed, job_out = job
            if interruption and (future.cancelled() or future.exception()):
                left = _report_left(job_out, deadline)
                if left is None:
                    continue
                outcome = Outcome(scenario, name, seed, job_out, report=left)
            elif lost:
                outcome = Outcome(scenario, name, seed, job_out, error=f"the run did not come back: {lost}")
            else:
                outcome = future.result()
            log.write(json.dumps(outcome.record()) + "\n")
            log.flush()
            yield outcome
    pool.shutdown(wait=True)
    if interruption:
        raise interruption


def _report_left(run_dir, deadline):
    """The report.json a run wrote in `run_dir` as it stopped, or None: a run that started
    (its completions.jsonl is there) is given until `deadline` (time.monotonic()) to write it."""
    report = Path(run_dir) / "report.json"
    started = (Path(run_dir) / "completions.jsonl").exists()
    while started and not report.exists() and time.monotonic() < deadline:
        time.sleep(0.05)
    try:
        with open(report, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def tally(outcomes):
    """How many runs ended in each status."""
    return {status: sum(o.status == status for o in outcomes) for status in (PASS, FAIL, ERROR, INTERRUPTED)}


def write_summary(out, outcomes, exit_status):
    counts = tally(outcomes)
    summary = {"runs": len(outcomes), "passed": counts[PASS], "failed": counts[FAIL], "errors": counts[ERROR],
               "interrupted": counts[INTERRUPTED], "exit_status": exit_status,
               "failing": [f"{o.name} seed {o.seed}" for o in outcomes if o.status != PASS]}
    path = Path(out) / "summary.json"
    tmp = path.with_suffix(".json.tmp")
    tmp.write_text(json.dumps(summary, indent=1) + "\n", encoding="utf-8")
    tmp.replace(path)
    return summary
