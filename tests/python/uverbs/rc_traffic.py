"""RC traffic between many QP pairs of one process through the device, every byte
checked: SENDs into posted receives, RDMA WRITEs and READs under the peer's keys, with the
completions matched to their work requests. Prints one JSON line of what it did."""

import json
import sys

from pyverbs.addr import AHAttr, GlobalRoute
from pyverbs.cq import CQ
from pyverbs.device import Context
from pyverbs.mr import MR
from pyverbs.pd import PD
from pyverbs.qp import QP, QPAttr, QPCap, QPInitAttr
from pyverbs.wr import SGE, RecvWR, SendWR
import pyverbs.enums as e

PAIRS = int(sys.argv[1]) if len(sys.argv) > 1 else 8
ROUNDS = int(sys.argv[2]) if len(sys.argv) > 2 else 20
MSG = 256
ACCESS = e.IBV_ACCESS_LOCAL_WRITE | e.IBV_ACCESS_REMOTE_WRITE | e.IBV_ACCESS_REMOTE_READ

ctx = Context(name="irdma0")
pd = PD(ctx)
gid = ctx.query_gid(1, 1)


def attr(**fields):
    a = QPAttr()
    for k, v in fields.items():
        setattr(a, k, v)
    return a


def connect(qp, peer):
    qp.to_init(attr(qp_access_flags=ACCESS))
    a = attr(dest_qp_num=peer.qp_num, path_mtu=e.IBV_MTU_1024, max_dest_rd_atomic=1, min_rnr_timer=12)
    a.ah_attr = AHAttr(gr=GlobalRoute(dgid=gid, sgid_index=1), is_global=1, port_num=1)
    qp.to_rtr(a)
    qp.to_rts(attr(timeout=14, retry_cnt=7, rnr_retry=7, max_rd_atomic=1))


class Side:
    def __init__(self):
        self.cq = CQ(ctx, 64)
        self.mr = MR(pd, 2 * MSG, ACCESS)
        cap = QPCap(max_send_wr=16, max_recv_wr=16)
        self.qp = QP(pd, QPInitAttr(qp_type=e.IBV_QPT_RC, scq=self.cq, rcq=self.cq, cap=cap, sq_sig_all=0))


def poll_one(side, want_opcode, want_id, want_len=None):
    for _ in range(200000):
        n, wcs = side.cq.poll(1)
        if n:
            wc = wcs[0]
            assert wc.status == e.IBV_WC_SUCCESS, f"status {wc.status} for wr {wc.wr_id}"
            assert wc.opcode == want_opcode and wc.wr_id == want_id, (wc.opcode, wc.wr_id, want_opcode, want_id)
            assert wc.qp_num == side.qp.qp_num
            if want_len is not None:
                assert wc.byte_len == want_len, (wc.byte_len, want_len)
            return
    raise TimeoutError(f"no completion for wr {want_id}")


pairs = []
for _ in range(PAIRS):
    a, b = Side(), Side()
    connect(a.qp, b.qp)
    connect(b.qp, a.qp)
    pairs.append((a, b))

moved = 0
for r in range(ROUNDS):
    for i, (a, b) in enumerate(pairs):
        payload = bytes((r * 31 + i * 7 + k) & 0xFF for k in range(MSG))
        # SEND into a posted receive.
        b.qp.post_recv(RecvWR(wr_id=r, num_sge=1, sg=[SGE(b.mr.buf + MSG, MSG, b.mr.lkey)]))
        a.mr.write(payload, MSG, 0)
        a.qp.post_send(SendWR(wr_id=r, opcode=e.IBV_WR_SEND, num_sge=1, sg=[SGE(a.mr.buf, MSG, a.mr.lkey)],
                              send_flags=e.IBV_SEND_SIGNALED))
        poll_one(a, e.IBV_WC_SEND, r)
        poll_one(b, e.IBV_WC_RECV, r, MSG)
        assert b.mr.read(MSG, MSG) == payload, "SEND payload"
        # WRITE into the peer's first half, READ it back into our second half.
        wr = SendWR(wr_id=1000 + r, opcode=e.IBV_WR_RDMA_WRITE, num_sge=1, sg=[SGE(a.mr.buf, MSG, a.mr.lkey)],
                    send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(b.mr.rkey, b.mr.buf)
        a.qp.post_send(wr)
        poll_one(a, e.IBV_WC_RDMA_WRITE, 1000 + r)
        assert b.mr.read(MSG, 0) == payload, "WRITE payload"
        wr = SendWR(wr_id=2000 + r, opcode=e.IBV_WR_RDMA_READ, num_sge=1,
                    sg=[SGE(a.mr.buf + MSG, MSG, a.mr.lkey)], send_flags=e.IBV_SEND_SIGNALED)
        wr.set_wr_rdma(b.mr.rkey, b.mr.buf)
        a.qp.post_send(wr)
        poll_one(a, e.IBV_WC_RDMA_READ, 2000 + r, MSG)
        assert a.mr.read(MSG, MSG) == payload, "READ payload"
        moved += 3 * MSG
print(json.dumps({"pairs": PAIRS, "rounds": ROUNDS, "bytes": moved}))
