// The PCI function as the driver holds it (Linux's irdma_pci_f, main.h): the shared-code
// device, the resources the verbs allocate from (ids, the CQ and QP tables), the event
// queues, the reset, and the module's parameters. The verbs layer (irdma_device) owns one.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "driver/hal/platform.h"
#include "driver/irdma/event_queues.h"
#include "driver/irdma/reset.h"
#include "driver/irdma/type.h"
#include "driver/irdma/uk.h"

namespace irdma {

class irdma_device;
struct irdma_cq;
struct irdma_qp;

// What the driver is told rather than what it finds: Linux's module parameters.
struct irdma_params {
  uint32_t ceq_itr_us = 0;     // interrupt moderation programmed per CEQ vector (dev->ceq_itr)
  uint32_t max_pbles = 65536;  // most page-list entries committed, whatever the device offers
  // Missed-interrupt recovery (event_queues.h): how often the event queues are looked at
  // for entries an interrupt should have announced, and the function for a reset the driver
  // did not ask for; 0 turns it off. It must exceed the moderation interval, or a held-back
  // interrupt looks missed.
  uint32_t eq_watchdog_us = 0;
  // How long a CQP command may go without a completion before the device is given up
  // (Linux: CQP_TIMEOUT_THRESHOLD x CQP_COMPL_WAIT_TIME_MS).
  uint32_t cqp_timeout_ms = 5000;
};

struct irdma_event_counters {
  uint64_t interrupts = 0;   // handler runs
  uint64_t ceqes = 0;        // CEQEs consumed (each acknowledged with CQACK)
  uint64_t stale_ceqes = 0;  // of those, for no CQ (context 0 or unknown): skipped
  uint64_t comp_events = 0;  // comp_handler calls
  uint64_t aeqes = 0;        // AEQEs consumed
  uint64_t cq_errors = 0;    // IB_EVENT_CQ_ERR raised
  uint64_t stale_cq_errors = 0;  // CQ error AEQEs for a CQ destroyed before they were read: dropped
  uint64_t qp_errors = 0;        // QP events raised (QP_FATAL, QP_REQ_ERR, QP_ACCESS_ERR)
  uint64_t stale_qp_errors = 0;  // QP error AEQEs for a QP destroyed before they were read: dropped
  uint64_t cqes_cleaned = 0; // unpolled CQEs of destroyed QPs, never reported (flushes aside)
  uint64_t ceqes_left = 0;   // unconsumed in a CEQ when it was destroyed
  uint64_t cqes_left = 0;    // unpolled in a CQ when it was destroyed (flushes aside)
  uint64_t missed_interrupts = 0;  // handler runs the watchdog made for an interrupt that never came
  uint64_t resets_requested = 0;   // the device given up (irdma_reset): a CQP timeout, a PCIe error, a reset
  uint64_t pci_errors = 0;         // uncorrectable PCIe errors the host reported (AER)
  // Of resets_requested, by what gave the device up (the first cause only): a CQP timeout,
  // a PCIe error, a reset of the function the watchdog found (function_lost).
  uint64_t resets_on_cqp_timeout = 0, resets_on_pci_error = 0, resets_on_function_lost = 0;
  uint64_t given_up_ns = 0;  // when, on the host's clock (0: never)
};

// Counters several threads bump (handlers of different vectors, destroys).
inline void bump(std::atomic<uint64_t>& c, uint64_t n = 1) { c.fetch_add(n, std::memory_order_relaxed); }

struct irdma_pci_f {
  irdma_pci_f(hal::Platform& hw, const irdma_params& params, irdma_device& iwdev);
  irdma_pci_f(const irdma_pci_f&) = delete;
  irdma_pci_f& operator=(const irdma_pci_f&) = delete;

  // irdma_ctrl_init_hw (hw.cpp): the function's identity, the engine's readiness, the CQP,
  // the HMC, the CCQ, the features, the vectors, the resource tables, the CEQs and the AEQ.
  // 0 or a negative errno, sc_dev.init_error saying which step failed.
  int ctrl_init_hw();
  // Event queues, vectors, HMC and CQP gone (irdma_ctrl_deinit_hw).
  void ctrl_deinit_hw();

  // Next-fit over an id space from `first`, as irdma_alloc_rsrc hands out CQ and QP
  // numbers; -ENOSPC when it is full. irdma_free_rsrc, and the same under rsrc_lock.
  int64_t alloc_rsrc(std::vector<bool>& used, uint32_t& next, uint32_t first);
  void free_rsrc(std::vector<bool>& used, uint32_t id);
  void free_rsrc_locked(std::vector<bool>& used, uint32_t id);
  // Whether any CQ, QP, PD or STag id is allocated.
  bool in_use() const;
  // The live CQ of a context, referenced so that destroy_cq waits for the caller, or null.
  irdma_cq* irdma_cq_add_ref(uint64_t ctx);
  static void irdma_cq_rem_ref(irdma_cq* cq);
  // The live QP of an id and completion context, referenced likewise, or null.
  irdma_qp* irdma_qp_add_ref(uint32_t qp_num, uint64_t compl_ctx);
  static void irdma_qp_rem_ref(irdma_qp* qp);
  irdma_event_counters event_counters() const;

  irdma_sc_dev sc_dev;
  const irdma_params params;
  irdma_device& iwdev;  // the verbs layer, for the consumers' event handlers

  // The id bitmaps and the CQ and QP tables (Linux's rsrc_lock, cqtable_lock and
  // qptable_lock in one).
  std::unique_ptr<hal::Lock> rsrc_lock;
  std::vector<bool> allocated_cqs, allocated_qps, allocated_mrs, allocated_pds, allocated_pbles, allocated_ahs;
  uint32_t next_cq = 3, next_qp = 2, next_mr = 1, next_pd = 1, next_ah = 1;
  uint64_t ids_in_use = 0;       // CQ, QP, PD and STag ids
  uint64_t obj_generation = 0;   // makes every CQ and QP context cookie new
  // CQEs are checked against it: written under rsrc_lock with release, read by polls.
  std::vector<irdma_qp_uk*> qp_table;
  std::vector<irdma_cq*> cq_table;

  irdma_event_queues eqs;  // the ceqlist and the aeq
  irdma_reset reset;

  // Bumped by handlers of different vectors and by destroys.
  struct event_stats {
    std::atomic<uint64_t> interrupts{0}, ceqes{0}, stale_ceqes{0}, comp_events{0}, aeqes{0}, cq_errors{0},
        stale_cq_errors{0}, qp_errors{0}, stale_qp_errors{0}, cqes_cleaned{0}, ceqes_left{0}, cqes_left{0}, missed_interrupts{0};
  } stats;

 private:
  int pci_enable();
};

}  // namespace irdma
