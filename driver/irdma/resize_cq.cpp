// irdma_resize_cq (spec G.2, G.4, D.6, D.7): the device switches to a new ring through
// MODIFY_CQ; the driver keeps the retired rings on the CQ's resize list, which the poll
// path (poll.cpp) drains, oldest first, before the current one. A user CQ's new ring is a
// registration its application made, which the application drains the old one before.
#include <cerrno>

#include "driver/irdma/irdma_abi.h"
#include "driver/irdma/irdma_device.h"
#include "driver/irdma/poll.h"

namespace irdma {

using namespace ibcore;

// CHKOVERFLOW stays clear, as the kernel's resize leaves it.
int irdma_device::resize_cq_cmd(irdma_cq* cq, uint32_t entries, uint64_t ring_iova) {
  return cqp().exec(IRDMA_CQP_OP_MODIFY_CQ, [&](uint64_t* wqe) {
    wqe[0] = entries;
    wqe[1] = FIELD_PREP(IRDMA_CQPSQ_CQ_CQCTX, cq->ctx >> 1);
    wqe[2] = FIELD_PREP(IRDMA_CQPSQ_CQ_SHADOW_READ_THRESHOLD, std::min(entries / 2, IRDMA_MAX_CQ_READ_THRESH));
    wqe[4] = ring_iova;
    wqe[5] = cq->shadow.iova;
    return uint64_t(cq->cq_num) | IRDMA_CQPSQ_CQ_CQRESIZE | IRDMA_CQPSQ_CQ_ENCEQEMASK |
           (caps().cqe_64byte ? IRDMA_CQPSQ_CQ_AVOIDMEMCNFLCT : 0);
  });
}

int irdma_device::resize_cq(ib_cq* ibcq, int cqe) {
  auto* cq = static_cast<irdma_cq*>(ibcq);
  if (!caps().cq_resize) return -EOPNOTSUPP;
  if (cqe < 1 || cqe > caps().max_cqe) return -EINVAL;
  const uint32_t entries = std::max(cq_ring_entries(uint32_t(cqe)), 4u);
  {
    std::lock_guard<hal::Lock> guard(*cq->lock);
    if (entries == cq->sc_cq.cq_size - 1) return 0;  // as irdma compares; never for even sizes
  }
  hal::DmaBuffer ring = alloc_cq_ring(entries);
  if (!ring) return -ENOMEM;
  if (const int ret = resize_cq_cmd(cq, entries, ring.iova)) {
    hw().dma.free_coherent(ring);
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

// The application's count is taken as it comes (floored at 4), its new ring found by
// address among the context's CQ registrations; ENOMEM when there is none, as irdma says.
int irdma_device::resize_user_cq(ib_cq* ibcq, int cqe, ib_udata& udata) {
  auto* cq = static_cast<irdma_cq*>(ibcq);
  irdma_resize_cq_req req{};
  if (!caps().cq_resize) return -EOPNOTSUPP;
  if (udata.inlen < sizeof req) return -EINVAL;
  if (cqe < 1 || uint32_t(cqe) > IRDMA_MAX_CQ_SIZE) return -EINVAL;
  ib_copy_from_udata(&req, udata, sizeof req);
  const uint32_t entries = std::max(uint32_t(cqe), 4u);
  if (entries == cq->sc_cq.cq_size - 1) return 0;  // as irdma compares
  irdma_mr* ring = irdma_get_pbl(cq->uctx, req.user_cq_buffer, IRDMA_MEMREG_TYPE_CQ);
  if (!ring) return -ENOMEM;
  const uint64_t cqe_bytes = caps().cqe_64byte ? IRDMA_EXTENDED_CQE_SIZE_BYTES : IRDMA_CQE_SIZE_BYTES;
  const std::vector<uint64_t>& blocks = ring->umem->dma_blocks;
  if (blocks.size() < ring->cq_pages || uint64_t(ring->cq_pages) * 4096 < entries * cqe_bytes) return -EINVAL;
  if (!irdma_dma_contiguous(blocks, ring->cq_pages)) return -EOPNOTSUPP;
  if (const int ret = resize_cq_cmd(cq, entries, blocks[0])) return ret;
  cq->ring.iova = blocks[0];
  cq->sc_cq.cq_size = entries;
  cq->cqe = int(entries) - 1;
  cq->resizes++;
  return 0;
}

}  // namespace irdma
