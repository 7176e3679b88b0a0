"""The device through Debian's unmodified user space, measured: perftest's ib_send_bw -s 64
message rate and ib_write_lat's typical latency, client and server in two processes on one
device host, in each timing mode. Every run is checked (both sides exit 0, the client
reports its table); the figures are make bench's.

usage: uverbs_bench.py IRDMA_SIM [ITERATIONS]"""

import os
import re
import signal
import socket
import subprocess
import sys
import tempfile
import time


def perftest_row(out, column):
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes"):
            # Columns are two spaces apart, but for the first two of the latency tables'.
            head = [h.split("[")[0] for h in re.split(r"\s{2,}", line.strip().replace("#bytes #", "#bytes  #"))]
            return float(lines[i + 1].split()[head.index(column)])
    raise SystemExit("no result table in:\n" + out)


def run_pair(exports, args):
    env = dict(os.environ, **exports)
    with socket.socket() as s:  # a free port: the default one may be a test's, side by side
        s.bind(("localhost", 0))
        args = args[:1] + ["-p", str(s.getsockname()[1])] + args[1:]
    server = subprocess.Popen(args, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1)
    client = subprocess.run(args + ["localhost"], env=env, capture_output=True, text=True, timeout=600)
    s_out, _ = server.communicate(timeout=60)
    if client.returncode or server.returncode:
        raise SystemExit(f"{args[0]} failed (client {client.returncode}, server {server.returncode}):\n"
                         + client.stdout + client.stderr + s_out)
    return client.stdout


def main():
    irdma_sim = sys.argv[1]
    iterations = sys.argv[2] if len(sys.argv) > 2 else "100000"
    for mode in ("loose", "approximate"):
        with tempfile.TemporaryDirectory() as d:
            config = os.path.join(d, "device.yaml")
            with open(config, "w") as f:
                f.write(f"config:\n  sync:\n    mode: {mode}\n")
            host = subprocess.Popen([irdma_sim, "host", "--dir", os.path.join(d, "host"), "--config", config],
                                    stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            try:
                exports = dict(host.stdout.readline().strip().removeprefix("export ").split("=", 1)
                               for _ in range(3))
                common = ["-d", "irdma0", "-x", "1", "-n", iterations]
                bw = run_pair(exports, ["ib_send_bw", "-s", "64"] + common)
                lat = run_pair(exports, ["ib_write_lat", "-s", "64"] + common)
            finally:
                host.send_signal(signal.SIGTERM)
                host.wait(timeout=60)
        rate = perftest_row(bw, "MsgRate") * 1e6
        typical = perftest_row(lat, "t_typical")
        if rate <= 0 or typical <= 0:
            raise SystemExit(f"nonsense figures: {rate} msg/s, {typical} us")
        print(f"uverbs {mode:11s}  ib_send_bw -s 64: {rate / 1e3:8.1f} k msg/s (goal >= 100)   "
              f"ib_write_lat -s 64: {typical:6.1f} us typical (goal <= 50)")


if __name__ == "__main__":
    main()
