// The CQE reader: irdma_uk_cq_poll_cmpl as spec D.4 describes it (GEN_2 rules).
#include <cerrno>
#include <cstring>

#include "driver/hal/dma.h"
#include "driver/irdma/uk.h"

namespace irdma {
namespace {

// A flush CQE (its error's major code is the flush one): a GEN_2 flush may stand for many
// completions or none, so the counts of CQEs per completion leave them out.
bool is_flush_cqe(uint64_t qword3) {
  return (qword3 & IRDMA_CQ_ERROR) && FIELD_GET(IRDMA_CQ_MAJERR, qword3) == IRDMA_FLUSH_MAJOR_ERR;
}

// Steps head once, flipping the expected polarity where the ring wraps.
inline void cq_move_head(irdma_cq_uk* cq) {
  if (++cq->cq_ring.head == cq->cq_ring.size) {
    cq->cq_ring.head = 0;
    cq->polarity ^= 1;
  }
}

// Locates the extended half and checks its valid bit. In 32-byte mode it is the next slot,
// which belongs to the next pass when it is slot 0.
inline const uint64_t* ext_half(const irdma_cq_uk* cq, const uint64_t* cqe) {
  uint8_t expected = cq->polarity;
  const uint64_t* ext;
  if (cq->avoid_mem_cflct) {
    ext = cqe + 4;
  } else {
    const uint32_t next = ring_next(cq->cq_ring.head, cq->cq_ring.size);
    if (next == 0) expected ^= 1;
    ext = cq->cqe_at(next);
  }
  const uint64_t qword7 = READ_ONCE(ext[3]);
  return FIELD_GET(IRDMA_CQ_VALID, qword7) == expected ? ext : nullptr;
}

void read_ext(const uint64_t* ext, irdma_cq_poll_info* info) {
  const uint64_t qword7 = READ_ONCE(ext[3]);
  info->imm_valid = qword7 & IRDMA_CQ_IMMVALID;
  info->ud_smac_valid = qword7 & IRDMA_CQ_UDSMACVALID;
  info->ud_vlan_valid = qword7 & IRDMA_CQ_UDVLANVALID;
  if (info->imm_valid) info->imm_data = uint32_t(FIELD_GET(IRDMA_CQ_IMMDATALOW32, READ_ONCE(ext[0])));
  if (info->ud_smac_valid || info->ud_vlan_valid) {
    const uint64_t qword6 = READ_ONCE(ext[2]);
    info->ud_vlan = uint16_t(FIELD_GET(IRDMA_CQ_UDVLAN, qword6));
    const uint64_t mac = FIELD_GET(IRDMA_CQ_UDSMAC, qword6);
    for (int i = 0; i < 6; i++) info->ud_smac[i] = uint8_t(mac >> (8 * (5 - i)));
  }
}

// The live QP a CQE names by id and context, or null.
inline irdma_qp_uk* cqe_qp(const irdma_cq_uk* cq, uint64_t qword1, uint32_t qp_id) {
  if (!qword1 || qp_id >= cq->qp_table.size) return nullptr;
  // Acquire: the QP was set up before create_qp published it here.
  irdma_qp_uk* qp = smp_load_acquire(cq->qp_table.qps[qp_id]);
  return qp && qp->compl_ctx == qword1 ? qp : nullptr;
}

}  // namespace

irdma_qp_err irdma_ae_to_qp_err_code(uint16_t ae_id) {
  switch (ae_id) {
    case IRDMA_AE_AMP_UNALLOCATED_STAG:
    case IRDMA_AE_AMP_INVALID_STAG:
    case IRDMA_AE_AMP_BAD_QP:
    case IRDMA_AE_AMP_BAD_PD:
    case IRDMA_AE_AMP_BAD_STAG_KEY:
    case IRDMA_AE_AMP_BAD_STAG_INDEX:
    case IRDMA_AE_AMP_BOUNDS_VIOLATION:
    case IRDMA_AE_AMP_RIGHTS_VIOLATION:
    case IRDMA_AE_AMP_TO_WRAP:
    case IRDMA_AE_PRIV_OPERATION_DENIED:
      return {FLUSH_PROT_ERR, IRDMA_QP_EVENT_ACCESS_ERR};
    case IRDMA_AE_UDA_XMIT_BAD_PD:
    case IRDMA_AE_WQE_UNEXPECTED_OPCODE:
      return {FLUSH_LOC_QP_OP_ERR, IRDMA_QP_EVENT_CATASTROPHIC};
    case IRDMA_AE_UDA_XMIT_DGRAM_TOO_LONG:
    case IRDMA_AE_UDA_XMIT_DGRAM_TOO_SHORT:
    case IRDMA_AE_UDA_L4LEN_INVALID:
    case IRDMA_AE_DDP_UBE_DDP_MESSAGE_TOO_LONG_FOR_AVAILABLE_BUFFER:
    case IRDMA_AE_DDP_UBE_INVALID_MO:
      return {FLUSH_LOC_LEN_ERR, IRDMA_QP_EVENT_CATASTROPHIC};
    case IRDMA_AE_AMP_INVALIDATE_NO_REMOTE_ACCESS_RIGHTS:
    case IRDMA_AE_IB_REMOTE_ACCESS_ERROR:
      return {FLUSH_REM_ACCESS_ERR, IRDMA_QP_EVENT_ACCESS_ERR};
    case IRDMA_AE_AMP_MWBIND_VALID_STAG:
    case IRDMA_AE_AMP_MWBIND_INVALID_RIGHTS:
    case IRDMA_AE_AMP_MWBIND_INVALID_BOUNDS:
    case IRDMA_AE_AMP_MWBIND_BIND_DISABLED:
      return {FLUSH_MW_BIND_ERR, IRDMA_QP_EVENT_ACCESS_ERR};
    case IRDMA_AE_LLP_TOO_MANY_RETRIES:
      return {FLUSH_RETRY_EXC_ERR, IRDMA_QP_EVENT_CATASTROPHIC};
    case IRDMA_AE_IB_INVALID_REQUEST:
      return {FLUSH_REM_INV_REQ_ERR, IRDMA_QP_EVENT_REQ_ERR};
    case IRDMA_AE_LLP_RECEIVED_MPA_CRC_ERROR:
    case IRDMA_AE_LLP_SEGMENT_TOO_SMALL:
    case IRDMA_AE_ROCE_RSP_LENGTH_ERROR:
    case IRDMA_AE_IB_REMOTE_OP_ERROR:
      return {FLUSH_REM_OP_ERR, IRDMA_QP_EVENT_CATASTROPHIC};
    case IRDMA_AE_LLP_TOO_MANY_RNRS:
      return {FLUSH_RNR_RETRY_EXC_ERR, IRDMA_QP_EVENT_CATASTROPHIC};
    case IRDMA_AE_LCE_QP_CATASTROPHIC:
    case IRDMA_AE_REMOTE_QP_CATASTROPHIC:
    case IRDMA_AE_LOCAL_QP_CATASTROPHIC:
    case IRDMA_AE_RCE_QP_CATASTROPHIC:
      return {FLUSH_FATAL_ERR, IRDMA_QP_EVENT_CATASTROPHIC};
    default:
      return {FLUSH_GENERAL_ERR, IRDMA_QP_EVENT_CATASTROPHIC};
  }
}

namespace {

// An error CQE's codes (spec D.4 step 4). Off the hot path.
__attribute__((cold, noinline)) void decode_error(const irdma_cq_uk* cq, uint64_t* cqe,
                                                  uint64_t& qword3, irdma_cq_poll_info* info) {
  info->major_err = uint16_t(FIELD_GET(IRDMA_CQ_MAJERR, qword3));
  info->minor_err = uint16_t(FIELD_GET(IRDMA_CQ_MINERR, qword3));
  if (info->major_err == IRDMA_FLUSH_MAJOR_ERR) {
    info->comp_status = IRDMA_COMPL_STATUS_FLUSHED;
    // Later re-reads of a parked flush CQE report a generic flush.
    if (info->minor_err != FLUSH_GENERAL_ERR) {
      qword3 = (qword3 & ~IRDMA_CQ_MINERR) | FIELD_PREP(IRDMA_CQ_MINERR, FLUSH_GENERAL_ERR);
      WRITE_ONCE(cqe[3], qword3);
    }
  } else if (cq->hw_rev >= IRDMA_GEN_3 && info->major_err == IRDMA_SRQFLUSH_RSVD_MAJOR_ERR) {
    info->minor_err = irdma_ae_to_qp_err_code(info->minor_err).flush_code;  // GEN_3 never parks: no rewrite
    info->comp_status = IRDMA_COMPL_STATUS_FLUSHED;
  } else {
    info->comp_status = IRDMA_COMPL_STATUS_UNKNOWN;
  }
}

// A flush CQE says the QP is in error: the verbs layer takes it from there (software
// flush completions).
__attribute__((cold, noinline)) void note_flush(irdma_cq_uk* cq, irdma_qp_uk* qp,
                                                const irdma_cq_poll_info* info) {
  if (info->comp_status != IRDMA_COMPL_STATUS_FLUSHED) return;
  // The SQ's and the RQ's CQ may differ, each polled under its own lock.
  if (__atomic_exchange_n(&qp->flush_seen, true, __ATOMIC_RELAXED)) return;
  cq->newly_flushed.push_back(qp);
}

// An SQ error CQE: a flush is noted; on GEN_3 a RoCE UD send's error whose major carries
// the CIE signature is a non-fatal notice, reported as a success.
__attribute__((cold, noinline)) void sq_error(irdma_cq_uk* cq, irdma_qp_uk* qp,
                                              irdma_cq_poll_info* info) {
  note_flush(cq, qp, info);
  if (cq->hw_rev >= IRDMA_GEN_3 && info->comp_status == IRDMA_COMPL_STATUS_UNKNOWN &&
      qp->qp_type == IRDMA_QP_TYPE_ROCE_UD && (info->major_err & IRDMA_CIE_SIGNATURE_MASK) == IRDMA_CIE_SIGNATURE) {
    info->error = false;
    info->major_err = info->minor_err = 0;
    info->comp_status = IRDMA_COMPL_STATUS_SUCCESS;
  }
}

// Visits the unpolled ring slots from head in order, until `visit` returns true (then
// returns true). Every slot is visited, so the extended half of a 32-byte-mode CQE is too:
// its qword1 is zero, which never matches a QP's context.
template <typename Visit>
bool walk_unpolled(const irdma_cq_uk* cq, Visit visit) {
  uint32_t idx = cq->cq_ring.head;
  uint8_t polarity = cq->polarity;
  for (uint32_t seen = 0; seen < cq->cq_ring.size; seen++) {
    uint64_t* cqe = cq->cqe_at(idx);
    if (FIELD_GET(IRDMA_CQ_VALID, READ_ONCE(cqe[3])) != polarity) return false;
    hal::dma_rmb();
    if (visit(cqe)) return true;
    if (++idx == cq->cq_ring.size) {
      idx = 0;
      polarity ^= 1;
    }
  }
  return false;
}

}  // namespace

void irdma_uk_cq_init(irdma_cq_uk* cq, uint64_t* base, uint64_t* shadow, uint32_t cq_id,
                      uint32_t cq_size, bool avoid_mem_cflct) {
  cq->cq_base = base;
  cq->shadow_area = shadow;
  cq->cq_id = cq_id;
  cq->cq_size = cq_size;
  cq->cq_ring = {0, 0, cq_size};
  cq->polarity = 1;
  cq->avoid_mem_cflct = avoid_mem_cflct;
  cq->cqe_shift = avoid_mem_cflct ? 3 : 2;
}

bool irdma_uk_cq_has_cqe(const irdma_cq_uk* cq) {
  const uint64_t qword3 = READ_ONCE(cq->cqe_at(cq->cq_ring.head)[3]);
  return FIELD_GET(IRDMA_CQ_VALID, qword3) == cq->polarity;
}

int irdma_uk_cq_poll_cmpl(irdma_cq_uk* cq, irdma_cq_poll_info* info) {
  uint64_t* cqe = cq->cqe_at(cq->cq_ring.head);
  uint64_t qword3 = READ_ONCE(cqe[3]);
  if (FIELD_GET(IRDMA_CQ_VALID, qword3) != cq->polarity) return -ENOENT;
  hal::dma_rmb();

  const bool ext_valid = qword3 & IRDMA_CQ_EXTCQE;
  if (ext_valid) {
    const uint64_t* ext = ext_half(cq, cqe);
    if (!ext) {  // the extended half is not written yet: consume nothing
      cq->ext_half_waits++;
      return -ENOENT;
    }
    hal::dma_rmb();
    read_ext(ext, info);
  } else {
    info->imm_valid = info->ud_smac_valid = info->ud_vlan_valid = false;
  }

  info->q_type = uint8_t(FIELD_GET(IRDMA_CQ_SQ, qword3));
  info->error = qword3 & IRDMA_CQ_ERROR;
  info->push_dropped = qword3 & IRDMACQ_PSHDROP;
  info->ipv4 = qword3 & IRDMACQ_IPV4;
  if (info->error)
    decode_error(cq, cqe, qword3, info);
  else
    info->comp_status = IRDMA_COMPL_STATUS_SUCCESS;

  const uint64_t qword0 = READ_ONCE(cqe[0]);
  const uint64_t qword2 = READ_ONCE(cqe[2]);
  info->tcp_seq_num_rtt = uint32_t(FIELD_GET(IRDMACQ_TCPSEQNUMRTT, qword0));
  info->qp_id = uint32_t(FIELD_GET(IRDMACQ_QPID, qword2));
  info->ud_src_qpn = uint32_t(FIELD_GET(IRDMACQ_UDSRCQPN, qword2));
  info->solicited_event = qword3 & IRDMACQ_SOEVENT;

  int ret = 0;
  bool move_cq_head = true;
  irdma_ring* pring = nullptr;
  const uint64_t qword1 = READ_ONCE(cqe[1]);
  irdma_qp_uk* qp = cqe_qp(cq, qword1, info->qp_id);
  const uint32_t wqe_idx = uint32_t(FIELD_GET(IRDMA_CQ_WQEIDX, qword3));
  info->qp_handle = qp;
  info->op_type = uint8_t(FIELD_GET(IRDMACQ_OP, qword3));

  if (!qp || READ_ONCE(qp->destroy_pending)) {
    if (qword1 && !qp) cq->corrupt_cqes++;
    // Written after destroy cleaned the ring, before the device had the QP gone: reported
    // to no one, as irdma drops them; counted, as the clean counts what it removes.
    if (qp && !is_flush_cqe(qword3)) cq->destroyed_qp_cqes++;
    ret = -EFAULT;
  } else if (info->q_type == IRDMA_CQE_QTYPE_RQ) {
    uint32_t array_idx = wqe_idx >> qp->rq_shift;
    if (info->comp_status != IRDMA_COMPL_STATUS_SUCCESS) {
      note_flush(cq, qp, info);
      if (ring_used(qp->rq_ring) == 0) {
        ret = -ENOENT;
      } else {
        array_idx = qp->rq_ring.tail;
      }
    } else if (!ring_outstanding(qp->rq_ring, array_idx)) {
      cq->corrupt_cqes++;  // stale, duplicated or out of range: never move the tail back
      ret = -EFAULT;
    }
    if (ret == 0) {
      info->wr_id = qp->rq_wrid_array[array_idx];
      info->bytes_xfered = uint32_t(FIELD_GET(IRDMACQ_PAYLDLEN, qword0));
      info->stag_invalid_set = qword3 & IRDMACQ_STAG;
      if (info->stag_invalid_set) info->inv_stag = uint32_t(FIELD_GET(IRDMACQ_INVSTAG, qword2));
      smp_store_release(qp->rq_ring.tail, ring_next(array_idx, qp->rq_ring.size));
      if (info->comp_status == IRDMA_COMPL_STATUS_FLUSHED) {
        if (ring_used(qp->rq_ring) == 0) qp->rq_flush_complete = true;
      }
      pring = &qp->rq_ring;
    }
  } else {  // SQ
    if (info->error) sq_error(cq, qp, info);
    if (info->comp_status != IRDMA_COMPL_STATUS_FLUSHED) {
      if (!ring_outstanding(qp->sq_ring, wqe_idx) || qp->sq_wrtrk_array[wqe_idx].quanta == 0) {
        cq->corrupt_cqes++;
        ret = -EFAULT;
      } else {
        const irdma_sq_wr_trk_info& trk = qp->sq_wrtrk_array[wqe_idx];
        info->wr_id = trk.wrid;
        // The kernel leaves an SQ error's length as the previous CQE's; this driver says 0.
        info->bytes_xfered = info->comp_status == IRDMA_COMPL_STATUS_SUCCESS ? trk.wr_len : 0;
        smp_store_release(qp->sq_ring.tail, ring_add(wqe_idx, trk.quanta, qp->sq_ring.size));
      }
    } else if (ring_used(qp->sq_ring) == 0) {
      ret = -ENOENT;
    } else {
      // Report the oldest outstanding WQE, skipping NOPs, which complete silently.
      for (;;) {
        const uint32_t tail = qp->sq_ring.tail;
        const irdma_sq_wr_trk_info& trk = qp->sq_wrtrk_array[tail];
        info->op_type = trk.op;
        smp_store_release(qp->sq_ring.tail, ring_add(tail, trk.quanta ? trk.quanta : 1, qp->sq_ring.size));
        if (info->op_type != IRDMA_OP_TYPE_NOP) {
          info->wr_id = trk.wrid;
          info->bytes_xfered = trk.wr_len;
          break;
        }
        if (ring_used(qp->sq_ring) == 0) {
          ret = -ENOENT;  // only NOPs were left
          break;
        }
      }
      if (info->op_type == IRDMA_OP_TYPE_BIND_MW && info->minor_err == FLUSH_PROT_ERR)
        info->minor_err = FLUSH_MW_BIND_ERR;
      if (ring_used(qp->sq_ring) == 0) qp->sq_flush_complete = true;
    }
    if (ret == 0) pring = &qp->sq_ring;
  }

  // GEN_1/2 flush: one hardware CQE stands for the whole queue; park head on it until the
  // queue is drained, rewriting its index to the next WQE to report.
  if (ret == 0 && info->comp_status == IRDMA_COMPL_STATUS_FLUSHED && cq->hw_rev <= IRDMA_GEN_2 &&
      ring_used(*pring) != 0)
    move_cq_head = false;

  if (move_cq_head) {
    cq_move_head(cq);
    if (ext_valid && !cq->avoid_mem_cflct) cq_move_head(cq);
    WRITE_ONCE(cq->shadow_area[0], uint64_t(cq->cq_ring.head));
  } else {
    qword3 = (qword3 & ~IRDMA_CQ_WQEIDX) | FIELD_PREP(IRDMA_CQ_WQEIDX, pring->tail);
    WRITE_ONCE(cqe[3], qword3);
  }
  return ret;
}

bool irdma_uk_cq_holds_qp(const irdma_cq_uk* cq, uint64_t qp_compl_ctx) {
  return walk_unpolled(cq, [&](uint64_t* cqe) { return READ_ONCE(cqe[1]) == qp_compl_ctx; });
}

uint32_t irdma_uk_clean_cq(uint64_t qp_compl_ctx, irdma_cq_uk* cq) {
  uint32_t cleaned = 0;
  walk_unpolled(cq, [&](uint64_t* cqe) {
    if (READ_ONCE(cqe[1]) != qp_compl_ctx) return false;
    WRITE_ONCE(cqe[1], uint64_t(0));
    cleaned += !is_flush_cqe(READ_ONCE(cqe[3]));
    return false;
  });
  return cleaned;
}

uint32_t irdma_uk_cq_unpolled(const irdma_cq_uk* cq) {
  uint32_t left = 0;
  walk_unpolled(cq, [&](uint64_t* cqe) {
    left += READ_ONCE(cqe[1]) && !is_flush_cqe(READ_ONCE(cqe[3]));
    return false;
  });
  return left;
}

void irdma_uk_cq_resize(irdma_cq_uk* cq, uint64_t* new_base, uint32_t new_size) {
  cq->cq_base = new_base;
  cq->cq_size = new_size;
  cq->cq_ring = {0, 0, new_size};
  cq->polarity = 1;
}

void irdma_uk_cq_set_resized_cnt(irdma_cq_uk* cq, uint32_t cnt) {
  const uint64_t old = READ_ONCE(cq->shadow_area[4]);
  const uint64_t sel = (FIELD_GET(IRDMA_CQ_DBSA_SW_CQ_SELECT, old) + cnt) & FIELD_MAX(IRDMA_CQ_DBSA_SW_CQ_SELECT);
  WRITE_ONCE(cq->shadow_area[4], (old & ~IRDMA_CQ_DBSA_SW_CQ_SELECT) | FIELD_PREP(IRDMA_CQ_DBSA_SW_CQ_SELECT, sel));
}

void irdma_uk_cq_request_notification(irdma_cq_uk* cq, irdma_cmpl_notify notify) {
  const uint64_t old = READ_ONCE(cq->shadow_area[4]);
  const uint64_t seq = (FIELD_GET(IRDMA_CQ_DBSA_ARM_SEQ_NUM, old) + 1) & FIELD_MAX(IRDMA_CQ_DBSA_ARM_SEQ_NUM);
  const uint64_t word = FIELD_PREP(IRDMA_CQ_DBSA_ARM_SEQ_NUM, seq) |
                        (old & IRDMA_CQ_DBSA_SW_CQ_SELECT) | IRDMA_CQ_DBSA_ARM_NEXT_SE |
                        (notify == IRDMA_CQ_COMPL_EVENT ? IRDMA_CQ_DBSA_ARM_NEXT : 0);
  WRITE_ONCE(cq->shadow_area[4], word);
  hal::dma_wmb();
  cq->db->write32(IRDMA_CQARM, cq->cq_id);
}

}  // namespace irdma
