"""Sweeps as a Slurm job array: `sweep --slurm FILE` writes an sbatch script with one array
task per (scenario, seed), each an `irdma-sim run` of its own, and the job list beside the
outputs (DIR/jobs.tsv); `irdma-sim gather DIR`, once the array is done, reads what the
tasks left and writes what a sweep writes (runs.jsonl, summary.json, coverage.json).
"""

import shlex
import sys
from pathlib import Path

import irdma_sim
from irdma_sim.sweep import Outcome, sweep_jobs

JOBS = "jobs.tsv"


def write_array(path, scenarios, seeds, out, trace=False, backend="sim"):
    """Writes the job list and the sbatch script at `path`; returns how many tasks it has."""
    out = Path(out).resolve()
    jobs = sweep_jobs([str(Path(s).resolve()) for s in scenarios], seeds, out)
    if not jobs:
        raise ValueError("no runs: a sweep needs a scenario and a seed")
    for job in jobs:
        for field in (job[0], job[3]):
            if "\t" in str(field) or "\n" in str(field):
                raise ValueError(f"{field}: a path with a tab or a newline cannot go in {JOBS}")
    out.mkdir(parents=True, exist_ok=True)
    (out / JOBS).write_text("".join(f"{s}\t{name}\t{seed}\t{job_out}\n" for s, name, seed, job_out in jobs),
                            encoding="utf-8")
    package_dir = Path(irdma_sim.__file__).resolve().parent.parent
    run = [sys.executable, "-m", "irdma_sim", "run"]
    flags = ([] if trace else ["--no-trace"]) + ([] if backend == "sim" else ["--backend", backend])
    script = f"""#!/bin/bash
# irdma-sim sweep as a Slurm job array: task i runs line i + 1 of {out / JOBS}
# (scenario, name, seed, output directory). Submit with `sbatch {Path(path).name}`; when the
# array is done, `irdma-sim gather {out}` writes runs.jsonl, summary.json and coverage.json
# (or chain it: sbatch --dependency=afterany:JOBID --wrap "irdma-sim gather {out}").
#SBATCH --job-name=irdma-sim-sweep
#SBATCH --array=0-{len(jobs) - 1}
#SBATCH --ntasks=1
#SBATCH --cpus-per-task=1
#SBATCH --output={out}/slurm-%A_%a.log
set -euo pipefail
export PYTHONPATH={shlex.quote(str(package_dir))}${{PYTHONPATH:+:$PYTHONPATH}}
export SYSTEMC_DISABLE_COPYRIGHT_MESSAGE=1
IFS=$'\\t' read -r scenario name seed out < <(sed -n "$((SLURM_ARRAY_TASK_ID + 1))p" {shlex.quote(str(out / JOBS))})
exec {' '.join(shlex.quote(a) for a in run)} "$scenario" --seed "$seed" --out "$out" {' '.join(shlex.quote(f) for f in flags)}
"""
    Path(path).write_text(script, encoding="utf-8")
    Path(path).chmod(0o755)
    return len(jobs)


def gathered(out):
    """An Outcome per line of DIR/jobs.tsv, from the report its task left (or the lack of one).
    Raises OSError when DIR has no job list."""
    import json
    outcomes = []
    for line in (Path(out) / JOBS).read_text(encoding="utf-8").splitlines():
        scenario, name, seed, job_out = line.split("\t")
        report = Path(job_out) / "report.json"
        try:
            outcomes.append(Outcome(scenario, name, int(seed), job_out, report=json.loads(report.read_text("utf-8"))))
        except (OSError, ValueError):
            outcomes.append(Outcome(scenario, name, int(seed), job_out,
                                    error=f"no readable {report}: the task did not run, or ended before it wrote one "
                                          f"(see {out}/slurm-*.log)"))
    return outcomes
