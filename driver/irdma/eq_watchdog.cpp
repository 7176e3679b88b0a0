// Missed-interrupt recovery. A vector masks itself when it fires until its handler enables
// it again, so an MSI-X the host never delivers leaves the queue's entries unread and every
// later event on that vector held: its CQs wait for good. Linux's irdma has no remedy; like
// mlx5's EQ recovery, this worker looks at every event queue each eq_watchdog_us and runs
// the handler of one whose tail entry has waited a whole period with no handler run. Like
// mlx5's health poll it also looks at the function itself: one reset under the driver has
// lost every queue the driver made, and is given up (function_lost).
#include "driver/irdma/event_queues.h"

#include "driver/irdma/main.h"

namespace irdma {

bool irdma_event_queues::overdue(irdma_eq_watch& w, bool pending) {
  const bool overdue = pending && w.pending_seen && w.handler_runs == w.runs_seen;
  w.pending_seen = pending;
  w.runs_seen = w.handler_runs;
  return overdue;
}

void irdma_event_queues::watchdog() {
  const uint64_t period_ns = uint64_t(rf_.params.eq_watchdog_us) * 1000;
  for (;;) {
    watchdog_wake_->wait_for(period_ns);
    if (watchdog_stop_.load()) break;
    for (uint32_t k = 0; k < ceqs_.size(); k++) {
      irdma_ceq& ceq = ceqs_[k];
      std::lock_guard<hal::Lock> irq(*ceq.irq_lock);
      bool pending;
      {
        std::lock_guard<hal::Lock> ring(*ceq.ce_lock);
        const uint64_t ceqe = READ_ONCE(static_cast<const uint64_t*>(ceq.ring.cpu)[ceq.tail]);
        pending = FIELD_GET(IRDMA_CEQE_VALID, ceqe) == ceq.polarity;
      }
      if (!overdue(ceq.watch, pending)) continue;
      bump(rf_.stats.missed_interrupts);
      process_ceq(k);
    }
    {
      std::lock_guard<hal::Lock> irq(*aeq_.irq_lock);
      const uint64_t info = READ_ONCE(static_cast<const uint64_t*>(aeq_.ring.cpu)[2ull * aeq_.tail + 1]);
      if (overdue(aeq_.watch, FIELD_GET(IRDMA_AEQE_VALID, info) == aeq_.polarity)) {
        bump(rf_.stats.missed_interrupts);
        process_aeq();
      }
    }
    // No lock held: giving the device up runs the consumers' handlers.
    if (!rf_.reset.requested() && rf_.reset.function_lost()) rf_.reset.request(irdma_reset::cause::function_lost);
  }
  watchdog_running_.store(false);
}

void irdma_event_queues::start_watchdog() {
  if (!rf_.params.eq_watchdog_us) return;
  watchdog_wake_ = rf_.sc_dev.hw.exec.make_event();
  watchdog_running_ = true;
  rf_.sc_dev.hw.exec.spawn("irdma-eq-watchdog", 0, [this] { watchdog(); });
}

void irdma_event_queues::stop_watchdog() {
  if (!watchdog_running_.load()) return;
  watchdog_stop_.store(true);
  watchdog_wake_->signal();
  while (watchdog_running_.load()) rf_.sc_dev.hw.exec.delay_ns(1000);
}

}  // namespace irdma
