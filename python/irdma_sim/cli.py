"""irdma-sim: run scenarios and print what they found.

  irdma-sim run SCENARIO [--out DIR] [--seed N] [--no-trace] [--html] [--record] [--cq-writer W]
  irdma-sim replay RUN_DIR [--formatter rtl|tlm] [--cq-writer W] [--flip-cqe-bit N]
  irdma-sim check SCENARIO...
  irdma-sim sweep SCENARIO... --seeds 1-20 [--out DIR] [--jobs N] [--trace] [--junit FILE] [--html]
                  [--dask ADDRESS|local] [--slurm FILE]
  irdma-sim gather DIR [--junit FILE] [--html]
  irdma-sim report DIR
  irdma-sim diff OUT_A OUT_B
  irdma-sim trace convert RUN_DIR [--out FILE]
  irdma-sim --version

Exit statuses: 0 success, 1 a check failed (or, for diff, the runs differ), 2 bad
arguments or a scenario that cannot run, 128 + the signal when SIGINT or SIGTERM
interrupted a run (its outputs are complete).
"""

import argparse
import json
import re
import signal
import sys
import textwrap
from pathlib import Path

from irdma_sim import __version__
from irdma_sim._irdma_sim import ScenarioError, check_scenario
from irdma_sim import coverage
from irdma_sim.diff import diff_runs
from irdma_sim.junit import write_junit
from irdma_sim.report import summary
from irdma_sim.runner import ReplayFailed, RunFailed, Terminated, install_sigterm, replay, run, signal_of
from irdma_sim.sweep import ERROR, FAIL, INTERRUPTED, PASS, parse_seeds, sweep, tally, write_summary


class Parser(argparse.ArgumentParser):
    """Bad arguments are one line naming them, and exit status 2."""

    def error(self, message):
        self.exit(2, f"{self.prog}: {message} (see {self.prog} --help)\n")


def seed_value(text):
    try:
        seed = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0 <= seed < 2**64:
        raise argparse.ArgumentTypeError(f"{text} is out of range (0 to 2^64 - 1)")
    return seed


def jobs_value(text):
    try:
        jobs = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if jobs < 1:
        raise argparse.ArgumentTypeError(f"{text}: at least one run at a time")
    return jobs


class Progress:
    """A run's progress on one terminal line, overwritten as it goes."""

    def __init__(self, stream):
        self.stream, self.shown = stream, False

    def __call__(self, line):
        self.stream.write(f"\r\033[K{line}")
        self.stream.flush()
        self.shown = True

    def clear(self):
        if self.shown:
            self.stream.write("\r\033[K")
            self.stream.flush()


def cmd_run(args):
    out = args.out or str(Path("out") / Path(args.scenario).stem)
    progress = Progress(sys.stderr) if sys.stderr.isatty() else None
    interruption = None
    try:
        report = run(args.scenario, out, seed=args.seed, trace=not args.no_trace, progress=progress,
                     backend=args.backend, record=args.record, cq_writer=args.cq_writer,
                     trace_format=args.trace_format)
    except RunFailed as e:
        print(f"irdma-sim: {e}", file=sys.stderr)
        return 2
    except (KeyboardInterrupt, Terminated) as e:  # the run stopped cleanly first
        interruption = e
        report = None
    finally:
        if progress:
            progress.clear()
    if report is None:
        try:
            report = run_report(out)
        except (OSError, ValueError):
            print(f"irdma-sim: interrupted; {out} holds no report", file=sys.stderr)
            return 128 + signal_of(interruption)
    print(summary(report))
    if (Path(out) / "coverage.json").exists():
        print("\n".join(coverage.summary_lines(coverage.load(Path(out) / "coverage.json"), holes=0)))
    if args.html and html_page(out):
        return 2
    files = [f for f in ("report.json", "trace.bin", "trace.jsonl", "completions.jsonl", "coverage.json", "stimulus.jsonl",
                         "rtl_coverage.dat", "report.html")
             if (Path(out) / f).exists()]
    print(f"outputs    {out}/{', '.join(files)}")
    if report.get("interrupted"):
        return 128 + getattr(signal, report["interrupted"]["signal"])
    return 0 if report["passed"] else 1


def cmd_trace_convert(args):
    from irdma_sim import trace
    try:
        path, events = trace.convert(args.run_dir, args.out)
    except OSError as e:  # no trace.bin, or the output cannot be written
        print(f"irdma-sim trace convert: {e}", file=sys.stderr)
        return 2
    except ValueError as e:  # TraceRefused among them: nothing was written
        print(f"irdma-sim trace convert: {e}", file=sys.stderr)
        return 2 if isinstance(e, trace.TraceRefused) else 1
    print(f"{path}: {events} events")
    return 0


def run_report(out):
    with open(Path(out) / "report.json", encoding="utf-8") as f:
        return json.load(f)


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
        print(f"irdma-sim sweep: --seeds: {e}", file=sys.stderr)
        return 2
    if args.backend.startswith("vfio:") and (args.dask or args.slurm):
        print(f"irdma-sim sweep: {args.backend} is one device on this machine: it cannot be handed to a cluster "
              "(--dask, --slurm); sweep it here (--jobs 1)", file=sys.stderr)
        return 2
    if args.slurm:
        from irdma_sim.slurm import write_array
        try:
            tasks = write_array(args.slurm, args.scenarios, seeds, args.out, args.trace, args.backend)
        except (OSError, ValueError) as e:
            print(f"irdma-sim sweep: --slurm: {e}", file=sys.stderr)
            return 2
        print(f"wrote {args.slurm}: a Slurm array of {tasks} runs into {args.out}; submit it with sbatch, then "
              f"irdma-sim gather {args.out}")
        return 0
    jobs = args.jobs
    if args.backend.startswith("vfio:") and jobs != 1:
        # A function has one owner at a time: VFIO refuses a second process its group.
        print(f"irdma-sim sweep: {args.backend} is one device: the runs take turns on it (--jobs 1)", file=sys.stderr)
        jobs = 1
    pool = None
    if args.dask:
        try:
            from irdma_sim.dask_sweep import ClusterError, DaskPool
        except ImportError as e:
            print(f"irdma-sim sweep: --dask needs Debian's python3-distributed ({e})", file=sys.stderr)
            return 2
        try:
            pool = DaskPool(args.dask, args.jobs)
        except ClusterError as e:
            print(f"irdma-sim sweep: --dask: {e}", file=sys.stderr)
            return 2
        print(f"sweep      on the Dask cluster at {args.dask}: {pool.workers()} worker(s)", flush=True)
    outcomes, interruption = [], None
    try:
        for outcome in sweep(args.scenarios, seeds, args.out, jobs, args.trace, args.backend, pool):
            print(outcome.line(), flush=True)
            outcomes.append(outcome)
    except (KeyboardInterrupt, Terminated) as e:
        interruption = e
    return finish_sweep(args.out, outcomes, interruption, args.junit, args.html)


def finish_sweep(out, outcomes, interruption=None, junit=None, html=False):
    """What every sweep ends with: summary.json, the merged coverage, the JUnit report and
    the HTML page if asked, and the verdict line; returns the exit status."""
    count = tally(outcomes)
    if interruption:
        status = 128 + signal_of(interruption)
    else:
        status = 2 if count[ERROR] else 1 if count[FAIL] else 0
    if junit:
        try:
            write_junit(junit, outcomes)
        except OSError as e:
            print(f"irdma-sim sweep: --junit: cannot write {junit}: {e}", file=sys.stderr)
            status = status or 2
    write_summary(out, outcomes, status)
    try:
        merged = coverage.merge_runs([o.out for o in outcomes], Path(out) / "coverage.json")
    except (OSError, ValueError) as e:  # a run's file unreadable, or of another build's catalogue
        print(f"irdma-sim sweep: coverage not merged: {e}", file=sys.stderr)
        merged = None
    if merged:
        print("\n".join(coverage.summary_lines(merged)))
    if html and html_page(out) and not status:
        status = 2
        write_summary(out, outcomes, status)  # the page could not be made: the sweep did not do all it was asked
    line = (f"{count[PASS]} of {len(outcomes)} runs passed, {count[FAIL]} failed, {count[ERROR]} could not run")
    if interruption:
        line += f", {count[INTERRUPTED]} interrupted; the sweep was stopped"
    print(f"{line} (outputs in {out}/<scenario>/seed<N>, summary in {out}/summary.json)")
    return status


def cmd_gather(args):
    from irdma_sim.slurm import gathered
    try:
        outcomes = gathered(args.dir)
    except (OSError, ValueError) as e:
        print(f"irdma-sim gather: {args.dir}: no job list from sweep --slurm ({e})", file=sys.stderr)
        return 2
    with open(Path(args.dir) / "runs.jsonl", "w", encoding="utf-8") as log:
        for outcome in outcomes:
            print(outcome.line())
            log.write(json.dumps(outcome.record()) + "\n")
    return finish_sweep(args.dir, outcomes, None, args.junit, args.html)


def html_page(directory):
    """Writes DIRECTORY/report.html (a run's or a sweep's); says where, or why not. Returns 0, or
    2 when the directory holds neither."""
    try:
        from irdma_sim import html_report  # matplotlib only when pages are asked for
    except ImportError as e:
        print(f"irdma-sim report: the pages need Debian's python3-matplotlib ({e})", file=sys.stderr)
        return 2
    directory = Path(directory)
    try:
        if (directory / "summary.json").exists():
            path = html_report.sweep_page(directory)
        elif (directory / "report.json").exists():
            path = html_report.run_page(directory)
        else:
            print(f"irdma-sim report: {directory} holds no run (report.json) or sweep (summary.json)", file=sys.stderr)
            return 2
    except ImportError as e:
        print(f"irdma-sim report: the pictures need Debian's python3-matplotlib ({e})", file=sys.stderr)
        return 2
    except (OSError, ValueError, KeyError) as e:
        print(f"irdma-sim report: {directory}: cannot render: {e}", file=sys.stderr)
        return 2
    print(f"report     {path}")
    return 0


def cmd_replay(args):
    try:
        r = replay(args.run_dir, args.formatter, args.flip_cqe_bit, args.cq_writer)
    except ReplayFailed as e:
        print(f"irdma-sim replay: {e}", file=sys.stderr)
        return 2
    counts = (f"{r['mmio']} host accesses driven, {r['reads']} reads answered, {r['writes']} writes and "
              f"{r['msix']} MSI-X compared")
    if r["identical"]:
        cut = r["cut_at_line"]
        so_far = f"; the recording was cut short at line {cut}: nothing after it compared" if cut else ""
        print(f"identical  {args.run_dir}: the device wrote what the recording holds ({counts}{so_far})")
        return 0
    print(f"DIFFERS    {args.run_dir}: {r['difference']}\n           ({counts} before it)")
    return 1


def flip_bit_value(text):
    try:
        bit = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"'{text}' is not a number") from None
    if not 0 <= bit <= 255:
        raise argparse.ArgumentTypeError(f"{text}: a CQE half has bits 0 to 255")
    return bit


def cmd_report(args):
    return html_page(args.dir)


def cmd_diff(args):
    try:
        lines = diff_runs(args.a, args.b)
    except (OSError, ValueError) as e:
        print(f"irdma-sim diff: {e}", file=sys.stderr)
        return 2
    if not lines:
        print(f"identical: {args.a} and {args.b} (wall time aside)")
        return 0
    print("\n".join(lines))
    return 1


PCI_ADDRESS = re.compile(r"(?:[0-9a-fA-F]{4}:)?[0-9a-fA-F]{2}:[0-1][0-9a-fA-F]\.[0-7]")


def backend_value(text):
    if text in ("sim", "vfio-user") or (text.startswith("vfio-user:") and len(text) > len("vfio-user:")):
        return text
    if text.startswith("vfio:"):
        if PCI_ADDRESS.fullmatch(text[len("vfio:"):]):
            return text
        raise argparse.ArgumentTypeError(f"'{text}': vfio: takes a PCI address, DDDD:BB:DD.F (see lspci -D)")
    raise argparse.ArgumentTypeError(f"'{text}' is none of sim, vfio-user, vfio-user:SOCKET, vfio:DDDD:BB:DD.F")


def cmd_serve(args):
    from irdma_sim._irdma_sim import ServeRefused, serve

    def listening():
        print(f"irdma-sim: serving the device at {args.socket} (Ctrl-C stops it)", file=sys.stderr, flush=True)

    try:
        serve(args.socket, args.config or "", args.trace or "", args.once, not args.no_backdoor, listening)
    except (ScenarioError, ServeRefused) as e:
        print(f"irdma-sim serve: {e}", file=sys.stderr)
        return 2
    except Exception as e:  # noqa: BLE001 - the socket or the model failed: said in one line
        print(f"irdma-sim serve: {e}", file=sys.stderr)
        return 3
    return 0


def cmd_host(args):
    from irdma_sim import device_host

    directory = args.dir or device_host.default_dir()
    if device_host.listening(directory):
        print(f"irdma-sim host: a device host already listens at {device_host.socket_path(directory)}", file=sys.stderr)
        return 2
    try:
        host = device_host.DeviceHost(directory, args.config, args.out)
    except device_host.HostError as e:
        print(f"irdma-sim host: {e}", file=sys.stderr)
        return 2
    env = device_host.environment(directory, {})
    print(f"irdma-sim: device irdma0 served at {device_host.socket_path(directory)} (Ctrl-C stops it); "
          f"irdma-sim exec runs commands on it, or set:", file=sys.stderr)
    for key in ("LD_PRELOAD", "IRDMA_SIM_HOST", "SYSFS_PATH"):
        print(f"export {key}={env[key]}", flush=True)
    try:
        host.process.wait()
    except (KeyboardInterrupt, Terminated):
        pass
    finally:
        host.stop()
    if host.process.returncode not in (0, -signal.SIGTERM):
        print(f"irdma-sim host: {host.process.stderr.read().strip()}", file=sys.stderr)
        return 3
    return 0


def cmd_exec(args):
    from irdma_sim import device_host

    argv = args.argv[1:] if args.argv[:1] == ["--"] else args.argv
    if not argv:
        print("irdma-sim exec: no command given (irdma-sim exec -- CMD ARGS...)", file=sys.stderr)
        return 2
    try:
        return device_host.run(argv, args.config, args.host, args.out)
    except (KeyboardInterrupt, Terminated) as e:  # the command got the signal too; the host is stopped
        return 128 + signal_of(e)
    except device_host.HostError as e:
        print(f"irdma-sim exec: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError:
        print(f"irdma-sim exec: {argv[0]}: command not found", file=sys.stderr)
        return 127


BACKEND_HELP = ("where the device is: sim (simulated in the run's process, the default), vfio-user (served by a "
                "process of the run's own, the driver on OS threads), vfio-user:SOCKET (served there already) or "
                "vfio:DDDD:BB:DD.F (a function bound to vfio-pci: silicon)")


CQ_WRITERS = ("tlm", "rtl", "rtl:model")
CQ_WRITER_HELP = ("the CQ writer, in place of the scenario's device.cq_writer: tlm, rtl (the Verilated block in "
                  "lock-step with the TLM one, its cycles feeding the clock) or rtl:model (the stage costs do)")


# Each subcommand's --help ends with examples and its exit statuses.
EPILOGS = {
    "run": ("irdma-sim run scenarios/smoke.yaml\n"
            "irdma-sim run scenarios/events.yaml --seed 7 --out out/ev7 --html\n"
            "irdma-sim run scenarios/cross_vectors.yaml --backend vfio-user",
            "0 every check passed; 1 a check failed (the summary and report.json say which); 2 bad arguments, a "
            "scenario that cannot run on this backend, or a run that made no report; 128 + the signal when "
            "SIGINT or SIGTERM stopped it (the outputs are whole)"),
    "replay": ("irdma-sim run scenarios/smoke.yaml --record --out out/rec\n"
               "irdma-sim replay out/rec\n"
               "irdma-sim replay out/rec --flip-cqe-bit 1     # a changed device: must print DIFFERS",
               "0 the device wrote what the recording holds; 1 it differs (the first difference is printed); "
               "2 the directory cannot be replayed"),
    "check": ("irdma-sim check scenarios/*.yaml",
              "0 every file is a valid scenario; 1 one is not (each error names file:line:column); 2 bad "
              "arguments"),
    "sweep": ("irdma-sim sweep scenarios/smoke.yaml scenarios/gen3.yaml --seeds 1-20\n"
              "irdma-sim sweep scenarios/cross_vectors.yaml --seeds 1-8 --jobs 2 --backend vfio-user --junit j.xml",
              "0 every run passed; 1 a run failed a check; 2 a run could not run (or bad arguments); 128 + "
              "the signal when SIGINT or SIGTERM stopped the sweep (summary.json holds what finished)"),
    "serve": ("irdma-sim serve --socket /tmp/irdma.sock --config scenarios/events.yaml\n"
              "irdma-sim run scenarios/events.yaml --backend vfio-user:/tmp/irdma.sock   # in another shell",
              "0 stopped by Ctrl-C (or, with --once, its client left); 2 a config it cannot serve, a socket it "
              "cannot bind or another server listening there (said before it serves); 3 the model failed"),
    "host": ("irdma-sim host &          # one device for many commands\n"
             "irdma-sim exec -- ibv_rc_pingpong -g 0 &\n"
             "irdma-sim exec -- ibv_rc_pingpong -g 0 localhost",
             "0 stopped by Ctrl-C or SIGTERM; 2 a host already listens there, or one could not start (a config it "
             "cannot use); 3 the host failed while serving"),
    "exec": ("irdma-sim exec -- ibv_devinfo -v\n"
             "irdma-sim exec --config scenarios/events.yaml -- ibv_devices\n"
             "irdma-sim exec --out out/devinfo -- ibv_devinfo   # the device's trace and a report",
             "the command's own; 128 + N when signal N ended it; 2 no host could be started or reached; 127 "
             "the command does not exist"),
    "gather": ("irdma-sim sweep scenarios/*.yaml --seeds 1-100 --slurm array.sh --out out/big\n"
               "sbatch array.sh   # then, once the array is done:\n"
               "irdma-sim gather out/big --junit j.xml",
               "0 every run passed; 1 a run failed a check; 2 a run could not run, or DIR holds no job list from "
               "sweep --slurm"),
    "report": ("irdma-sim report out/smoke", "0 the page was written; 2 DIR is neither a run's nor a sweep's"),
    "trace convert": ("irdma-sim run scenarios/smoke.yaml --out out/smoke\n"
                      "irdma-sim trace convert out/smoke     # out/smoke/trace.jsonl",
                      "0 converted; 1 the trace is malformed or cut short (every event before the fault is written, "
                      "and the message says where); 2 RUN_DIR has no trace.bin, it is empty, no binary trace or of "
                      "another format version, or FILE cannot be written (or is the trace itself)"),
    "diff": ("irdma-sim run scenarios/smoke.yaml --out out/a && irdma-sim run scenarios/smoke.yaml --out out/b\n"
             "irdma-sim diff out/a out/b",
             "0 identical (wall time aside); 1 they differ (where first, per file); 2 a directory cannot be read"),
}


def epilog(command):
    examples, statuses = EPILOGS[command]
    indented = "\n".join("  " + line for line in examples.splitlines())
    return f"examples:\n{indented}\n\n" + textwrap.fill(f"exit status: {statuses}", width=88, subsequent_indent="  ")


def build_parser():
    parser = Parser(prog="irdma-sim", description=__doc__.splitlines()[0])
    parser.add_argument("--version", action="version", version=f"irdma-sim {__version__}")
    sub = parser.add_subparsers(dest="command", required=True, parser_class=Parser)
    p = sub.add_parser("run", help="run one scenario in a fresh process", epilog=epilog("run"),
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("scenario")
    p.add_argument("--out", help="output directory (default: out/<scenario file's stem>)")
    p.add_argument("--seed", type=seed_value, help="override the scenario's seed (0 to 2^64 - 1)")
    p.add_argument("--no-trace", action="store_true", help="skip the transaction log")
    p.add_argument("--trace-format", choices=("bin", "jsonl"), default="bin",
                   help="the transaction log's format: trace.bin (the default; `irdma-sim trace convert` writes "
                        "the trace.jsonl it stands for) or trace.jsonl")
    p.add_argument("--backend", type=backend_value, default="sim", help=BACKEND_HELP)
    p.add_argument("--html", action="store_true", help="also write report.html (summary, checks, plots, coverage)")
    p.add_argument("--record", action="store_true",
                   help="also write what `irdma-sim replay` needs: stimulus.jsonl and scenario.yaml")
    p.add_argument("--cq-writer", choices=CQ_WRITERS, help=CQ_WRITER_HELP)
    p.set_defaults(func=cmd_run)
    y = sub.add_parser("replay", help="re-drive a recorded run's host side into the device alone and compare its writes", epilog=epilog("replay"),
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    y.add_argument("run_dir", help="a run made with --record")
    y.add_argument("--formatter", choices=("tlm", "rtl"), help="the CQE formatter, in place of the recorded run's")
    y.add_argument("--cq-writer", choices=CQ_WRITERS, help=CQ_WRITER_HELP)
    y.add_argument("--flip-cqe-bit", type=flip_bit_value, default=-1, metavar="N",
                   help="replay a deliberately changed device: bit N (0-255) of every CQE's main half flipped")
    y.set_defaults(func=cmd_replay)
    c = sub.add_parser("check", help="validate scenario files without running them", epilog=epilog("check"),
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    c.add_argument("scenarios", nargs="+")
    c.set_defaults(func=cmd_check)
    s = sub.add_parser("sweep", help="run scenarios over many seeds in parallel, one line each", epilog=epilog("sweep"),
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    s.add_argument("scenarios", nargs="+")
    s.add_argument("--seeds", required=True, help="e.g. 1-20 or 1,5,9-12")
    s.add_argument("--out", default="out/sweep", help="output root (default: out/sweep)")
    s.add_argument("--jobs", type=jobs_value, help="parallel runs (default: one per CPU)")
    s.add_argument("--trace", action="store_true", help="also write each run's trace.bin")
    s.add_argument("--backend", type=backend_value, default="sim", help=BACKEND_HELP)
    s.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report (a testcase per scenario and seed)")
    s.add_argument("--dask", metavar="ADDRESS",
                   help="run on a Dask cluster: its scheduler's address (tcp://host:8786), or 'local' for a "
                        "LocalCluster of --jobs workers here")
    s.add_argument("--slurm", metavar="FILE",
                   help="run nothing: write FILE, an sbatch script of a Slurm job array with a task per run "
                        "(then irdma-sim gather DIR)")
    s.add_argument("--html", action="store_true",
                   help="also write DIR/report.html, and a page for each failing and each of the five slowest runs")
    s.set_defaults(func=cmd_sweep)
    v = sub.add_parser("serve", help="serve the device model over vfio-user until Ctrl-C", epilog=epilog("serve"),
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    v.add_argument("--socket", required=True, help="the listening socket's path")
    v.add_argument("--config", help="a scenario (its config: section) or such a section alone")
    v.add_argument("--trace", help="write the device's transaction log here (as trace.jsonl if the path ends in "
                                   ".jsonl, else binary as trace.bin)")
    v.add_argument("--once", action="store_true", help="stop when the first client leaves")
    v.add_argument("--no-backdoor", action="store_true",
                   help="offer no test hooks (counters, faults, forced MSI-X), as silicon does")
    v.set_defaults(func=cmd_serve)
    h = sub.add_parser("host", help="serve the simulated device to unmodified rdma-core programs until Ctrl-C",
                       epilog=epilog("host"), formatter_class=argparse.RawDescriptionHelpFormatter)
    h.add_argument("--dir", help="where its socket and sysfs go (default: the one exec looks at first)")
    h.add_argument("--config", help="a scenario (its config: section) or such a section alone")
    h.add_argument("--out", metavar="DIR", help="write the device's trace.bin as it goes, and report.json at the end")
    h.set_defaults(func=cmd_host)
    x = sub.add_parser("exec", help="run an unmodified rdma-core program on the simulated device",
                       epilog=epilog("exec"), formatter_class=argparse.RawDescriptionHelpFormatter)
    x.add_argument("--config", help="the device of a private host: a scenario's config: section")
    x.add_argument("--host", metavar="DIR", help="the host running at DIR (irdma-sim host --dir DIR)")
    x.add_argument("--out", metavar="DIR", help="a private host's outputs: trace.bin and report.json")
    x.add_argument("argv", nargs=argparse.REMAINDER, help="-- CMD ARGS...")
    x.set_defaults(func=cmd_exec)
    g = sub.add_parser("gather", help="after a Slurm array from sweep --slurm: write what a sweep writes", epilog=epilog("gather"),
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    g.add_argument("dir", help="the sweep's output directory (its --out)")
    g.add_argument("--junit", metavar="FILE", help="also write a JUnit XML report")
    g.add_argument("--html", action="store_true", help="also write DIR/report.html")
    g.set_defaults(func=cmd_gather)
    r = sub.add_parser("report", help="write a run's or a sweep's report.html", epilog=epilog("report"),
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    r.add_argument("dir", help="a run's output directory, or a sweep's")
    r.set_defaults(func=cmd_report)
    d = sub.add_parser("diff", help="where two runs' outputs first differ", epilog=epilog("diff"),
                   formatter_class=argparse.RawDescriptionHelpFormatter)
    d.add_argument("a")
    d.add_argument("b")
    d.set_defaults(func=cmd_diff)
    t = sub.add_parser("trace", help="work with a run's transaction log")
    tsub = t.add_subparsers(dest="trace_command", required=True, parser_class=Parser)
    tc = tsub.add_parser("convert", help="write the trace.jsonl a run's trace.bin stands for, byte for byte",
                         epilog=epilog("trace convert"), formatter_class=argparse.RawDescriptionHelpFormatter)
    tc.add_argument("run_dir", help="a run's output directory")
    tc.add_argument("--out", metavar="FILE", help="where to write it (default: RUN_DIR/trace.jsonl)")
    tc.set_defaults(func=cmd_trace_convert)
    return parser


def main(argv=None):
    args = build_parser().parse_args(argv)
    install_sigterm()
    return args.func(args)
