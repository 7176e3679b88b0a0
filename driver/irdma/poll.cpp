// The poll path, from the CQ verb to each ib_wc: irdma_poll_cq (retired buffers of a resize
// first, then the ring, then software flush completions), the ring loop, irdma_poll_one,
// and irdma_process_cqe's mapping of irdma_cq_poll_info to ib_wc (spec G.5, G.6; kernel
// rules). The CQE reader under it is the uk layer's (uk_cq.cpp).
#include <cerrno>

#include "driver/irdma/poll.h"

#include "driver/irdma/irdma_device.h"

namespace irdma {
namespace {

using namespace ibcore;

constexpr uint8_t IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE = 0x09;
constexpr uint8_t IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b;

ib_wc_status flush_err_to_ib_wc_status(uint16_t minor) {
  switch (minor) {
    case FLUSH_GENERAL_ERR: return IB_WC_WR_FLUSH_ERR;
    case FLUSH_PROT_ERR: return IB_WC_LOC_PROT_ERR;
    case FLUSH_REM_ACCESS_ERR: return IB_WC_REM_ACCESS_ERR;
    case FLUSH_LOC_QP_OP_ERR: return IB_WC_LOC_QP_OP_ERR;
    case FLUSH_REM_OP_ERR: return IB_WC_REM_OP_ERR;
    case FLUSH_LOC_LEN_ERR: return IB_WC_LOC_LEN_ERR;
    case FLUSH_RETRY_EXC_ERR: return IB_WC_RETRY_EXC_ERR;
    case FLUSH_MW_BIND_ERR: return IB_WC_MW_BIND_ERR;
    case FLUSH_REM_INV_REQ_ERR: return IB_WC_REM_INV_REQ_ERR;
    case FLUSH_RNR_RETRY_EXC_ERR: return IB_WC_RNR_RETRY_EXC_ERR;
    default: return IB_WC_FATAL_ERR;
  }
}

// Returns false for an SQ operation ib_wc has no opcode for.
bool set_ib_wc_op_sq(const irdma_cq_poll_info& info, ib_wc* wc) {
  switch (info.op_type) {
    case IRDMA_OP_TYPE_RDMA_WRITE:
    case IRDMA_OP_TYPE_RDMA_WRITE_SOL: wc->opcode = IB_WC_RDMA_WRITE; return true;
    case IRDMA_OP_TYPE_RDMA_READ_INV_STAG:
    case IRDMA_OP_TYPE_RDMA_READ: wc->opcode = IB_WC_RDMA_READ; return true;
    case IRDMA_OP_TYPE_SEND_SOL:
    case IRDMA_OP_TYPE_SEND_SOL_INV:
    case IRDMA_OP_TYPE_SEND_INV:
    case IRDMA_OP_TYPE_SEND: wc->opcode = IB_WC_SEND; return true;
    case IRDMA_OP_TYPE_FAST_REG_NSMR: wc->opcode = IB_WC_REG_MR; return true;
    case IRDMA_OP_TYPE_INV_STAG: wc->opcode = IB_WC_LOCAL_INV; return true;
    case IRDMA_OP_TYPE_ATOMIC_FETCH_AND_ADD: wc->opcode = IB_WC_FETCH_ADD; return true;
    case IRDMA_OP_TYPE_ATOMIC_COMPARE_AND_SWAP: wc->opcode = IB_WC_COMP_SWAP; return true;
    default: return false;
  }
}

// GEN_1/2 RoCE RQ CQEs carry the message's BTH opcode; GEN_3 ones the sender's SQ opcode.
void set_ib_wc_op_rq(const irdma_cq_poll_info& info, irdma_vers hw_rev, ib_wc* wc) {
  const bool write_imm =
      hw_rev >= IRDMA_GEN_3
          ? info.op_type == IRDMA_OP_TYPE_RDMA_WRITE || info.op_type == IRDMA_OP_TYPE_RDMA_WRITE_SOL
          : info.op_type == IB_OPCODE_RDMA_WRITE_LAST_WITH_IMMEDIATE ||
                info.op_type == IB_OPCODE_RDMA_WRITE_ONLY_WITH_IMMEDIATE;
  wc->opcode = write_imm ? IB_WC_RECV_RDMA_WITH_IMM : IB_WC_RECV;
}

// The ring moved: a CQE was consumed (or skipped) there.
bool moved(const irdma_cq_uk& uk, uint32_t head, uint8_t polarity) {
  return uk.cq_ring.head != head || uk.polarity != polarity;
}

}  // namespace

void irdma_process_cqe(ib_wc* wc, const irdma_cq_poll_info& info) {
  const irdma_qp_uk* qp = info.qp_handle;
  const bool roce_ud = qp->qp_type == IRDMA_QP_TYPE_ROCE_UD;
  wc->wc_flags = 0;
  wc->pkey_index = 0;
  wc->wr_id = info.wr_id;
  wc->qp = static_cast<ib_qp*>(qp->back_qp);

  if (info.error) {
    wc->status = info.comp_status == IRDMA_COMPL_STATUS_FLUSHED
                     ? flush_err_to_ib_wc_status(info.minor_err)
                     : IB_WC_GENERAL_ERR;
    wc->vendor_err = uint32_t(info.major_err) << 16 | info.minor_err;
  } else if (!(info.imm_valid | info.ud_smac_valid | info.ud_vlan_valid)) {
    wc->status = IB_WC_SUCCESS;  // the common case, in one test
    wc->sl = 0;
  } else {
    wc->status = IB_WC_SUCCESS;
    if (info.imm_valid) {
      wc->ex.imm_data = __builtin_bswap32(info.imm_data);  // htonl
      wc->wc_flags |= IB_WC_WITH_IMM;
    }
    if (info.ud_smac_valid) {
      for (int i = 0; i < 6; i++) wc->smac[i] = info.ud_smac[i];
      wc->wc_flags |= IB_WC_WITH_SMAC;
    }
    if (info.ud_vlan_valid) {
      const uint16_t vlan = info.ud_vlan & VLAN_VID_MASK;
      wc->sl = uint8_t(info.ud_vlan >> VLAN_PRIO_SHIFT);
      if (vlan) {
        wc->vlan_id = vlan;
        wc->wc_flags |= IB_WC_WITH_VLAN;
      }
    } else {
      wc->sl = 0;
    }
  }

  if (info.q_type == IRDMA_CQE_QTYPE_SQ) {
    if (!set_ib_wc_op_sq(info, wc)) wc->status = IB_WC_GENERAL_ERR;
  } else {
    set_ib_wc_op_rq(info, qp->hw_rev, wc);
    if (info.stag_invalid_set && !roce_ud) {
      wc->ex.invalidate_rkey = info.inv_stag;
      wc->wc_flags |= IB_WC_WITH_INVALIDATE;
    }
  }

  if (roce_ud) {
    wc->src_qp = info.ud_src_qpn;
    wc->slid = 0;
    wc->wc_flags |= IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE;
    wc->network_hdr_type = info.ipv4 ? RDMA_NETWORK_IPV4 : RDMA_NETWORK_IPV6;
  } else {
    wc->src_qp = info.qp_id;
  }
  wc->byte_len = info.bytes_xfered;
}

int irdma_poll_one(irdma_cq_uk* ukcq, irdma_cq_poll_info* info, ib_wc* wc) {
  const int ret = irdma_uk_cq_poll_cmpl(ukcq, info);
  if (ret == 0) irdma_process_cqe(wc, *info);
  return ret;
}

int irdma_device::poll_cq(ib_cq* ibcq, int num_entries, ib_wc* wc) {
  auto* cq = static_cast<irdma_cq*>(ibcq);
  std::lock_guard<hal::Lock> guard(*cq->lock);
  int npolled = cq->resize_list.empty() ? irdma_poll_ring(&cq->sc_cq, num_entries, wc)
                                        : poll_resized(cq, num_entries, wc);
  if (npolled < 0) return npolled;
  if (!cq->sc_cq.newly_flushed.empty()) take_newly_flushed(cq);
  if (npolled < num_entries) {  // the ring ran dry: software completions may follow
    for (; npolled < num_entries && !cq->cmpl_generated.empty(); npolled++) {
      irdma_process_cqe(&wc[npolled], cq->cmpl_generated.front());
      cq->cmpl_generated.pop_front();
    }
  }
  return npolled;
}

// The hot loop of every poller: flattened, so the CQE reader and the mapping inline into it.
// The poll info lives in the loop (the kernel keeps one per CQ), so it can stay in
// registers; nothing in it outlives a CQE.
__attribute__((flatten)) int irdma_poll_ring(irdma_cq_uk* ukcq, int num_entries, ib_wc* wc) {
  int npolled = 0;
  irdma_cq_poll_info info;
  while (npolled < num_entries) {
    const int ret = irdma_poll_one(ukcq, &info, &wc[npolled]);
    if (ret == 0) {
      npolled++;
    } else if (ret == -ENOENT) {
      break;
    } else if (ret != -EFAULT) {
      return ret;
    }
  }
  return npolled;
}

// __irdma_poll_cq with retired buffers (the CQ locked): each is polled before the current one; once the
// current ring yields a CQE every retired one is done, otherwise those before the last that
// yielded are, and (this driver's addition) so are the leading ones found empty: the
// device wrote its last CQE there before MODIFY_CQ completed, so an empty retired ring stays
// empty, and keeping it would keep the device's arm rule firing on an idle CQ.
// SW_CQ_SELECT counts the buffers freed.
int irdma_device::poll_resized(irdma_cq* cq, int num_entries, ib_wc* wc) {
  int npolled = 0;
  size_t last_buf = 0;  // 1 + the index of the last retired buffer that yielded
  for (size_t i = 0; i < cq->resize_list.size() && npolled < num_entries; i++) {
    irdma_cq_uk& uk = cq->resize_list[i].uk;
    const uint32_t head = uk.cq_ring.head;
    const uint8_t polarity = uk.polarity;
    const int n = irdma_poll_ring(&uk, num_entries - npolled, wc + npolled);
    if (n < 0) return n;
    npolled += n;
    cq->retired_polled += uint64_t(n);
    if (moved(uk, head, polarity)) last_buf = i + 1;
    for (irdma_qp_uk* qp : uk.newly_flushed) cq->sc_cq.newly_flushed.push_back(qp);
    uk.newly_flushed.clear();
  }
  const uint32_t head = cq->sc_cq.cq_ring.head;
  const uint8_t polarity = cq->sc_cq.polarity;
  const int n = irdma_poll_ring(&cq->sc_cq, num_entries - npolled, wc + npolled);
  if (n < 0) return n;
  npolled += n;
  size_t done = moved(cq->sc_cq, head, polarity) ? cq->resize_list.size()
                : last_buf                        ? last_buf - 1
                                                  : 0;
  while (done < cq->resize_list.size() && !irdma_uk_cq_has_cqe(&cq->resize_list[done].uk)) done++;
  for (size_t i = 0; i < done; i++) {
    cq->sc_cq.corrupt_cqes += cq->resize_list.front().uk.corrupt_cqes;
    cq->sc_cq.destroyed_qp_cqes += cq->resize_list.front().uk.destroyed_qp_cqes;
    cq->sc_cq.ext_half_waits += cq->resize_list.front().uk.ext_half_waits;
    hw().dma.free_coherent(cq->resize_list.front().ring);
    cq->resize_list.pop_front();
  }
  if (done) irdma_uk_cq_set_resized_cnt(&cq->sc_cq, uint32_t(done));
  return npolled;
}

}  // namespace irdma
