// A loopback QP together with its message buffers: one DMA slot per send and per receive
// it may have outstanding, so a work request's data stays put until it completes, and a
// window of three slots per send slot: where the peer's RDMA WRITEs land, where its READs
// read from, and where its atomics operate.
#pragma once

#include <algorithm>
#include <cstdint>

#include "driver/core/ib_qp.h"
#include "driver/irdma/irdma_device.h"

namespace irdma_sim::testbench {

class BufferedQp {
 public:
  // How many slots the buffers have.
  enum class Slots {
    requested,  // as many as the work requests asked for (a ULP that keeps to its depths)
    capacity,   // as many as the queues hold (ib_qp_cap as the driver rewrote it)
  };
  // Creates the QP on `cq` (send and receive) for `sq_depth` sends and `rq_depth`
  // receives, and its buffers; returns a negative errno through `err` on failure, leaving
  // nothing allocated.
  static BufferedQp* create(irdma::irdma_device& dev, ibcore::ib_cq* cq, uint32_t sq_depth,
                            uint32_t rq_depth, uint32_t slot_bytes, int& err,
                            ibcore::ib_qp_type type = ibcore::IB_QPT_RC,
                            Slots slots = Slots::requested);
  // Destroys the QP through the CQP and frees the buffers; returns the destroy's errno.
  int destroy();
  ~BufferedQp();

  // A slot for messages of up to `max_msg_bytes`: 64-byte aligned, 64 bytes at least.
  static uint32_t slot_bytes_for(uint32_t max_msg_bytes) { return std::max(64u, (max_msg_bytes + 63) & ~63u); }
  // What the buffers of a QP with `sq_slots` send slots and `rq_slots` receive slots take.
  static uint64_t buffer_bytes(uint32_t sq_slots, uint32_t rq_slots, uint32_t slot_bytes) {
    return uint64_t(slot_bytes) * (4ull * sq_slots + rq_slots);
  }

  irdma::irdma_qp* qp() const { return qp_; }
  ibcore::ib_cq* cq() const { return cq_; }
  uint32_t qp_num() const { return qp_->qp_num; }
  // Slots for sends and for receives.
  uint32_t sq_depth() const { return sq_depth_; }
  uint32_t rq_depth() const { return rq_depth_; }
  const ibcore::ib_qp_cap& cap() const { return cap_; }
  uint32_t slot_bytes() const { return slot_bytes_; }

  uint8_t* send_slot(uint32_t slot) const;
  const uint8_t* recv_slot(uint32_t slot) const;
  ibcore::ib_sge send_sge(uint32_t slot, uint32_t len) const;
  ibcore::ib_sge recv_sge(uint32_t slot) const;
  uint32_t window_slots() const { return 3 * sq_depth_; }
  uint8_t* window_slot(uint32_t slot) const;
  uint64_t window_addr(uint32_t slot) const;

 private:
  BufferedQp(irdma::irdma_device& dev, ibcore::ib_cq* cq) : dev_(dev), cq_(cq) {}
  irdma::irdma_device& dev_;
  ibcore::ib_cq* cq_;
  irdma::irdma_qp* qp_ = nullptr;
  uint32_t sq_depth_ = 0, rq_depth_ = 0, slot_bytes_ = 0;
  ibcore::ib_qp_cap cap_;
  hal::DmaBuffer send_buf_, recv_buf_, window_buf_;
};

}  // namespace irdma_sim::testbench
