#include "driver/irdma/irdma_device.h"

#include <cerrno>


namespace irdma {

irdma_device::irdma_device(hal::Platform& hw, const irdma_params& params)
    : hw_(hw),
      params_(params),
      cqp_(hw, uint64_t(params.cqp_timeout_ms) * 1'000'000),
      rsrc_lock_(hw.exec.make_lock()),
      flush_wq_(hw.exec, [this](irdma_qp* qp) { return run_flush_work(qp); }),
      eqs_(*this) {
  num_online_cpus = hw.exec.num_cpus();
  cqp_.on_timeout = [this] { request_reset(reset_cause::cqp_timeout); };
}

// Only rsrc_lock_ is taken, which nothing holds across a wait: a simulation may have ended
// with a driver thread suspended holding a CQ, QP or CQP lock.
irdma_device::~irdma_device() {
  for (irdma_qp_uk* q : qp_table_)
    if (q) release_qp(to_iwqp(q));
  for (irdma_cq* cq : cq_table_)
    if (cq) free_cq(cq);
  for (hal::DmaBuffer& pd : hmc_.pd_pages) hw_.dma.free_coherent(pd);
  if (hmc_.pble) hw_.dma.free_coherent(hmc_.pble);
}

irdma_event_counters irdma_device::event_counters() const {
  const auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  return {get(events_.interrupts),     get(events_.ceqes),          get(events_.stale_ceqes),
          get(events_.comp_events),    get(events_.aeqes),          get(events_.cq_errors),
          get(events_.stale_cq_errors), get(events_.cqes_cleaned),  get(events_.ceqes_left),
          get(events_.cqes_left),      get(events_.missed_interrupts), get(events_.resets_requested),
          get(events_.pci_errors),     get(events_.resets_on_cqp_timeout), get(events_.resets_on_pci_error),
          get(events_.resets_on_function_lost), given_up_ns_.load()};
}

// Next-fit over the id space, as irdma allocates CQ and QP numbers.
int64_t irdma_device::alloc_id(std::vector<bool>& used, uint32_t& next, uint32_t first) {
  std::lock_guard<hal::Lock> guard(*rsrc_lock_);
  const uint32_t n = uint32_t(used.size());
  if (first >= n) return -ENOSPC;
  for (uint32_t i = 0; i < n - first; i++) {
    uint32_t id = next + i;
    if (id >= n) id = first + (id - n);
    if (!used[id]) {
      used[id] = true;
      ids_in_use_++;
      next = id + 1 >= n ? first : id + 1;
      return id;
    }
  }
  return -ENOSPC;
}

void irdma_device::free_id(std::vector<bool>& used, uint32_t id) {
  std::lock_guard<hal::Lock> guard(*rsrc_lock_);
  free_id_locked(used, id);
}

void irdma_device::free_id_locked(std::vector<bool>& used, uint32_t id) {
  if (used[id]) ids_in_use_--;
  used[id] = false;
}

}  // namespace irdma
