"""Traffic through the simulated device from Debian's unmodified user space: the pingpong
examples and perftest between two processes, and the project's own pyverbs script (many QP
pairs, every byte checked), all served by one device host with the project's driver as
the kernel half."""

import json
import os
import re
import subprocess
import sys
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))


def pair(exports, server, client, timeout=60):
    """Runs `server`, then `client` (which connects to it): (server, client) results."""
    env = dict(os.environ, **exports)
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
            head = re.split(r"\s{2,}", line.strip())
            row = lines[i + 1].split()
            return float(row[[h.split("[")[0] for h in head].index(column)])
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


CQ_OVERFLOW = """
from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, SendWR
import pyverbs.enums as e

ctx = Context(name='irdma0')
pd = PD(ctx)
gid = ctx.query_gid(1, 1)

def attr(**fields):
    a = QPAttr()
    for k, v in fields.items():
        setattr(a, k, v)
    return a

cq = CQ(ctx, 4)
mr = MR(pd, 64, e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE)
qps = [QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=cq, rcq=cq, cap=QPCap(max_send_wr=64, max_recv_wr=4)))
       for _ in range(2)]
for q, p in ((qps[0], qps[1]), (qps[1], qps[0])):
    q.to_init(attr(qp_access_flags=e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_LOCAL_WRITE))
    a = attr(dest_qp_num=p.qp_num, path_mtu=e.IBV_MTU_1024, max_dest_rd_atomic=1, min_rnr_timer=12)
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=1), is_global=1, port_num=1)
    q.to_rtr(a)
    q.to_rts(attr(timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1))
# Far more signaled completions than the CQ holds, none polled.
for i in range(40):
    wr = SendWR(wr_id=i, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(mr.buf, 8, mr.lkey)],
                send_flags=e.IBV_SEND_SIGNALED)
    wr.set_wr_rdma(mr.rkey, mr.buf + 32)
    qps[0].post_send(wr)
event = ctx.get_async_event()
print(event.event_type)
event.ack()
"""


def test_a_cq_overflow_raises_cq_err_on_the_async_file(host):
    _, _, exports = host
    r = subprocess.run([sys.executable, "-c", CQ_OVERFLOW], env=dict(os.environ, **exports),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, r.stderr
    assert r.stdout.strip() == "0", "IBV_EVENT_CQ_ERR"
