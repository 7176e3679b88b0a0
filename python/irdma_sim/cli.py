"""irdma-sim: run scenarios and print what they found.

  irdma-sim run SCENARIO [--out DIR] [--seed N] [--no-trace]
  irdma-sim check SCENARIO...
"""

import argparse
import sys
from pathlib import Path

from irdma_sim._irdma_sim import ScenarioError, check_scenario
from irdma_sim.report import summary
from irdma_sim.runner import RunFailed, run


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
    args = parser.parse_args(argv)
    return args.func(args)
