// The WQE writers: SQ and RQ WQEs in the GEN_2 fragment format, and the SQ doorbell.
#include <algorithm>
#include <cerrno>

#include "driver/hal/dma.h"
#include "driver/irdma/uk.h"

namespace irdma {
namespace {

uint32_t round_up_pow2(uint32_t v) {
  uint32_t p = 1;
  while (p < v) p <<= 1;
  return p;
}

// Fragment slot i: slot 0 in qwords 0-1 of quantum 0, slot i >= 1 at byte 32 + 16 (i - 1).
uint64_t* frag_slot(uint64_t* wqe, uint32_t i) { return i == 0 ? wqe : wqe + 4 + 2 * (i - 1); }

void set_fragment(uint64_t* slot, const irdma_sge* sge, uint8_t polarity) {
  slot[0] = sge ? sge->addr : 0;
  slot[1] = (sge ? FIELD_PREP(IRDMAQPSQ_FRAG_LEN, sge->length) |
                       FIELD_PREP(IRDMAQPSQ_FRAG_STAG, sge->lkey)
                 : 0) |
            FIELD_PREP(IRDMAQPSQ_FRAG_VALID, polarity);
}

// Writes fragments into slots [first, first + n), plus the empty slot that gives the last
// quantum its valid bit when the slot count is even. Returns ADDFRAGCNT.
uint32_t write_fragments(uint64_t* wqe, uint32_t first, const irdma_sge* sges, uint32_t n,
                         uint8_t polarity) {
  for (uint32_t i = 0; i < n; i++) set_fragment(frag_slot(wqe, first + i), &sges[i], polarity);
  uint32_t slots = first + n;
  uint32_t addfragcnt = slots > 1 ? slots - 1 : 0;
  if (slots > 0 && slots % 2 == 0) {
    set_fragment(frag_slot(wqe, slots), nullptr, polarity);
    addfragcnt++;
  }
  return addfragcnt;
}

}  // namespace

// GEN_2's quanta shift: what a WQE of `sge` fragments and `inline_data` bytes inline spans.
uint8_t irdma_get_wqe_shift(uint32_t sge, uint32_t inline_data) {
  if (sge <= 1 && inline_data <= 8) return 0;
  if (sge < 4 && inline_data <= 39) return 1;
  if (sge < 8 && inline_data <= 101) return 2;
  return 3;
}

int64_t irdma_qp_get_next_send_wqe(irdma_qp_uk* qp, uint32_t quanta) {
  const uint32_t pad = (qp->sq_ring.head % IRDMA_MAX_QUANTA_PER_WR) + quanta > IRDMA_MAX_QUANTA_PER_WR
                           ? IRDMA_MAX_QUANTA_PER_WR - qp->sq_ring.head % IRDMA_MAX_QUANTA_PER_WR
                           : 0;
  if (ring_used(qp->sq_ring) + (IRDMA_SQ_RSVD - 1) + pad + quanta > qp->sq_ring.size)
    return -ENOMEM;
  for (uint32_t i = 0; i < pad; i++) {
    const uint32_t idx = qp->sq_ring.head;
    if (idx == 0) qp->swqe_polarity ^= 1;
    uint64_t* nop = qp->sq_base + 4ull * idx;
    nop[0] = nop[1] = nop[2] = 0;
    hal::dma_wmb();
    WRITE_ONCE(nop[3], FIELD_PREP(IRDMAQPSQ_OPCODE, IRDMA_OP_TYPE_NOP) |
                           FIELD_PREP(IRDMAQPSQ_VALID, qp->swqe_polarity));
    irdma_qp_publish_send_wqe(qp, idx, {0, 0, 1, IRDMA_OP_TYPE_NOP});
  }
  const uint32_t idx = qp->sq_ring.head;
  if (idx == 0) qp->swqe_polarity ^= 1;
  return idx;
}

void irdma_qp_publish_send_wqe(irdma_qp_uk* qp, uint32_t idx, const irdma_sq_wr_trk_info& trk) {
  qp->sq_wrtrk_array[idx] = trk;
  smp_store_release(qp->sq_ring.head, ring_add(idx, trk.quanta, qp->sq_ring.size));
}

uint32_t irdma_uk_sq_depth_quanta(uint32_t sq_wrs, uint32_t max_sq_frags) {
  const uint8_t shift = irdma_get_wqe_shift(max_sq_frags + 1, 0);
  return std::max(round_up_pow2((sq_wrs << shift) + IRDMA_SQ_RSVD), IRDMA_MIN_WQ_SIZE << shift);
}

uint32_t irdma_uk_rq_depth_wqes(uint32_t rq_wrs, uint32_t max_rq_frags, uint8_t* rq_shift) {
  *rq_shift = irdma_get_wqe_shift(max_rq_frags, 0);
  const uint32_t quanta = std::max(round_up_pow2((rq_wrs << *rq_shift) + IRDMA_RQ_RSVD),
                                   IRDMA_MIN_WQ_SIZE << *rq_shift);
  return quanta >> *rq_shift;
}

uint32_t irdma_uk_sq_max_wrs(const irdma_qp_uk& qp) {
  return (qp.sq_ring.size - IRDMA_SQ_RSVD) >> irdma_get_wqe_shift(qp.max_sq_frag_cnt + 1, 0);
}

uint32_t irdma_uk_rq_max_wrs(const irdma_qp_uk& qp) {
  return ((qp.rq_ring.size << qp.rq_shift) - IRDMA_RQ_RSVD) >> qp.rq_shift;
}

int irdma_uk_qp_init(irdma_qp_uk* qp, uint32_t qp_id, uint32_t sq_wrs, uint32_t rq_wrs,
                     uint32_t max_sq_frags, uint32_t max_rq_frags) {
  if (sq_wrs == 0 || rq_wrs == 0 || sq_wrs > 32768 || rq_wrs > 32768 || max_sq_frags == 0 ||
      max_rq_frags == 0 || max_sq_frags > IRDMA_MAX_FRAGS || max_rq_frags > IRDMA_MAX_FRAGS)
    return -EINVAL;
  qp->qp_id = qp_id;
  qp->max_sq_frag_cnt = max_sq_frags;
  qp->max_rq_frag_cnt = max_rq_frags;
  const uint32_t sq_quanta = irdma_uk_sq_depth_quanta(sq_wrs, max_sq_frags);
  const uint32_t rq_wqes = irdma_uk_rq_depth_wqes(rq_wrs, max_rq_frags, &qp->rq_shift);
  // CQEs carry a 15-bit quanta index: no queue may hold more quanta than that reaches.
  if (sq_quanta > IRDMA_MAX_WQ_QUANTA || (rq_wqes << qp->rq_shift) > IRDMA_MAX_WQ_QUANTA)
    return -EINVAL;
  qp->sq_ring = {0, 0, sq_quanta};
  qp->initial_ring = qp->sq_ring;
  qp->rq_ring = {0, 0, rq_wqes};
  qp->sq_wrtrk_array.assign(sq_quanta, {});
  qp->rq_wrid_array.assign(rq_wqes, 0);
  qp->swqe_polarity = 0;
  qp->rwqe_polarity = 0;
  return 0;
}

namespace {

int post_sq_wqe(irdma_qp_uk* qp, const irdma_post_sq_info& info, uint64_t qword2) {
  if (info.num_sges > qp->max_sq_frag_cnt) return -EINVAL;
  const uint32_t slots = info.num_sges + (info.imm_data_valid ? 1 : 0);
  const uint32_t quanta = slots / 2 + 1;
  const int64_t idx = irdma_qp_get_next_send_wqe(qp, quanta);
  if (idx < 0) return int(idx);

  // Every qword is written below, the header last: clearing the WQE first would make it
  // read as valid on passes whose polarity is 0.
  uint64_t* wqe = qp->sq_base + 4ull * uint64_t(idx);
  wqe[0] = wqe[1] = 0;
  wqe[2] = qword2;
  uint32_t total_len = 0;
  for (uint32_t i = 0; i < info.num_sges; i++) total_len += info.sg_list[i].length;
  uint32_t addfragcnt;
  if (info.imm_data_valid) {
    wqe[0] = info.imm_data;
    addfragcnt = write_fragments(wqe, 1, info.sg_list, info.num_sges, qp->swqe_polarity);
  } else {
    addfragcnt = write_fragments(wqe, 0, info.sg_list, info.num_sges, qp->swqe_polarity);
  }
  irdma_qp_publish_send_wqe(qp, uint32_t(idx), {info.wr_id, total_len, uint16_t(quanta), info.op_type});

  const uint64_t hdr = FIELD_PREP(IRDMAQPSQ_REMSTAG, info.remote_stag) |
                       FIELD_PREP(IRDMAQPSQ_OPCODE, info.op_type) |
                       FIELD_PREP(IRDMAQPSQ_ADDFRAGCNT, addfragcnt) |
                       FIELD_PREP(IRDMAQPSQ_IMMDATAFLAG, info.imm_data_valid) |
                       FIELD_PREP(IRDMAQPSQ_SIGCOMPL, info.signaled) |
                       FIELD_PREP(IRDMAQPSQ_VALID, qp->swqe_polarity);
  hal::dma_wmb();  // the header, with the valid bit, goes last
  WRITE_ONCE(wqe[3], hdr);
  return 0;
}

}  // namespace

int irdma_uk_send(irdma_qp_uk* qp, const irdma_post_sq_info& info) {
  if (qp->qp_type != IRDMA_QP_TYPE_ROCE_UD) return post_sq_wqe(qp, info, 0);
  irdma_post_sq_info ud = info;
  ud.remote_stag = uint32_t(FIELD_PREP(IRDMAQPSQ_AHID, info.ah_id));
  return post_sq_wqe(qp, ud,
                     FIELD_PREP(IRDMAQPSQ_DESTQKEY, info.dest_qkey) |
                         FIELD_PREP(IRDMAQPSQ_DESTQPN, info.dest_qpn));
}

int irdma_uk_rdma_write(irdma_qp_uk* qp, const irdma_post_sq_info& info) {
  return post_sq_wqe(qp, info, info.remote_addr);
}

int irdma_uk_rdma_read(irdma_qp_uk* qp, const irdma_post_sq_info& info) {
  if (info.imm_data_valid) return -EINVAL;
  return post_sq_wqe(qp, info, info.remote_addr);
}

int irdma_uk_atomic(irdma_qp_uk* qp, const irdma_post_sq_info& info) {
  if (info.num_sges != 1) return -EINVAL;
  constexpr uint32_t kQuanta = 2;
  const int64_t idx = irdma_qp_get_next_send_wqe(qp, kQuanta);
  if (idx < 0) return int(idx);
  uint64_t* wqe = qp->sq_base + 4ull * uint64_t(idx);
  // The local buffer's length is implied (8 bytes); only its address and key are written.
  wqe[0] = info.sg_list[0].addr;
  wqe[1] = FIELD_PREP(IRDMAQPSQ_LOCSTAG, info.sg_list[0].lkey);
  wqe[2] = info.remote_addr;
  wqe[4] = info.atomic_data;
  wqe[5] = info.op_type == IRDMA_OP_TYPE_ATOMIC_COMPARE_AND_SWAP ? info.atomic_compare : 0;
  wqe[6] = 0;
  irdma_qp_publish_send_wqe(qp, uint32_t(idx), {info.wr_id, 0, uint16_t(kQuanta), info.op_type});
  hal::dma_wmb();
  WRITE_ONCE(wqe[7], FIELD_PREP(IRDMAQPSQ_VALID, qp->swqe_polarity));
  const uint64_t hdr = FIELD_PREP(IRDMAQPSQ_REMSTAG, info.remote_stag) |
                       FIELD_PREP(IRDMAQPSQ_OPCODE, info.op_type) |
                       FIELD_PREP(IRDMAQPSQ_ADDFRAGCNT, 1) |
                       FIELD_PREP(IRDMAQPSQ_SIGCOMPL, info.signaled) |
                       FIELD_PREP(IRDMAQPSQ_VALID, qp->swqe_polarity);
  hal::dma_wmb();  // the header, with the valid bit, goes last
  WRITE_ONCE(wqe[3], hdr);
  return 0;
}

int irdma_uk_post_receive(irdma_qp_uk* qp, uint64_t wr_id, const irdma_sge* sg_list,
                          uint32_t num_sges) {
  if (num_sges > qp->max_rq_frag_cnt) return -EINVAL;
  if (ring_used(qp->rq_ring) + 1 >= qp->rq_ring.size) return -ENOMEM;
  const uint32_t idx = qp->rq_ring.head;
  if (idx == 0) qp->rwqe_polarity ^= 1;
  uint64_t* wqe = qp->rq_base + (uint64_t(idx) << (2 + qp->rq_shift));
  wqe[0] = wqe[1] = wqe[2] = 0;  // slots past ADDFRAGCNT are never read
  const uint32_t addfragcnt = write_fragments(wqe, 0, sg_list, num_sges, qp->rwqe_polarity);
  qp->rq_wrid_array[idx] = wr_id;
  // Published after its wr_id: a flush on the CQ's poller reads every outstanding entry.
  smp_store_release(qp->rq_ring.head, ring_next(idx, qp->rq_ring.size));
  const uint64_t hdr = FIELD_PREP(IRDMAQPSQ_ADDFRAGCNT, addfragcnt) |
                       FIELD_PREP(IRDMAQPSQ_VALID, qp->rwqe_polarity);
  hal::dma_wmb();
  WRITE_ONCE(wqe[3], hdr);
  return 0;
}

void irdma_uk_qp_post_wr(irdma_qp_uk* qp) {
  // The kernel skips the doorbell while the device's shadow SQ tail shows it is still
  // inside the posted window; this model's device reads WQEs only after a doorbell, so
  // every post with new work rings.
  if (qp->sq_ring.head == qp->initial_ring.head) return;
  hal::dma_wmb();
  qp->db->write32(IRDMA_WQEALLOC, qp->qp_id);
  qp->initial_ring.head = qp->sq_ring.head;
}

}  // namespace irdma
