// The function's resources (Linux's utils.c and main.h inlines): id allocation, CQ
// references for the event handlers, and the counters.
#include <cerrno>

#include "driver/irdma/irdma_device.h"
#include "driver/irdma/main.h"

namespace irdma {

irdma_pci_f::irdma_pci_f(hal::Platform& hw, const irdma_params& params, irdma_device& iwdev)
    : sc_dev(hw, uint64_t(params.cqp_timeout_ms) * 1'000'000),
      params(params),
      iwdev(iwdev),
      rsrc_lock(hw.exec.make_lock()),
      eqs(*this),
      reset(hw, sc_dev.cqp) {
  sc_dev.cqp.on_timeout = [this] { reset.request(irdma_reset::cause::cqp_timeout); };
}

int64_t irdma_pci_f::alloc_rsrc(std::vector<bool>& used, uint32_t& next, uint32_t first) {
  std::lock_guard<hal::Lock> guard(*rsrc_lock);
  const uint32_t n = uint32_t(used.size());
  if (first >= n) return -ENOSPC;
  for (uint32_t i = 0; i < n - first; i++) {
    uint32_t id = next + i;
    if (id >= n) id = first + (id - n);
    if (!used[id]) {
      used[id] = true;
      ids_in_use++;
      next = id + 1 >= n ? first : id + 1;
      return id;
    }
  }
  return -ENOSPC;
}

void irdma_pci_f::free_rsrc(std::vector<bool>& used, uint32_t id) {
  std::lock_guard<hal::Lock> guard(*rsrc_lock);
  free_rsrc_locked(used, id);
}

void irdma_pci_f::free_rsrc_locked(std::vector<bool>& used, uint32_t id) {
  if (used[id]) ids_in_use--;
  used[id] = false;
}

bool irdma_pci_f::in_use() const {
  std::lock_guard<hal::Lock> guard(*rsrc_lock);
  return ids_in_use != 0;
}

irdma_cq* irdma_pci_f::irdma_cq_add_ref(uint64_t ctx) {
  const uint32_t cq_num = irdma_cookie_id(ctx >> 1);
  std::lock_guard<hal::Lock> guard(*rsrc_lock);
  irdma_cq* cq = cq_num < cq_table.size() ? cq_table[cq_num] : nullptr;
  if (!cq || cq->ctx != ctx) return nullptr;
  cq->refcnt.fetch_add(1, std::memory_order_relaxed);
  return cq;
}

void irdma_pci_f::irdma_cq_rem_ref(irdma_cq* cq) { cq->refcnt.fetch_sub(1, std::memory_order_release); }

irdma_qp* irdma_pci_f::irdma_qp_add_ref(uint32_t qp_num, uint64_t compl_ctx) {
  std::lock_guard<hal::Lock> guard(*rsrc_lock);
  irdma_qp_uk* uk = qp_num < qp_table.size() ? qp_table[qp_num] : nullptr;
  if (!uk || uk->compl_ctx != compl_ctx) return nullptr;
  irdma_qp* qp = to_iwqp(uk);
  qp->refcnt.fetch_add(1, std::memory_order_relaxed);
  return qp;
}

void irdma_pci_f::irdma_qp_rem_ref(irdma_qp* qp) { qp->refcnt.fetch_sub(1, std::memory_order_release); }

irdma_event_counters irdma_pci_f::event_counters() const {
  const auto get = [](const std::atomic<uint64_t>& c) { return c.load(std::memory_order_relaxed); };
  const irdma_reset::counters& r = reset.stats();
  return {get(stats.interrupts),     get(stats.ceqes),           get(stats.stale_ceqes),
          get(stats.comp_events),    get(stats.aeqes),           get(stats.cq_errors),
          get(stats.stale_cq_errors), get(stats.qp_errors),      get(stats.stale_qp_errors),
          get(stats.cqes_cleaned),   get(stats.ceqes_left),
          get(stats.cqes_left),      get(stats.missed_interrupts), get(r.requests),
          get(r.pci_errors),         get(r.on_cqp_timeout),      get(r.on_pci_error),
          get(r.on_function_lost),   reset.requested_ns()};
}

}  // namespace irdma
