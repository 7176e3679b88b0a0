// One-quantum SQ WQEs that act on memory keys or on nothing: LOCAL_INV, FAST_REG_NSMR,
// BIND_MW and NOP.
#include <cerrno>

#include "driver/hal/dma.h"
#include "driver/irdma/uk.h"

namespace irdma {
namespace {

// Writes qwords 0-2 and then the header (opcode, signaled, valid and `flags`) last.
int post_local_wqe(irdma_qp_uk* qp, uint64_t wr_id, uint8_t op, bool signaled, uint64_t q0,
                   uint64_t q1, uint64_t q2, uint64_t flags) {
  const int64_t idx = irdma_qp_get_next_send_wqe(qp, 1);
  if (idx < 0) return int(idx);
  uint64_t* wqe = qp->sq_base + 4ull * uint64_t(idx);
  wqe[0] = q0;
  wqe[1] = q1;
  wqe[2] = q2;
  irdma_qp_publish_send_wqe(qp, uint32_t(idx), {wr_id, 0, 1, op});
  const uint64_t hdr = flags | FIELD_PREP(IRDMAQPSQ_OPCODE, op) |
                       FIELD_PREP(IRDMAQPSQ_SIGCOMPL, signaled) |
                       FIELD_PREP(IRDMAQPSQ_VALID, qp->swqe_polarity);
  hal::dma_wmb();
  WRITE_ONCE(wqe[3], hdr);
  return 0;
}

}  // namespace

int irdma_uk_stag_local_invalidate(irdma_qp_uk* qp, const irdma_post_sq_info& info) {
  return post_local_wqe(qp, info.wr_id, IRDMA_OP_TYPE_INV_STAG, info.signaled, 0,
                        FIELD_PREP(IRDMAQPSQ_LOCSTAG, info.remote_stag), 0, 0);
}

int irdma_sc_mr_fast_register(irdma_qp_uk* qp, const irdma_fast_reg_stag_info& info) {
  const uint64_t q1 = (info.reg_addr_pa & IRDMAQPSQ_PBLADDR) |
                      FIELD_PREP(IRDMAQPSQ_FIRSTPMPBLIDXHI, info.first_pm_pbl_index >> 16);
  const uint64_t q2 = FIELD_PREP(IRDMAQPSQ_STAGLEN, info.total_len) |
                      FIELD_PREP(IRDMAQPSQ_FIRSTPMPBLIDXLO, info.first_pm_pbl_index);
  const uint64_t flags = FIELD_PREP(IRDMAQPSQ_STAGKEY, info.stag) |
                         FIELD_PREP(IRDMAQPSQ_STAGINDEX, info.stag >> 8) |
                         FIELD_PREP(IRDMAQPSQ_LPBLSIZE, info.chunk_size) |
                         FIELD_PREP(IRDMAQPSQ_STAGRIGHTS, info.access_rights) |
                         IRDMAQPSQ_VABASEDTO |
                         FIELD_PREP(IRDMAQPSQ_REMOTE_ATOMICS_EN, info.remote_atomics);
  return post_local_wqe(qp, info.wr_id, IRDMA_OP_TYPE_FAST_REG_NSMR, info.signaled, info.va, q1,
                        q2, flags);
}

int irdma_uk_mw_bind(irdma_qp_uk* qp, const irdma_bind_window& info) {
  if (qp->qp_type != IRDMA_QP_TYPE_ROCE_RC) return -EINVAL;
  const uint8_t rights = uint8_t((info.ena_reads ? IRDMA_ACCESS_FLAGS_REMOTEREAD_ONLY : 0) |
                                 (info.ena_writes ? IRDMA_ACCESS_FLAGS_REMOTEWRITE_ONLY : 0));
  const uint64_t flags = FIELD_PREP(IRDMAQPSQ_STAGRIGHTS, rights) | IRDMAQPSQ_VABASEDTO |
                         FIELD_PREP(IRDMAQPSQ_MEMWINDOWTYPE, info.type1) |
                         FIELD_PREP(IRDMAQPSQ_REMOTE_ATOMICS_EN, info.remote_atomics);
  return post_local_wqe(qp, info.wr_id, IRDMA_OP_TYPE_BIND_MW, info.signaled, info.va,
                        FIELD_PREP(IRDMAQPSQ_PARENTMRSTAG, info.mr_stag) |
                            FIELD_PREP(IRDMAQPSQ_MWSTAG, info.mw_stag),
                        info.len, flags);
}

int irdma_uk_nop(irdma_qp_uk* qp, uint64_t wr_id, bool signaled) {
  return post_local_wqe(qp, wr_id, IRDMA_OP_TYPE_NOP, signaled, 0, 0, 0, 0);
}

}  // namespace irdma
