"""Verbs in the shape of rdma-core's pyverbs, on a simulated irdma device.

A test written for pyverbs reads the same here: a Context (the device), PDs, MRs with
their lkey and rkey over real buffers (`write`, `read`), CQs and CompChannels
(`req_notify`, `get_cq_event`, `ack_events`), QPs made from QPInitAttr/QPCap and moved
through INIT, RTR and RTS (or to ERR), SendWR and RecvWR with SGE lists and the caller's
wr_ids, `poll` returning WC objects, and the enums pyverbs has (IBV_WC_SUCCESS,
IBV_WR_SEND, ...). Everything runs in simulated time: a poll that finds nothing lets the
device run a little, as a CPU spinning on a CQ does.

One Context per process (SystemC elaborates once): run each test in a fresh process with
the `fresh_process` marker of the irdma_sim.pytest_plugin (see python/README.md).

Errors are VerbsError, an OSError whose errno is Linux's.
"""

from irdma_sim._irdma_sim import RawVerbs, Session, VerbsError

# enum ibv_wc_status
IBV_WC_SUCCESS, IBV_WC_LOC_LEN_ERR, IBV_WC_LOC_QP_OP_ERR, IBV_WC_LOC_EEC_OP_ERR, IBV_WC_LOC_PROT_ERR = 0, 1, 2, 3, 4
IBV_WC_WR_FLUSH_ERR, IBV_WC_MW_BIND_ERR, IBV_WC_BAD_RESP_ERR, IBV_WC_LOC_ACCESS_ERR = 5, 6, 7, 8
IBV_WC_REM_INV_REQ_ERR, IBV_WC_REM_ACCESS_ERR, IBV_WC_REM_OP_ERR, IBV_WC_RETRY_EXC_ERR = 9, 10, 11, 12
IBV_WC_RNR_RETRY_EXC_ERR, IBV_WC_FATAL_ERR, IBV_WC_RESP_TIMEOUT_ERR, IBV_WC_GENERAL_ERR = 13, 19, 20, 21
# enum ibv_wc_opcode (what the kernel's irdma reports; REG_MR as the kernel numbers it)
IBV_WC_SEND, IBV_WC_RDMA_WRITE, IBV_WC_RDMA_READ, IBV_WC_COMP_SWAP, IBV_WC_FETCH_ADD = 0, 1, 2, 3, 4
IBV_WC_BIND_MW, IBV_WC_LOCAL_INV, IBV_WC_REG_MR = 5, 6, 10
IBV_WC_RECV, IBV_WC_RECV_RDMA_WITH_IMM = 128, 129
# enum ibv_wc_flags
IBV_WC_GRH, IBV_WC_WITH_IMM, IBV_WC_WITH_INV = 1, 2, 4
# enum ibv_wr_opcode
IBV_WR_RDMA_WRITE, IBV_WR_RDMA_WRITE_WITH_IMM, IBV_WR_SEND, IBV_WR_SEND_WITH_IMM, IBV_WR_RDMA_READ = 0, 1, 2, 3, 4
IBV_WR_ATOMIC_CMP_AND_SWP, IBV_WR_ATOMIC_FETCH_AND_ADD, IBV_WR_LOCAL_INV, IBV_WR_SEND_WITH_INV = 5, 6, 7, 9
# enum ibv_send_flags
IBV_SEND_FENCE, IBV_SEND_SIGNALED, IBV_SEND_SOLICITED = 1, 2, 4
# enum ibv_access_flags
IBV_ACCESS_LOCAL_WRITE, IBV_ACCESS_REMOTE_WRITE, IBV_ACCESS_REMOTE_READ, IBV_ACCESS_REMOTE_ATOMIC = 1, 2, 4, 8
# enum ibv_qp_type, enum ibv_qp_state
IBV_QPT_RC, IBV_QPT_UD = 2, 4
IBV_QPS_RESET, IBV_QPS_INIT, IBV_QPS_RTR, IBV_QPS_RTS, IBV_QPS_ERR = 0, 1, 2, 3, 6

POLL_STEP_NS = 1000  # simulated time an empty poll lets pass
EVENT_TIMEOUT_NS = 10_000_000  # get_cq_event gives up after this much simulated time


class Context:
    """The device, and the simulated system around it (pyverbs.device.Context).

    `config_yaml`: a scenario's `config:` section as YAML text (defaults when empty);
    `trace_path`: where to write the transaction log, if anywhere. Usable as a context
    manager; close() frees everything left."""

    def __init__(self, name="irdma0", config_yaml="", trace_path=""):
        self.name = name
        self._session = Session(config_yaml, trace_path)
        self._verbs = RawVerbs(self._session)
        self._closed = False

    def counters(self):
        """The run's counters, under report.json's names."""
        return self._session.counters()

    def run_for_ns(self, ns):
        """Lets `ns` of simulated time pass (the device works meanwhile)."""
        self._session.run_for_ns(ns)

    @property
    def now_ps(self):
        """Simulated time, in picoseconds."""
        return self._session.now_ps

    def close(self):
        if not self._closed:
            self._closed = True
            try:
                self._verbs.close()
            finally:  # the session's CQs, pool and trace go whatever the QPs and MRs did
                self._session.shutdown()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


class PD:
    """A protection domain (pyverbs.pd.PD): MRs and QPs belong to one."""

    def __init__(self, ctx):
        self.ctx = ctx
        self.handle = ctx._verbs.alloc_pd()

    def close(self):
        """Frees the PD; VerbsError (EBUSY) while MRs or QPs still belong to it."""
        if self.handle is not None:
            self.ctx._verbs.dealloc_pd(self.handle)
            self.handle = None


class MR:
    """A memory region over a buffer of `length` bytes in host memory, registered with
    `access` (IBV_ACCESS_*) as a kernel ULP registers one (pyverbs.mr.MR). `buf` is the
    buffer's device address, which SGEs and remote addresses name."""

    def __init__(self, pd, length, access):
        self.pd = pd
        info = pd.ctx._verbs.reg_mr(pd.handle, length, access)
        self.handle, self.lkey, self.rkey = info["handle"], info["lkey"], info["rkey"]
        self.buf, self.length = info["addr"], info["length"]

    def write(self, data, length, offset=0):
        """Writes the first `length` bytes of `data` at `offset` (bytes or str)."""
        if isinstance(data, str):
            data = data.encode()
        self.pd.ctx._verbs.write_mr(self.handle, offset, bytes(data[:length]))

    def read(self, length, offset):
        """The `length` bytes at `offset`."""
        return self.pd.ctx._verbs.read_mr(self.handle, offset, length)

    def close(self):
        if self.handle is not None:
            self.pd.ctx._verbs.dereg_mr(self.handle)
            self.handle = None


class CompChannel:
    """A completion channel (pyverbs.cq.CompChannel): where armed CQs report events."""

    def __init__(self, ctx):
        self.ctx = ctx
        self._cqs = []

    def get_cq_event(self, cq):
        """Waits (in simulated time, up to EVENT_TIMEOUT_NS) for `cq`'s next completion
        event and returns it; VerbsError (ETIMEDOUT) if none comes."""
        if cq.channel is not self:
            raise VerbsError(22, f"CQ {cq.cq_num} reports its events to {'no channel' if cq.channel is None else 'another channel'}")
        waited = 0
        while cq._events_seen >= cq._events():
            if waited >= EVENT_TIMEOUT_NS:
                raise VerbsError(110, f"no completion event on CQ {cq.cq_num} within {EVENT_TIMEOUT_NS} ns")
            self.ctx.run_for_ns(POLL_STEP_NS)
            waited += POLL_STEP_NS
        cq._events_seen += 1
        cq._unacked += 1
        return cq

    def close(self):
        pass


class CQ:
    """A completion queue of at least `cqe` entries (pyverbs.cq.CQ), polled by the caller;
    with a `channel`, its events go there once armed by req_notify."""

    def __init__(self, ctx, cqe, cq_context=None, channel=None, comp_vector=0):
        self.ctx, self.cq_context, self.channel = ctx, cq_context, channel
        self.cq_num = ctx._session.alloc_cq(cqe, comp_vector)
        self._events_seen = 0
        self._unacked = 0

    def _events(self):
        return self.ctx._session.cq_events(self.cq_num)["completion_events"]

    def poll(self, num_entries=1):
        """Up to `num_entries` completions: (how many, [WC]). When there are none the device
        runs for POLL_STEP_NS first and the CQ is looked at again."""
        got = self.ctx._session.poll(self.cq_num, num_entries)
        if not got:
            self.ctx.run_for_ns(POLL_STEP_NS)
            got = self.ctx._session.poll(self.cq_num, num_entries)
        return len(got), [WC(c) for c in got]

    def req_notify(self, solicited_only=False):
        """Arms the CQ for its next completion (or next solicited one)."""
        self.ctx._session.req_notify_cq(self.cq_num, solicited_only)

    def ack_events(self, num_events):
        """Acknowledges events taken by get_cq_event."""
        if num_events > self._unacked:
            raise VerbsError(22, f"acknowledging {num_events} events of CQ {self.cq_num}, {self._unacked} taken")
        self._unacked -= num_events

    def close(self):
        """Frees the CQ (ib_free_cq): VerbsError (EBUSY) while QPs use it."""
        if self.cq_num is not None:
            self.ctx._session.free_cq(self.cq_num)
            self.cq_num = None


class WC:
    """A work completion (pyverbs.wr... WC): wr_id, status, opcode, vendor_err, byte_len,
    qp_num, src_qp, wc_flags, imm_data (host order), invalidated_rkey, pkey_index, slid, sl."""

    def __init__(self, c):
        self.wr_id, self.status, self.opcode = c["wr_id"], c["status"], c["opcode"]
        self.vendor_err, self.byte_len, self.qp_num = c["vendor_err"], c["byte_len"], c["qp_num"]
        self.src_qp, self.wc_flags, self.imm_data = c["src_qp"], c["wc_flags"], c["imm_data"]
        self.invalidated_rkey, self.pkey_index = c["invalidate_rkey"], c["pkey_index"]
        self.slid, self.sl = c["slid"], c["sl"]

    def __repr__(self):
        return (f"WC(wr_id={self.wr_id}, status={self.status}, opcode={self.opcode}, byte_len={self.byte_len}, "
                f"qp_num={self.qp_num})")


class SGE:
    """A scatter-gather element (pyverbs.wr.SGE): a buffer's device address, its length, the lkey."""

    def __init__(self, addr, length, lkey):
        self.addr, self.length, self.lkey = addr, length, lkey


def _sges(sg, num_sge):
    """The first `num_sge` of `sg` (all of it when None), as pyverbs takes them."""
    sg = list(sg or [])
    if num_sge is None:
        return sg
    if not 0 <= num_sge <= len(sg):
        raise VerbsError(22, f"num_sge {num_sge} with {len(sg)} SGE(s) given")
    return sg[:num_sge]


class RecvWR:
    """A receive work request (pyverbs.wr.RecvWR) with the caller's `wr_id`."""

    def __init__(self, wr_id=0, num_sge=None, sg=None, next_wr=None):
        self.wr_id, self.sg, self.next_wr = wr_id, _sges(sg, num_sge), next_wr

    def _dicts(self):
        wr, out = self, []
        while wr is not None:
            out.append({"wr_id": wr.wr_id, "sg_list": [(s.addr, s.length, s.lkey) for s in wr.sg]})
            wr = wr.next_wr
        return out


class SendWR:
    """A send work request (pyverbs.wr.SendWR): `opcode` (IBV_WR_*), the caller's `wr_id`,
    an SGE list, `send_flags`, `imm_data` (host order). set_wr_rdma and set_wr_atomic add
    the remote side; `invalidate_rkey` goes with IBV_WR_SEND_WITH_INV and IBV_WR_LOCAL_INV."""

    def __init__(self, wr_id=0, opcode=IBV_WR_SEND, num_sge=None, imm_data=0, sg=None,
                 send_flags=IBV_SEND_SIGNALED, next_wr=None, invalidate_rkey=0):
        self.wr_id, self.opcode, self.imm_data, self.sg = wr_id, opcode, imm_data, _sges(sg, num_sge)
        self.send_flags, self.next_wr, self.invalidate_rkey = send_flags, next_wr, invalidate_rkey
        self.remote_addr = self.rkey = self.compare_add = self.swap = 0

    def set_wr_rdma(self, rkey, addr):
        self.rkey, self.remote_addr = rkey, addr

    def set_wr_atomic(self, rkey, addr, compare_add, swap=0):
        self.rkey, self.remote_addr, self.compare_add, self.swap = rkey, addr, compare_add, swap

    def _dicts(self):
        wr, out = self, []
        while wr is not None:
            out.append({"wr_id": wr.wr_id, "opcode": wr.opcode, "send_flags": wr.send_flags,
                        "imm_data": wr.imm_data, "invalidate_rkey": wr.invalidate_rkey,
                        "remote_addr": wr.remote_addr, "rkey": wr.rkey, "compare_add": wr.compare_add,
                        "swap": wr.swap, "sg_list": [(s.addr, s.length, s.lkey) for s in wr.sg]})
            wr = wr.next_wr
        return out


class QPCap:
    """Queue sizes asked of a QP (pyverbs.qp.QPCap); the QP's `cap` holds what it got."""

    def __init__(self, max_send_wr=1, max_recv_wr=10, max_send_sge=1, max_recv_sge=1, max_inline_data=0):
        if max_inline_data:
            raise VerbsError(95, "inline data is not offered: post from an MR")
        self.max_send_wr, self.max_recv_wr = max_send_wr, max_recv_wr
        self.max_send_sge, self.max_recv_sge, self.max_inline_data = max_send_sge, max_recv_sge, max_inline_data


class QPInitAttr:
    """What a QP is made from (pyverbs.qp.QPInitAttr): its type, send and receive CQs, caps."""

    def __init__(self, qp_type=IBV_QPT_RC, qp_context=None, scq=None, rcq=None, srq=None, cap=None, sq_sig_all=0):
        if srq is not None:
            raise VerbsError(95, "SRQs are not modelled")
        if qp_type != IBV_QPT_RC:
            # A datagram names its destination through an address handle, which is not offered:
            # a UD QP here could post only datagrams that go nowhere.
            raise VerbsError(95, "only RC QPs are offered here (UD needs address handles)")
        self.qp_type, self.qp_context, self.send_cq, self.recv_cq = qp_type, qp_context, scq, rcq
        self.cap, self.sq_sig_all = cap or QPCap(), sq_sig_all


class QPAttr:
    """Attributes of a state move (pyverbs.qp.QPAttr): `qp_state`, `dest_qp_num`, `qkey`."""

    def __init__(self, qp_state=IBV_QPS_INIT, dest_qp_num=0, qkey=0):
        self.qp_state, self.dest_qp_num, self.qkey = qp_state, dest_qp_num, qkey


class QP:
    """A queue pair (pyverbs.qp.QP), made in RESET; to_init, to_rtr (with the peer's QP
    number) and to_rts make it ready, modify(QPAttr(IBV_QPS_ERR)) flushes it. A move back
    to RESET is not offered (EINVAL)."""

    def __init__(self, pd, init_attr):
        self.pd, self.init_attr = pd, init_attr
        if init_attr.send_cq is None or init_attr.recv_cq is None:
            raise VerbsError(22, "a QP needs a send CQ and a receive CQ")
        cap = init_attr.cap
        self.qp_num, got = pd.ctx._verbs.create_qp(pd.handle, init_attr.send_cq.cq_num, init_attr.recv_cq.cq_num,
                                                    cap.max_send_wr, cap.max_recv_wr, cap.max_send_sge,
                                                    cap.max_recv_sge, init_attr.qp_type)
        self.cap = QPCap(got["max_send_wr"], got["max_recv_wr"], got["max_send_sge"], got["max_recv_sge"])
        self.qp_type = init_attr.qp_type
        self._sig_all = bool(init_attr.sq_sig_all)

    @property
    def qp_state(self):
        return self.pd.ctx._verbs.qp_state(self.qp_num)

    def modify(self, attr, attr_mask=0):
        """Moves the QP to attr.qp_state: RESET -> INIT -> RTR -> RTS, any -> ERR (EINVAL otherwise).
        A Q_Key is EINVAL: it is for UD QPs, which are not offered."""
        if attr.qkey:
            raise VerbsError(22, "a Q_Key is for UD QPs, which are not offered here")
        self.pd.ctx._verbs.modify_qp(self.qp_num, attr.qp_state, attr.dest_qp_num, attr.qkey)

    def to_init(self, attr=None):
        self.modify(QPAttr(IBV_QPS_INIT))

    def to_rtr(self, attr):
        """`attr`: a QPAttr with the peer's dest_qp_num, or the peer's QP number."""
        dest = attr if isinstance(attr, int) else attr.dest_qp_num
        self.modify(QPAttr(IBV_QPS_RTR, dest, getattr(attr, "qkey", 0)))

    def to_rts(self, attr=None):
        self.modify(QPAttr(IBV_QPS_RTS))

    def post_send(self, wr, bad_wr=None):
        wrs = wr._dicts()
        if self._sig_all:
            for d in wrs:
                d["send_flags"] |= IBV_SEND_SIGNALED
        self.pd.ctx._verbs.post_send(self.qp_num, wrs)

    def post_recv(self, wr, bad_wr=None):
        self.pd.ctx._verbs.post_recv(self.qp_num, wr._dicts())

    def close(self):
        if self.qp_num is not None:
            self.pd.ctx._verbs.destroy_qp(self.qp_num)
            self.qp_num = None
