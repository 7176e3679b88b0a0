"""Child process of irdma_sim.run: one scenario, one SystemC elaboration.

Exit status: 0 all checks passed, 1 a check failed, 2 malformed scenario, 3 the run failed.
"""

import sys

from irdma_sim._irdma_sim import ScenarioError, run_scenario


def main(argv):
    scenario, out, seed, trace = argv
    try:
        passed, _ = run_scenario(scenario, out, int(seed, 0) if seed else None, trace == "trace")
    except ScenarioError as e:
        print(e, file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - anything else is a failed run, reported as such
        print(f"{scenario}: {e}", file=sys.stderr)
        return 3
    return 0 if passed else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
