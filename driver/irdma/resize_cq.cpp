// irdma_resize_cq and the poll of a resized CQ (spec G.2, G.4, D.6, D.7): the device
// switches to a new ring through MODIFY_CQ; the driver keeps the retired rings on the CQ's
// resize list and drains them, oldest first, before the current one.
#include <cerrno>

#include "driver/irdma/irdma_device.h"

namespace irdma {

using namespace ibcore;

namespace {

// The ring moved: a CQE was consumed (or skipped) there.
bool moved(const irdma_cq_uk& uk, uint32_t head, uint8_t polarity) {
  return uk.cq_ring.head != head || uk.polarity != polarity;
}

}  // namespace

int irdma_device::resize_cq(ib_cq* ibcq, int cqe) {
  auto* cq = static_cast<irdma_cq*>(ibcq);
  if (!caps_.cq_resize) return -EOPNOTSUPP;
  if (cqe < 1 || cqe > caps_.max_cqe) return -EINVAL;
  const uint32_t entries = std::max(cq_ring_entries(uint32_t(cqe)), 4u);
  {
    std::lock_guard<hal::Lock> guard(*cq->lock);
    if (entries == cq->sc_cq.cq_size - 1) return 0;  // as irdma compares; never for even sizes
  }
  hal::DmaBuffer ring = alloc_cq_ring(entries);
  if (!ring) return -ENOMEM;
  // CHKOVERFLOW stays clear, as the kernel's resize leaves it.
  const int ret = cqp_.exec(IRDMA_CQP_OP_MODIFY_CQ, [&](uint64_t* wqe) {
    wqe[0] = entries;
    wqe[1] = FIELD_PREP(IRDMA_CQPSQ_CQ_CQCTX, cq->ctx >> 1);
    wqe[2] = FIELD_PREP(IRDMA_CQPSQ_CQ_SHADOW_READ_THRESHOLD, std::min(entries / 2, IRDMA_MAX_CQ_READ_THRESH));
    wqe[4] = ring.iova;
    wqe[5] = cq->shadow.iova;
    return uint64_t(cq->cq_num) | IRDMA_CQPSQ_CQ_CQRESIZE | IRDMA_CQPSQ_CQ_ENCEQEMASK |
           (caps_.cqe_64byte ? IRDMA_CQPSQ_CQ_AVOIDMEMCNFLCT : 0);
  });
  if (ret) {
    hw_.dma.free_coherent(ring);
    return ret;
  }
  // The device writes to the new ring from now on; pollers switch under the lock.
  std::lock_guard<hal::Lock> guard(*cq->lock);
  cq->resize_list.push_back({cq->sc_cq, cq->ring});
  cq->sc_cq.newly_flushed.clear();  // noted already: the copy carries them
  irdma_uk_cq_resize(&cq->sc_cq, static_cast<uint64_t*>(ring.cpu), entries);
  cq->ring = ring;
  cq->cqe = int(entries) - 1;  // unlike create, the ring's size (spec G.2)
  cq->resizes++;
  return 0;
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
    hw_.dma.free_coherent(cq->resize_list.front().ring);
    cq->resize_list.pop_front();
  }
  if (done) irdma_uk_cq_set_resized_cnt(&cq->sc_cq, uint32_t(done));
  return npolled;
}

}  // namespace irdma
