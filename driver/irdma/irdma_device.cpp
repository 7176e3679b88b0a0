#include "driver/irdma/irdma_device.h"

#include <cerrno>

#include "driver/core/cq_pool.h"

namespace irdma {

irdma_device::irdma_device(hal::Platform& hw, const irdma_device_caps& caps)
    : hw_(hw), caps_(caps), cqp_(hw), cq_used_(caps.max_cq), qp_used_(caps.max_qp),
      qp_table_(caps.max_qp, nullptr), cq_table_(caps.max_cq, nullptr),
      stag_used_(caps.max_stags), pble_used_(caps.pble_entries) {
  attrs.max_cqe = caps.max_cqe;
  num_comp_vectors = caps.num_ceqs;
  num_online_cpus = hw.exec.num_cpus();
}

irdma_device::~irdma_device() {
  for (irdma_qp_uk* q : qp_table_)
    if (q) free_qp(to_iwqp(q));
  for (irdma_cq* cq : cq_table_)
    if (cq) free_cq(cq);
  if (pble_) hw_.dma.free_coherent(pble_);
  for (irdma_ceq& ceq : ceqs_) hw_.dma.free_coherent(ceq.ring);
  if (aeq_.ring) hw_.dma.free_coherent(aeq_.ring);
}

int irdma_device::probe() {
  pble_ = hw_.dma.alloc_coherent(uint64_t(caps_.pble_entries) * 8, 4096);
  if (!pble_) return -ENOMEM;
  hw_.bar0.write32(IRDMA_SIM_PBLE_BASE_LO, uint32_t(pble_.iova));
  hw_.bar0.write32(IRDMA_SIM_PBLE_BASE_HI, uint32_t(pble_.iova >> 32));
  hw_.bar0.write32(IRDMA_SIM_PBLE_COUNT, caps_.pble_entries);
  if (int ret = cqp_.create(caps_.hw_rev)) return ret;
  if (int ret = create_ceqs()) return ret;
  if (int ret = create_aeq()) return ret;
  workers_ = std::make_unique<ibcore::ib_poll_workers>(hw_.exec);
  poll_workers = workers_.get();
  flush_wake_ = hw_.exec.make_event();
  flush_worker_running_ = true;
  hw_.exec.spawn("irdma-cleanup-wq", 0, [this] { flush_worker(); });
  return 0;
}

int irdma_device::remove() {
  const int kept = ibcore::ib_cq_pool_cleanup(this);
  if (workers_) workers_->stop();
  if (flush_wake_) {  // the workers return before their objects go
    flush_worker_stop_ = true;
    flush_wake_->signal();
    while (flush_worker_running_) hw_.exec.delay_ns(1000);
  }
  destroy_aeq();
  destroy_ceqs();
  cqp_.destroy();
  hw_.bar0.write32(IRDMA_SIM_PBLE_COUNT, 0);
  hw_.dma.free_coherent(pble_);
  pble_ = {};
  return kept;
}

// Next-fit over the id space, as irdma allocates CQ and QP numbers.
int64_t irdma_device::alloc_id(std::vector<bool>& used, uint32_t& next, uint32_t first) {
  const uint32_t n = uint32_t(used.size());
  if (first >= n) return -ENOSPC;
  for (uint32_t i = 0; i < n - first; i++) {
    uint32_t id = next + i;
    if (id >= n) id = first + (id - n);
    if (!used[id]) {
      used[id] = true;
      next = id + 1 >= n ? first : id + 1;
      return id;
    }
  }
  return -ENOSPC;
}

}  // namespace irdma
