#include "model/testbench/buffered_qp.h"

#include <cerrno>
#include <memory>

namespace irdma_sim::testbench {

BufferedQp* BufferedQp::create(irdma::irdma_device& dev, ibcore::ib_cq* cq, uint32_t sq_depth,
                               uint32_t rq_depth, uint32_t slot_bytes, int& err,
                               ibcore::ib_qp_type type, Slots slots) {
  std::unique_ptr<BufferedQp> b(new BufferedQp(dev, cq));
  ibcore::ib_qp_init_attr attr;
  attr.send_cq = attr.recv_cq = cq;
  attr.cap.max_send_wr = sq_depth;
  attr.cap.max_recv_wr = rq_depth;
  attr.qp_type = type;
  auto qp = dev.create_qp(attr);
  if (qp.is_err()) {
    err = qp.err();
    return nullptr;
  }
  b->qp_ = qp.get();
  b->cap_ = attr.cap;
  b->sq_depth_ = slots == Slots::capacity ? attr.cap.max_send_wr : sq_depth;
  b->rq_depth_ = slots == Slots::capacity ? attr.cap.max_recv_wr : rq_depth;
  b->slot_bytes_ = slot_bytes;
  b->send_buf_ = dev.hw().dma.alloc_coherent(uint64_t(b->sq_depth_) * slot_bytes, 64);
  b->recv_buf_ = dev.hw().dma.alloc_coherent(uint64_t(b->rq_depth_) * slot_bytes, 64);
  b->window_buf_ = dev.hw().dma.alloc_coherent(uint64_t(b->window_slots()) * slot_bytes, 64);
  if (!b->send_buf_ || !b->recv_buf_ || !b->window_buf_) {
    err = -ENOMEM;
    // A QP the device does not let go of may still use its buffers: they stay.
    if (b->destroy()) {
      err = -EIO;
      b.release();
    }
    return nullptr;
  }
  err = 0;
  return b.release();
}

int BufferedQp::destroy() {
  if (!qp_) return 0;
  const int ret = dev_.destroy_qp(qp_);
  if (ret == 0) qp_ = nullptr;
  return ret;
}

BufferedQp::~BufferedQp() {
  for (hal::DmaBuffer* b : {&send_buf_, &recv_buf_, &window_buf_})
    if (*b) dev_.hw().dma.free_coherent(*b);
}

uint8_t* BufferedQp::send_slot(uint32_t slot) const {
  return static_cast<uint8_t*>(send_buf_.cpu) + uint64_t(slot) * slot_bytes_;
}

const uint8_t* BufferedQp::recv_slot(uint32_t slot) const {
  return static_cast<const uint8_t*>(recv_buf_.cpu) + uint64_t(slot) * slot_bytes_;
}

ibcore::ib_sge BufferedQp::send_sge(uint32_t slot, uint32_t len) const {
  return {send_buf_.iova + uint64_t(slot) * slot_bytes_, len, 0};
}

ibcore::ib_sge BufferedQp::recv_sge(uint32_t slot) const {
  return {recv_buf_.iova + uint64_t(slot) * slot_bytes_, slot_bytes_, 0};
}

uint8_t* BufferedQp::window_slot(uint32_t slot) const {
  return static_cast<uint8_t*>(window_buf_.cpu) + uint64_t(slot) * slot_bytes_;
}

uint64_t BufferedQp::window_addr(uint32_t slot) const {
  return window_buf_.iova + uint64_t(slot) * slot_bytes_;
}

}  // namespace irdma_sim::testbench
