// The delayed work that turns a flushed QP's outstanding WQEs into completions (spec G.7):
// Linux's per-QP dwork_flush on the cleanup workqueue. One worker runs each QP's work once
// it is due, with the queue unlocked; what the work does is the device's (run_flush_work).
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <vector>

#include "driver/hal/exec.h"

namespace irdma {

struct irdma_qp;

// The kernel's IRDMA_FLUSH_DELAY_MS: the device's own flush CQEs land first.
inline constexpr uint64_t IRDMA_FLUSH_DELAY_NS = 20'000'000;

class irdma_flush_wq {
 public:
  // `work` runs a QP's flush work; true when it must run again a delay later.
  irdma_flush_wq(hal::Exec& exec, std::function<bool(irdma_qp*)> work);
  irdma_flush_wq(const irdma_flush_wq&) = delete;
  irdma_flush_wq& operator=(const irdma_flush_wq&) = delete;

  // Spawns the worker; schedule() only queues until then.
  void start();
  // Stops the worker once the work under way returns, and waits for it.
  void stop();
  // mod_delayed_work: the QP's work runs a flush delay from now, however often it is asked.
  void schedule(irdma_qp* qp);
  // cancel_delayed_work_sync: off the queue, and a run under way is waited for.
  void cancel_sync(irdma_qp* qp);

 private:
  void worker();

  hal::Exec& exec_;
  std::function<bool(irdma_qp*)> work_;
  std::unique_ptr<hal::Lock> lock_;    // everything below, and each QP's flush_due_ns
  std::vector<irdma_qp*> queued_;      // QPs whose work is scheduled
  irdma_qp* running_ = nullptr;        // the QP whose work the worker runs now
  std::unique_ptr<hal::Event> wake_;   // made by start()
  bool stop_ = false, worker_running_ = false;
};

}  // namespace irdma
