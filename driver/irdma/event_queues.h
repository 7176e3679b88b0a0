// The device's event queues, as irdma_pci_f keeps its ceqlist and aeq: a CEQ per completion
// vector (spec E), whose entries name the CQs to call back, and the AEQ, whose entries
// report CQ errors; their interrupt handlers; and the watchdog that recovers an interrupt
// the host never delivered (eq_watchdog.cpp). A member of irdma_pci_f, which it reaches
// back into for what a handler needs: the CQP, the CQ table, the reset.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>
#include <vector>

#include "driver/hal/exec.h"
#include "driver/hal/dma.h"

namespace ibcore {
class ib_poll_workers;
}

namespace irdma {

struct irdma_pci_f;
struct irdma_cq;

// What the missed-interrupt watchdog knows of an event queue, under its irq_lock.
struct irdma_eq_watch {
  uint64_t handler_runs = 0;
  uint64_t runs_seen = 0;     // handler_runs at the watchdog's last look
  bool pending_seen = false;  // an entry waited at the tail then
};

// A completion event queue: CEQ k is served by MSI-X vector k, its CEQEs name CQs by
// context.
struct irdma_ceq {
  std::unique_ptr<hal::Lock> ce_lock;  // the ring: its handler against a CQ's cleanup
  std::unique_ptr<hal::Lock> irq_lock;  // one handler run at a time (interrupt or watchdog)
  hal::DmaBuffer ring;
  uint32_t id = 0;
  uint32_t size = 0;
  uint32_t tail = 0;
  uint8_t polarity = 1;
  irdma_eq_watch watch;
};

// The asynchronous event queue, on the vector after the CEQs'.
struct irdma_aeq {
  std::unique_ptr<hal::Lock> irq_lock;
  irdma_eq_watch watch;
  hal::DmaBuffer ring;
  uint32_t size = 0;
  uint32_t tail = 0;
  uint8_t polarity = 1;
  uint32_t vector = 0;
};

class irdma_event_queues {
 public:
  explicit irdma_event_queues(irdma_pci_f& rf) : rf_(rf) {}
  irdma_event_queues(const irdma_event_queues&) = delete;
  irdma_event_queues& operator=(const irdma_event_queues&) = delete;
  // Frees the rings' memory only: the device may already be gone.
  ~irdma_event_queues();

  // The CEQs, then the AEQ on the vector after theirs, their vectors enabled; 0 or a
  // negative errno.
  int create();
  // Vectors off and handlers gone, then the queues destroyed through the CQP.
  void destroy();
  // Starts the missed-interrupt watchdog (params.eq_watchdog_us), and stops it.
  void start_watchdog();
  void stop_watchdog();
  // The CEQ interrupts return through `workers` (hardirq: the polls they raise run then).
  void set_poll_workers(ibcore::ib_poll_workers* workers) { poll_workers_.store(workers); }
  // irdma_sc_cleanup_ceqes: a destroyed CQ's unconsumed CEQEs are emptied for the handler
  // to skip.
  void cleanup_ceqes(const irdma_cq* cq);

 private:
  int create_ceqs();
  void destroy_ceqs();
  void irq_handler(uint32_t ceq_id);  // takes the CEQ's irq_lock
  void process_ceq(uint32_t ceq_id);  // irq_lock held
  int create_aeq();
  void destroy_aeq();
  void aeq_handler();
  void process_aeq();
  void qp_event(uint32_t qp_num, uint64_t ctx, uint16_t code);
  void watchdog();
  // One look at a queue: true when its interrupt is overdue.
  static bool overdue(irdma_eq_watch& w, bool pending);

  irdma_pci_f& rf_;
  std::atomic<ibcore::ib_poll_workers*> poll_workers_{nullptr};
  std::vector<irdma_ceq> ceqs_;
  irdma_aeq aeq_;
  std::unique_ptr<hal::Event> watchdog_wake_;
  std::atomic<bool> watchdog_stop_{false}, watchdog_running_{false};
};

}  // namespace irdma
