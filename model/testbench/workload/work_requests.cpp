// The work-request builder: what each op puts on the wire and the completions it must
// produce at its QP and at the receiver.

#include "model/testbench/workload/bookkeeping.h"
#include "model/testbench/workload/payload.h"

namespace irdma_sim::testbench {

using namespace ibcore;

// What work request `seq` of `q` is on the wire (its opcode, immediate, invalidate, remote
// buffer, UD destination, atomic operands) and what it must complete as, at `q` and at the
// receiver; atomics also move the model of the peer's atomic slots on.
void Workload::describe(Qp& q, uint64_t seq, TrafficOp op, WrCtx& ctx, ib_send_wr& wr,
                        ib_sge& sge, ExpectedCompletion& done, ExpectedCompletion& msg) {
  const uint32_t len = ctx.len;
  const uint64_t wr_id = ctx.wr_id;
  const TrafficSpec& t = sc_.traffic;
  const BufferedQp& bq = *q.bq;
  const BufferedQp& peer = *q.peer->bq;
  const uint32_t slot = uint32_t(seq % bq.sq_depth());
  done = {wr_id, bq.qp(), bq.qp_num(), IB_WC_SEND, len};
  msg = {0, peer.qp(), peer.qp_num(), IB_WC_RECV, len};
  if (q.ud) {
    const device::DeviceConfig& d = sc_.config.device;
    wr.remote_qpn = peer.qp_num();
    wr.remote_qkey = q.peer->qkey;
    msg.qp_num = bq.qp_num();  // a UD receive names its source QP
    msg.grh = done.grh = true;
    msg.network_hdr_type = done.network_hdr_type = d.ud_ipv4 ? RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
    msg.with_smac = true;
    msg.smac = d.mac;
    msg.vlan_tci = d.ud_vlan_tci;
  }
  switch (op) {
    case TrafficOp::send:
      if (t.imm_every && seq % t.imm_every == t.imm_every - 1) {
        msg.with_imm = true;
        msg.imm_data = uint32_t(splitmix64(seq ^ sc_.seed));
        wr.opcode = IB_WR_SEND_WITH_IMM;
        wr.ex.imm_data = __builtin_bswap32(msg.imm_data);  // htonl
      } else if (t.inv_every && !q.ud && seq % t.inv_every == t.inv_every - 1) {  // RC only
        msg.with_inv = true;
        msg.inv_rkey = uint32_t(splitmix64(seq * 3 + sc_.seed)) | 1;
        wr.opcode = IB_WR_SEND_WITH_INV;
        wr.ex.invalidate_rkey = msg.inv_rkey;
      }
      break;
    case TrafficOp::write_imm:
      msg.opcode = IB_WC_RECV_RDMA_WITH_IMM;
      msg.with_imm = true;
      msg.imm_data = uint32_t(splitmix64(seq ^ sc_.seed ^ 0x1D));
      wr.ex.imm_data = __builtin_bswap32(msg.imm_data);
      [[fallthrough]];
    case TrafficOp::write:
      wr.opcode = op == TrafficOp::write ? IB_WR_RDMA_WRITE : IB_WR_RDMA_WRITE_WITH_IMM;
      wr.remote_addr = peer.window_addr(slot);  // the first half takes WRITEs
      wr.rkey = q.rkey;
      done.opcode = IB_WC_RDMA_WRITE;
      break;
    case TrafficOp::read:
    case TrafficOp::read_inv:
      wr.opcode = IB_WR_RDMA_READ;
      wr.remote_addr = peer.window_addr(peer.sq_depth() + slot);
      wr.rkey = q.rkey;
      done.opcode = IB_WC_RDMA_READ;
      if (op == TrafficOp::read_inv) {
        // The sink names the QP's region, which the READ invalidates as it lands: it lies in
        // that region (the device places the data through the key), on the source itself.
        wr.opcode = IB_WR_RDMA_READ_WITH_INV;
        sge.lkey = q.mr_registered ? q.mr->lkey : 0;
        sge.addr = wr.remote_addr;
        forget_region(q);
      }
      break;
    case TrafficOp::fetch_add:
    case TrafficOp::cmp_swap: {
      uint64_t& value = q.atomic_values[slot];
      ctx.original = value;
      if (op == TrafficOp::fetch_add) {
        wr.opcode = IB_WR_ATOMIC_FETCH_AND_ADD;
        wr.compare_add = splitmix64(seq + sc_.seed) >> 40;
        value += wr.compare_add;
        done.opcode = IB_WC_FETCH_ADD;
      } else {
        wr.opcode = IB_WR_ATOMIC_CMP_AND_SWP;
        wr.compare_add = seq % 3 ? value : value + 1;  // two in three match
        wr.swap = splitmix64(seq ^ sc_.seed);
        if (wr.compare_add == value) value = wr.swap;
        done.opcode = IB_WC_COMP_SWAP;
      }
      ctx.after = value;
      wr.remote_addr = peer.window_addr(2 * peer.sq_depth() + slot);
      wr.rkey = q.rkey;
      done.byte_len = 0;  // irdma tracks no length for atomics
      break;
    }
    case TrafficOp::local_inv:
      // The QP's region when it is registered; else a key the device never issued (an
      // index beyond its STags), which it ignores.
      wr.opcode = IB_WR_LOCAL_INV;
      wr.ex.invalidate_rkey = q.mr_registered ? q.mr->rkey : uint32_t(splitmix64(seq + 77)) | 0x80000000u;
      forget_region(q);
      wr.num_sge = 0;
      done.opcode = IB_WC_LOCAL_INV;
      done.byte_len = 0;
      break;
    case TrafficOp::reg_mr: {
      const uint32_t key = (q.mr->rkey & ~0xFFu) | ((q.mr->rkey + 1) & 0xFFu);  // ib_update_fast_reg_key
      q.mr->lkey = q.mr->rkey = key;
      wr.opcode = IB_WR_REG_MR;
      wr.reg.mr = q.mr;
      wr.reg.key = key;
      wr.reg.access = IB_ACCESS_LOCAL_WRITE | IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ |
                      IB_ACCESS_REMOTE_ATOMIC | IB_ACCESS_MW_BIND;
      wr.num_sge = 0;
      q.mr_registered = true;
      q.rkey = key;
      done.opcode = IB_WC_REG_MR;
      done.byte_len = 0;
      break;
    }
    case TrafficOp::bind_mw: {
      const uint32_t key = (q.mw->rkey & ~0xFFu) | ((q.mw->rkey + 1) & 0xFFu);  // ibv_inc_rkey
      q.mw->rkey = key;
      wr.opcode = IB_WR_BIND_MW;
      wr.bind.mw = q.mw;
      wr.bind.mr = q.mr;
      wr.bind.rkey = key;
      wr.bind.addr = q.mr->iova;
      wr.bind.length = q.mr->length;
      wr.bind.access = IB_ACCESS_REMOTE_WRITE | IB_ACCESS_REMOTE_READ | IB_ACCESS_REMOTE_ATOMIC;
      wr.num_sge = 0;
      q.rkey = key;
      done.status = IB_WC_GENERAL_ERR;  // the kernel's mapping has no BIND_MW opcode
      done.byte_len = 0;
      break;
    }
    case TrafficOp::nop:
      done.status = IB_WC_GENERAL_ERR;  // nor one for a signaled NOP
      done.byte_len = 0;
      done.silent_on_flush = true;
      break;
  }
}

}  // namespace irdma_sim::testbench
