// The poll contexts that run a CQ's completions once its completion event fires
// (drivers/infiniband/core/cq.c; spec A.3, A.5): SOFTIRQ as irq_poll does (budget 256,
// batches of 16, re-armed with NEXT_COMP|REPORT_MISSED_EVENTS and polled again when that
// reports a miss), WORKQUEUE and UNBOUND_WORKQUEUE as ib_cq_poll_work does (budget 65536).
// Each context has workers on hal::Exec: softirq and bound work on the CPU of the CQ's
// vector, unbound work on a worker of its own. Where the Exec runs softirqs at irq exit, a
// SOFTIRQ CQ scheduled while an interrupt is handled is polled as the handler returns, on
// its thread, and goes to ksoftirqd only once it keeps asking for more. A CQ is polled by
// one poller at a time; the queues are locked, so interrupts may schedule from any thread.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <vector>

#include "driver/core/ib_device.h"
#include "driver/hal/exec.h"

namespace ibcore {

struct ib_poll_counters {
  uint64_t runs = 0;          // poller invocations
  uint64_t completions = 0;   // processed by them
  uint64_t rearms = 0;        // ib_req_notify_cq calls after draining
  uint64_t missed = 0;        // re-arms that reported a missed event: polled again
  uint64_t budget_spent = 0;  // runs that used their whole budget: polled again
  uint64_t cancels_waited = 0;  // cancel()s that found their CQ being polled and waited it out
  uint64_t at_irq_exit = 0;     // runs as an interrupt handler returned, not by a worker
};

class ib_poll_workers {
 public:
  explicit ib_poll_workers(hal::Exec& exec);
  ~ib_poll_workers();
  ib_poll_workers(const ib_poll_workers&) = delete;
  // The destructor only tells the workers to stop: it may not wait (the simulation may be
  // over), so stop() must have run if they are to finish first.
  ib_poll_workers& operator=(const ib_poll_workers&) = delete;

  // The comp_handler of a SOFTIRQ or WORKQUEUE CQ: irq_poll_sched / queue_work. A CQ
  // already scheduled is not queued twice.
  void schedule(ib_cq* cq);
  // irq_poll_disable / cancel_work_sync, as ib_free_cq does: the CQ is never scheduled
  // again, and a poll of it under way is waited for. Call from a thread of the Exec's.
  void cancel(ib_cq* cq);
  // Undoes cancel() (the CQ's destroy failed: it lives on).
  void enable(ib_cq* cq);
  // Runs an interrupt handler: the hard interrupt, then (Linux's irq_exit) the polls it
  // raised, where the Exec runs softirqs so.
  template <typename Handler>
  void hardirq(Handler&& handler) {
    if (!exec_.softirqs_at_irq_exit()) return handler();
    enter_hardirq();
    handler();
    irq_exit();
  }
  // Stops the workers once their queues are empty and waits until they have returned;
  // schedule() does nothing afterwards. Call from a thread of the Exec's.
  void stop();
  ib_poll_counters counters() const;

 private:
  struct worker {
    std::deque<ib_cq*> cqs;
    std::unique_ptr<hal::Event> wake;
    bool running = false;
  };
  worker& worker_for(const ib_cq* cq);
  void enter_hardirq();
  void irq_exit();  // polls what was raised; leaves the hard interrupt
  void run(worker& w);
  void request_stop();
  bool any_running() const;
  bool poll(ib_cq* cq);  // one poller invocation; true: schedule it again

  hal::Exec& exec_;
  std::unique_ptr<hal::Lock> lock_;  // the queues, the CQs' scheduled flags, the counters
  std::vector<std::unique_ptr<worker>> softirq_, bound_;  // per CPU
  std::unique_ptr<worker> unbound_;
  // Interrupt handlers under way, and the SOFTIRQ CQs scheduled meanwhile: polled as the
  // handler returns.
  unsigned in_hardirq_ = 0;
  std::deque<ib_cq*> raised_;
  bool stopping_ = false;
  ib_poll_counters counters_;
};

}  // namespace ibcore
