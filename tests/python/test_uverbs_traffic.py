"""Traffic through the simulated device from Debian's unmodified user space: the pingpong
examples and perftest between two processes, and the project's own pyverbs script (many QP
pairs, every byte checked), all served by one device host with the project's driver as
the kernel half."""

import json
import os
import re
import signal
import subprocess
import sys
import time

import pytest

from conftest import device_host, free_port

HERE = os.path.dirname(os.path.abspath(__file__))


def pair(exports, server, client, timeout=60):
    """Runs `server`, then `client` (which connects to it) on a TCP port no other test holds:
    (server, client) results."""
    env = dict(os.environ, **exports)
    port = ["-p", str(free_port())]
    server, client = server[:1] + port + server[1:], client[:1] + port + client[1:]
    s = subprocess.Popen(server, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    time.sleep(1)  # the server listens on its TCP port first
    c = subprocess.Popen(client, env=env, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        c_out, _ = c.communicate(timeout=timeout)
        s_out, _ = s.communicate(timeout=timeout)
    finally:
        for p in (s, c):
            if p.poll() is None:
                p.kill()
                p.wait()
    return (s.returncode, s_out), (c.returncode, c_out)


@pytest.mark.parametrize("events", [False, True], ids=["polled", "events"])
def test_ibv_rc_pingpong_between_two_processes(host, events):
    _, _, exports = host
    args = ["ibv_rc_pingpong", "-g", "1", "-n", "300"] + (["-e"] if events else [])
    (s_rc, s_out), (c_rc, c_out) = pair(exports, args, args + ["localhost"])
    assert s_rc == 0 and c_rc == 0, s_out + c_out
    assert "300 iters" in s_out and "300 iters" in c_out
    # Each side names the other's QP: two QPs of one device.
    local = re.search(r"local address:.*QPN (0x[0-9a-f]+)", c_out).group(1)
    remote = re.search(r"remote address:.*QPN (0x[0-9a-f]+)", s_out).group(1)
    assert local == remote


def test_ibv_ud_pingpong_between_two_processes(host):
    _, _, exports = host
    args = ["ibv_ud_pingpong", "-g", "1", "-n", "200"]
    (s_rc, s_out), (c_rc, c_out) = pair(exports, args, args + ["localhost"])
    assert s_rc == 0 and c_rc == 0, s_out + c_out
    assert "200 iters" in c_out


def perftest_figure(out, column):
    """The first result row's value in `column` (perftest's table)."""
    lines = out.splitlines()
    for i, line in enumerate(lines):
        if line.strip().startswith("#bytes"):
            # Columns are two spaces apart, but for the first two of the latency tables'.
            head = [h.split("[")[0] for h in re.split(r"\s{2,}", line.strip().replace("#bytes #", "#bytes  #"))]
            return float(lines[i + 1].split()[head.index(column)])
    raise AssertionError("no result table in:\n" + out)


@pytest.mark.parametrize("tool,column", [("ib_send_bw", "MsgRate"), ("ib_write_bw", "MsgRate"),
                                         ("ib_read_lat", "t_typical")])
def test_perftest_between_two_processes(host, tool, column):
    _, _, exports = host
    args = [tool, "-d", "irdma0", "-x", "1", "-n", "2000", "-s", "64"]
    (s_rc, s_out), (c_rc, c_out) = pair(exports, args, args + ["localhost"])
    assert s_rc == 0 and c_rc == 0, s_out + c_out
    assert perftest_figure(c_out, column) > 0


def test_pyverbs_many_qp_pairs_move_every_byte(host):
    _, _, exports = host
    r = subprocess.run([sys.executable, os.path.join(HERE, "uverbs", "rc_traffic.py"), "32", "4"],
                       env=dict(os.environ, **exports), capture_output=True, text=True, timeout=120)
    assert r.returncode == 0, r.stdout + r.stderr
    assert json.loads(r.stdout) == {"pairs": 32, "rounds": 4, "bytes": 32 * 4 * 3 * 256}


def rc_pair_script(cq_entries, mr_bytes, body):
    """A pyverbs script: one CQ of `cq_entries`, an MR of `mr_bytes`, two RC QPs connected
    to each other through the device's loopback, then `body`."""
    return f"""
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR
import pyverbs.enums as e
import signal

def give_up(*_):
    raise TimeoutError("no completion or event within 30 s")
signal.signal(signal.SIGALRM, give_up)
signal.alarm(30)

ctx = Context(name='irdma0')
pd = PD(ctx)
gid = ctx.query_gid(1, 1)

def attr(**fields):
    a = QPAttr()
    for k, v in fields.items():
        setattr(a, k, v)
    return a

cq = CQ(ctx, {cq_entries})
mr = MR(pd, {mr_bytes}, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=64, max_recv_wr=4)))
       for _ in range(2)]
for q, p in ((qps[0], qps[1]), (qps[1], qps[0])):
    q.to_init(attr(qp_access_flags=e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_LOCAL_WRITE))
    a = attr(dest_qp_num=p.qp_num, path_mtu=e.IBV_MTU_1024, max_dest_rd_atomic=1, min_rnr_timer=12)
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=1), is_global=1, port_num=1)
    q.to_rtr(a)
    q.to_rts(attr(timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1))

def write(wr_id, lkey, length, offset=0):
    wr = SendWR(wr_id=wr_id, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, length, lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(mr.rkey, mr.buf + offset)
    qps[0].post_send(wr)

def poll(count):
    statuses = []
    for _ in range(100000):
        n, wcs = cq.poll(4)
        statuses += [(wc.wr_id, wc.status) for wc in wcs]
        if len(statuses) == count:
            break
    return statuses

def next_event():
    event = ctx.get_async_event()
    event.ack()
    return event.event_type
{body}"""


def run_script(exports, script):
    r = subprocess.run([sys.executable, "-c", script], env=dict(os.environ, **exports),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    return r.stdout.strip()


# ibv_event_type: IBV_EVENT_CQ_ERR 0, IBV_EVENT_QP_ACCESS_ERR 3.
# ibv_wc_status: IBV_WC_SUCCESS 0, IBV_WC_LOC_PROT_ERR 4, IBV_WC_WR_FLUSH_ERR 5.

def test_a_cq_overflow_raises_cq_err_on_the_async_file(host):
    _, _, exports = host
    # Far more signaled completions than the CQ holds, none polled.
    out = run_script(exports, rc_pair_script(4, 64, """
for i in range(40):
    write(i, mr.lkey, 8, 32)
print(next_event())
"""))
    assert out == "0", "IBV_EVENT_CQ_ERR"


def test_a_wqe_naming_an_unregistered_key_fails_with_a_protection_error_and_flushes_the_rest(host):
    _, _, exports = host
    out = run_script(exports, rc_pair_script(16, 4096, """
write(1, mr.lkey, 64, 2048)          # fine
write(2, mr.lkey ^ 0x5500, 64, 2048)  # a key nobody registered
write(3, mr.lkey, 64, 2048)          # behind it: flushed
print(poll(3), next_event())
"""))
    assert out == "[(1, 0), (2, 4), (3, 5)] 3"


def test_an_mr_too_small_for_the_wqe_gives_a_protection_error_cqe_and_qp_access_err(host):
    _, _, exports = host
    # The SGE runs 64 bytes past the registration: the device refuses the key for those
    # bytes (AMP_BOUNDS_VIOLATION), completes the WQE with LOC_PROT_ERR, flushes what
    # follows and reports the QP's error once on the async file.
    out = run_script(exports, rc_pair_script(16, 64, """
write(1, mr.lkey, 64)
write(2, mr.lkey, 128)
write(3, mr.lkey, 8)
print(poll(3), next_event())
"""))
    assert out == "[(1, 0), (2, 4), (3, 5)] 3"


def test_a_device_given_up_is_device_fatal_on_every_context(tmp_path):
    # The function resets 20 ms in, which the idle host reaches at once; with no watchdog
    # the driver learns of it from the first control command (the application's CREATE_CQ),
    # which fails, and gives the device up: IBV_EVENT_DEVICE_FATAL (8) on the async file.
    config = tmp_path / "config.yaml"
    config.write_text("device:\n  function_reset_at_ns: 20000000\n")
    with device_host(tmp_path / "host", "--config", str(config)) as (_, _, exports):
        out = run_script(exports, """
import errno, signal
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.pyverbs_error import PyverbsRDMAError
def give_up(*_):
    raise TimeoutError("no event within 30 s")
signal.signal(signal.SIGALRM, give_up)
signal.alarm(30)
ctx = Context(name='irdma0')
try:
    CQ(ctx, 8)
    print("created")
except PyverbsRDMAError as x:
    print(errno.errorcode[x.error_code], end=" ")
event = ctx.get_async_event()
event.ack()
print(event.event_type)
""")
    assert out == "ENODEV 8"


def test_an_application_killed_with_traffic_in_flight_leaves_the_others_served(host):
    directory, proc, exports = host
    env = dict(os.environ, **exports)
    victim = subprocess.Popen([sys.executable, os.path.join(HERE, "uverbs", "rc_traffic.py"), "16", "100000"],
                              env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    time.sleep(2)
    assert victim.poll() is None, "still moving data when killed"
    victim.kill()
    victim.wait()
    (s_rc, s_out), (c_rc, c_out) = pair(exports, ["ibv_rc_pingpong", "-g", "1", "-n", "100"],
                                        ["ibv_rc_pingpong", "-g", "1", "-n", "100", "localhost"])
    assert s_rc == 0 and c_rc == 0, s_out + c_out
    assert proc.poll() is None


def test_a_host_killed_under_traffic_ends_the_application_without_a_hang(host):
    directory, proc, exports = host
    app = subprocess.Popen([sys.executable, os.path.join(HERE, "uverbs", "rc_traffic.py"), "4", "100000"],
                           env=dict(os.environ, **exports), stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    time.sleep(2)
    assert app.poll() is None
    for child in [int(p) for p in os.listdir("/proc") if p.isdigit()]:
        try:
            if "irdma-sim-host" in open(f"/proc/{child}/cmdline").read() and \
                    str(directory) in open(f"/proc/{child}/cmdline").read():
                os.kill(child, signal.SIGKILL)
        except OSError:
            pass
    # Its completions stop; its own bounded wait gives up, its next command fails: no hang.
    _, err = app.communicate(timeout=60)
    assert app.returncode != 0
    assert "TimeoutError" in err or "Input/output error" in err or "errno: 5" in err, err[-2000:]
