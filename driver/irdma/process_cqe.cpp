// irdma_process_cqe: irdma_cq_poll_info -> ib_wc (spec G.5, G.6; kernel rules).
#include <cerrno>

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

}  // namespace irdma
