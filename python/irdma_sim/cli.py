"""irdma-sim: run scenarios and print what they found.

  irdma-sim run SCENARIO [--out DIR] [--seed N] [--no-trace]
  irdma-sim check SCENARIO...
  irdma-sim sweep SCENARIO... --seeds 1-20 [--out DIR] [--jobs N] [--trace]
  irdma-sim diff OUT_A OUT_B
"""

import argparse
import sys
from pathlib import Path

from irdma_sim._irdma_sim import ScenarioError, check_scenario
from irdma_sim.diff import diff_runs
from irdma_sim.report import summary
from irdma_sim.runner import RunFailed, run
from irdma_sim.sweep import parse_seeds, sweep, sweep_line


def cmd_run(args):
    out = args.out or str(Path("out") / Path(args.scenario).stem)
    try:
        report = run(args.scenario, out, seed=args.seed, trace=not args.no_trace)
    except RunFailed as e:
        print(f"irdma-sim: {e}", file=sys.stderr)
        return 2
    print(summary(report))
    files = ["report.json"] + (["trace.jsonl"] if not args.no_trace else []) + ["completions.jsonl"]
    print(f"outputs    {out}/{', '.join(files)}")
    return 0 if report["passed"] else 1


def cmd_check(args):
    bad = 0
    for path in args.scenarios:
        try:
            info = check_scenario(path)
            print(f"ok   {path}: {info['name']}, {info['qp_pairs']} QP pair(s)")
        except ScenarioError as e:
            print(f"FAIL {e}", file=sys.stderr)
            bad += 1
    return 1 if bad else 0


def cmd_sweep(args):
    try:
        seeds = parse_seeds(args.seeds)
    except ValueError as e:
        print(f"irdma-sim: --seeds: {e}", file=sys.stderr)
        return 2
    passed = failed = errors = 0
    for scenario, seed, report, error in sweep(args.scenarios, seeds, args.out, args.jobs, args.trace):
        print(sweep_line(scenario, seed, report, error), flush=True)
        if error:
            errors += 1
        elif report["passed"]:
            passed += 1
        else:
            failed += 1
    print(f"{passed} of {passed + failed + errors} runs passed, {failed} failed, {errors} could not run "
          f"(outputs in {args.out}/<scenario>/seed<N>)")
    return 2 if errors else 1 if failed else 0


def cmd_diff(args):
    try:
        lines = diff_runs(args.a, args.b)
    except (FileNotFoundError, ValueError) as e:
        print(f"irdma-sim: {e}", file=sys.stderr)
        return 2
    if not lines:
        print(f"identical: {args.a} and {args.b} (wall time aside)")
        return 0
    print("\n".join(lines))
    return 1


def main(argv=None):
    parser = argparse.ArgumentParser(prog="irdma-sim", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("run", help="run one scenario in a fresh process")
    p.add_argument("scenario")
    p.add_argument("--out", help="output directory (default: out/<scenario name>)")
    p.add_argument("--seed", type=lambda s: int(s, 0), help="override the scenario's seed")
    p.add_argument("--no-trace", action="store_true", help="skip trace.jsonl")
    p.set_defaults(func=cmd_run)
    c = sub.add_parser("check", help="validate scenario files without running them")
    c.add_argument("scenarios", nargs="+")
    c.set_defaults(func=cmd_check)
    s = sub.add_parser("sweep", help="run scenarios over many seeds in parallel, one line each")
    s.add_argument("scenarios", nargs="+")
    s.add_argument("--seeds", required=True, help="e.g. 1-20 or 1,5,9-12")
    s.add_argument("--out", default="out/sweep", help="output root (default: out/sweep)")
    s.add_argument("--jobs", type=int, help="parallel runs (default: one per CPU)")
    s.add_argument("--trace", action="store_true", help="also write trace.jsonl")
    s.set_defaults(func=cmd_sweep)
    d = sub.add_parser("diff", help="where two runs' outputs first differ")
    d.add_argument("a")
    d.add_argument("b")
    d.set_defaults(func=cmd_diff)
    args = parser.parse_args(argv)
    return args.func(args)
