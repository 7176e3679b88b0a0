// CQ verbs: irdma_create_cq, irdma_destroy_cq, irdma_poll_cq, irdma_req_notify_cq
// (spec G.1, G.3, G.4, G.8).
#include <algorithm>
#include <cerrno>

#include "driver/hal/align.h"
#include "driver/irdma/irdma_abi.h"
#include "driver/irdma/irdma_device.h"

namespace irdma {

using namespace ibcore;

namespace {

constexpr uint32_t IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION = 1;

}  // namespace

// GEN_2 rings hold twice the request (+1), so extended CQEs in 32-byte mode fit; sizes
// are even.
uint32_t irdma_device::cq_ring_entries(uint32_t cqe) const {
  uint32_t entries = cqe + 1;
  if (caps().hw_rev >= IRDMA_GEN_2 && !caps().cqe_64byte) entries *= 2;
  if (entries & 1) entries++;
  return entries;
}

hal::DmaBuffer irdma_device::alloc_cq_ring(uint32_t entries) {
  const unsigned cqe_bytes = caps().cqe_64byte ? IRDMA_EXTENDED_CQE_SIZE_BYTES : IRDMA_CQE_SIZE_BYTES;
  return hw().dma.alloc_coherent(hal::round_up(uint64_t(entries) * cqe_bytes, IRDMA_CQ_RING_ALIGN),
                                IRDMA_CQ_RING_ALIGN);
}

int64_t irdma_device::alloc_cq_num() { return rf_.alloc_rsrc(rf_.allocated_cqs, rf_.next_cq, 3); }

// The CQ context comes back in CEQEs and AEQEs shifted right by one, as Linux's pointer
// does; an even cookie survives that.
int irdma_device::create_cq_cmd(irdma_cq* cq, uint32_t entries) {
  {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    cq->ctx = irdma_obj_cookie(++rf_.obj_generation, cq->cq_num) << 1;
  }
  const uint32_t threshold = std::min(entries / 2, IRDMA_MAX_CQ_READ_THRESH);
  return cqp().exec(IRDMA_CQP_OP_CREATE_CQ, [&](uint64_t* wqe) {
    wqe[0] = entries;
    wqe[1] = FIELD_PREP(IRDMA_CQPSQ_CQ_CQCTX, cq->ctx >> 1);
    wqe[2] = FIELD_PREP(IRDMA_CQPSQ_CQ_SHADOW_READ_THRESHOLD, threshold);
    wqe[4] = cq->ring.iova;
    wqe[5] = cq->shadow.iova;
    return FIELD_PREP(IRDMA_CQPSQ_CQ_CQID, uint64_t(cq->cq_num)) |
           FIELD_PREP(IRDMA_CQPSQ_CQ_CEQID, cq->ceq_id) | IRDMA_CQPSQ_CQ_CHKOVERFLOW |
           IRDMA_CQPSQ_CQ_ENCEQEMASK | IRDMA_CQPSQ_CQ_CEQIDVALID |
           (caps().cqe_64byte ? IRDMA_CQPSQ_CQ_AVOIDMEMCNFLCT : 0);
  });
}

void irdma_device::publish_cq(irdma_cq* cq) {
  std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
  rf_.cq_table[cq->cq_num] = cq;
}

ib_cq* irdma_device::create_cq(const ib_cq_init_attr& attr, int& err) {
  if (attr.flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  if (attr.cqe < IRDMA_MIN_CQ_SIZE || attr.cqe > IRDMA_MAX_CQ_SIZE) {
    err = -EINVAL;
    return nullptr;
  }
  const int64_t cq_num = alloc_cq_num();
  if (cq_num < 0) {
    err = int(cq_num);
    return nullptr;
  }

  const uint32_t entries = cq_ring_entries(attr.cqe);

  auto cq = std::make_unique<irdma_cq>();
  cq->lock = hw().exec.make_lock();
  cq->cq_num = uint32_t(cq_num);
  cq->cqe = int(std::max(attr.cqe, 4u));  // the request, floored at 4 (spec G.1)
  cq->ring = alloc_cq_ring(entries);
  cq->shadow = hw().dma.alloc_coherent(IRDMA_SHADOW_AREA_SIZE_BYTES, 64);
  const auto release = [&] {
    if (cq->ring) hw().dma.free_coherent(cq->ring);
    if (cq->shadow) hw().dma.free_coherent(cq->shadow);
    rf_.free_rsrc(rf_.allocated_cqs, uint32_t(cq_num));
  };
  if (!cq->ring || !cq->shadow) {
    release();
    err = -ENOMEM;
    return nullptr;
  }
  irdma_uk_cq_init(&cq->sc_cq, static_cast<uint64_t*>(cq->ring.cpu),
                   static_cast<uint64_t*>(cq->shadow.cpu), uint32_t(cq_num), entries,
                   caps().cqe_64byte);
  cq->sc_cq.db = &hw().bar0;
  cq->sc_cq.hw_rev = caps().hw_rev;
  cq->sc_cq.qp_table = {rf_.qp_table.data(), uint32_t(rf_.qp_table.size())};
  cq->ceq_id = attr.comp_vector < caps().num_ceqs ? attr.comp_vector : 0;
  if (const int ret = create_cq_cmd(cq.get(), entries)) {
    release();
    err = ret;
    return nullptr;
  }
  publish_cq(cq.get());
  return cq.release();
}

// irdma_create_cq for user space: the ring and the shadow area are registrations the
// context made (REG_MR of the CQ type), found by address; the size is the application's
// number of CQEs, floored at 4 and otherwise taken as it comes, as Linux takes it (the
// provider checks its own bounds). The ring must be one DMA-contiguous range: the device
// takes no page-list rings.
ib_cq* irdma_device::create_user_cq(ib_ucontext* ibuctx, const ib_cq_init_attr& attr, ib_udata& udata, int& err) {
  auto* uctx = static_cast<irdma_ucontext*>(ibuctx);
  irdma_create_cq_req req{};
  if (attr.flags & ~IB_UVERBS_CQ_FLAGS_TIMESTAMP_COMPLETION) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  if (udata.inlen < sizeof req || udata.outlen < sizeof(irdma_create_cq_resp)) {
    err = -EINVAL;
    return nullptr;
  }
  ib_copy_from_udata(&req, udata, sizeof req);
  const uint32_t entries = std::max(attr.cqe, 4u);
  irdma_mr* ring = irdma_get_pbl(uctx, req.user_cq_buf, IRDMA_MEMREG_TYPE_CQ);
  irdma_mr* shadow = caps().cq_resize ? irdma_get_pbl(uctx, req.user_shadow_area, IRDMA_MEMREG_TYPE_CQ) : ring;
  if (!ring || !shadow) {
    err = -EPROTO;
    return nullptr;
  }
  const uint64_t cqe_bytes = caps().cqe_64byte ? IRDMA_EXTENDED_CQE_SIZE_BYTES : IRDMA_CQE_SIZE_BYTES;
  const std::vector<uint64_t>& blocks = ring->umem->dma_blocks;
  // The ring's pages must hold it: a device writing past them would write the
  // application's other memory (Linux leaves this to the provider).
  const size_t pages_needed = size_t(ring->cq_pages) + (shadow == ring ? 1 : 0);
  if (blocks.size() < pages_needed || uint64_t(ring->cq_pages) * 4096 < entries * cqe_bytes) {
    err = -EINVAL;
    return nullptr;
  }
  if (!irdma_dma_contiguous(blocks, ring->cq_pages)) {
    err = -EOPNOTSUPP;
    return nullptr;
  }
  const int64_t cq_num = alloc_cq_num();
  if (cq_num < 0) {
    err = int(cq_num);
    return nullptr;
  }
  auto cq = std::make_unique<irdma_cq>();
  cq->lock = hw().exec.make_lock();
  cq->user_mode = true;
  cq->uctx = uctx;
  cq->cq_num = uint32_t(cq_num);
  cq->cqe = int(entries);
  cq->ring = {nullptr, blocks[0], uint64_t(ring->cq_pages) * 4096};
  // The shadow area is the page after the ring in the ring's own registration, or a
  // registration of its own (FEATURE_CQ_RESIZE).
  cq->shadow = {nullptr, shadow == ring ? blocks[ring->cq_pages] : shadow->umem->dma_blocks[0],
                IRDMA_SHADOW_AREA_SIZE_BYTES};
  cq->sc_cq.cq_id = uint32_t(cq_num);
  cq->sc_cq.cq_size = entries;
  cq->ceq_id = attr.comp_vector < caps().num_ceqs ? attr.comp_vector : 0;
  if ((err = create_cq_cmd(cq.get(), entries))) {
    rf_.free_rsrc(rf_.allocated_cqs, uint32_t(cq_num));
    return nullptr;
  }
  const irdma_create_cq_resp resp{uint32_t(cq_num), entries};
  if ((err = ib_copy_to_udata(udata, &resp, sizeof resp))) {
    destroy_cq(cq.release());
    err = -EPROTO;
    return nullptr;
  }
  publish_cq(cq.get());
  return cq.release();
}

// Nothing else uses the CQ any more: ib-core frees a CQ no QP uses, its poller cancelled,
// and destroy_cq has waited out the event handlers.
void irdma_device::free_cq(irdma_cq* cq) {
  for (irdma_cq::retired_buf& b : cq->resize_list) hw().dma.free_coherent(b.ring);
  if (!cq->user_mode) {
    hw().dma.free_coherent(cq->ring);
    hw().dma.free_coherent(cq->shadow);
  }
  {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    rf_.free_rsrc_locked(rf_.allocated_cqs, cq->cq_num);
    rf_.cq_table[cq->cq_num] = nullptr;
  }
  delete cq;
}

void irdma_device::irdma_comp_handler(irdma_cq* cq) {
  if (cq->comp_handler && cq->armed.exchange(false)) cq->comp_handler(cq);
}

int irdma_device::destroy_cq(ib_cq* ibcq) {
  auto* cq = static_cast<irdma_cq*>(ibcq);
  // Out of the table before the command: a CEQE the interrupt handler meets meanwhile is
  // for no CQ, and nothing schedules this one again.
  {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    rf_.cq_table[cq->cq_num] = nullptr;
  }
  const int ret = cqp().exec(IRDMA_CQP_OP_DESTROY_CQ, [&](uint64_t* wqe) {
    wqe[0] = cq->sc_cq.cq_size;
    wqe[1] = FIELD_PREP(IRDMA_CQPSQ_CQ_CQCTX, cq->ctx >> 1);
    wqe[5] = cq->shadow.iova;
    return uint64_t(cq->cq_num);
  });
  // The device may still hold the ring if the command failed: keep the memory then.
  if (ret) {
    std::lock_guard<hal::Lock> guard(*rf_.rsrc_lock);
    rf_.cq_table[cq->cq_num] = cq;
    return ret;
  }
  rf_.eqs.cleanup_ceqes(cq);
  // The device writes it no more: what is still in the ring goes unreported.
  if (!cq->user_mode) bump(rf_.stats.cqes_left, irdma_uk_cq_unpolled(&cq->sc_cq));
  // Handlers that took it from the table before it left go first (wait_for_completion).
  while (cq->refcnt.load(std::memory_order_acquire)) hw().exec.delay_ns(1000);
  free_cq(cq);
  return 0;
}

int irdma_device::req_notify_cq(ib_cq* ibcq, unsigned flags) {
  auto* cq = static_cast<irdma_cq*>(ibcq);
  std::lock_guard<hal::Lock> guard(*cq->lock);
  // Only SOLICITED alone arms for solicited CQEs; SOLICITED|REPORT_MISSED_EVENTS is an
  // event arm, as irdma compares the flags for equality.
  const irdma_cmpl_notify notify =
      flags == IB_CQ_SOLICITED ? IRDMA_CQ_COMPL_SOLICITED : IRDMA_CQ_COMPL_EVENT;
  const bool promo = cq->last_notify == IRDMA_CQ_COMPL_SOLICITED && flags != IB_CQ_SOLICITED;
  if (!cq->armed.exchange(true) || promo) {
    cq->last_notify = notify;
    irdma_uk_cq_request_notification(&cq->sc_cq, notify);
  }
  if ((flags & IB_CQ_REPORT_MISSED_EVENTS) &&
      (irdma_uk_cq_has_cqe(&cq->sc_cq) || !cq->cmpl_generated.empty()))
    return 1;
  return 0;
}

}  // namespace irdma
