"""Child process of irdma_sim.run: one scenario, one SystemC elaboration.

  _worker SCENARIO OUT SEED|'' bin|jsonl|no-trace progress|quiet BACKEND record|no-record CQ_WRITER|'' PARENT_PID
  _worker --replay RUN_DIR FORMATTER|'' FLIP_BIT CQ_WRITER|'' PARENT_PID   (prints the result as JSON)

Runs on a device on PCIe (vfio:BDF, vfio-user:SOCKET) exec irdma-sim-run-pcie, which links no
simulator; the others run in this process through the module.

Exit status: 0 all checks passed, 1 a check failed, 2 malformed scenario or unknown backend,
3 the run failed,
128 + the signal when SIGINT or SIGTERM cut the run short (its outputs are whole). It gets
SIGTERM when its parent dies.
"""

import ctypes
import os
import signal
import sys

PR_SET_PDEATHSIG = 1


def die_with_parent(parent_pid):
    libc = ctypes.CDLL(None, use_errno=True)
    libc.prctl(PR_SET_PDEATHSIG, signal.SIGTERM)
    if os.getppid() != parent_pid:  # it died before prctl took effect
        sys.exit(128 + signal.SIGTERM)


def replay(argv):
    import json
    run_dir, formatter, flip, cq_writer, parent = argv
    die_with_parent(int(parent))
    from irdma_sim._irdma_sim import ScenarioError, replay as replay_run
    try:
        print(json.dumps(replay_run(run_dir, formatter, int(flip), cq_writer)), flush=True)
    except (ScenarioError, ValueError, RuntimeError) as e:
        print(e, file=sys.stderr)
        return 2
    return 0


def run_on_pcie(scenario, out, seed, trace, progress, backend, record, cq_writer):
    """A device on PCIe (silicon, or a model served elsewhere) needs no simulator here: this
    process becomes irdma-sim-run-pcie, which links none (the parent-death signal stays)."""
    from irdma_sim._build_paths import RUN_PCIE
    argv = [RUN_PCIE, scenario, "--out", out, "--backend", backend]
    argv += ["--seed", seed] if seed else []
    argv += ["--no-trace"] if trace == "no-trace" else ["--trace-format", trace]
    argv += ["--progress"] if progress == "progress" else []
    argv += ["--record"] if record == "record" else []
    argv += ["--cq-writer", cq_writer] if cq_writer else []
    sys.stdout.flush()
    os.execv(RUN_PCIE, argv)


def main(argv):
    if argv[0] == "--replay":
        return replay(argv[1:])
    scenario, out, seed, trace, progress, backend, record, cq_writer, parent = argv
    die_with_parent(int(parent))
    if backend.startswith(("vfio:", "vfio-user:")):
        run_on_pcie(scenario, out, seed, trace, progress, backend, record, cq_writer)
    from irdma_sim._irdma_sim import ScenarioError, run_scenario

    def report(line):
        print("progress", line, flush=True)

    try:
        passed, interrupted_by, _ = run_scenario(scenario, out, int(seed, 0) if seed else None, trace != "no-trace",
                                                 report if progress == "progress" else None, backend,
                                                 record == "record", cq_writer,
                                                 "bin" if trace == "no-trace" else trace)
    except (ScenarioError, ValueError) as e:
        print(e, file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - anything else is a failed run, reported as such
        print(f"{scenario}: {e}", file=sys.stderr)
        return 3
    if interrupted_by:
        return 128 + interrupted_by
    return 0 if passed else 1


if __name__ == "__main__":
    try:
        sys.exit(main(sys.argv[1:]))
    except KeyboardInterrupt:  # before the run began: it catches its own signals
        print(f"{sys.argv[1]}: interrupted before the run began", file=sys.stderr)
        sys.exit(128 + signal.SIGINT)
