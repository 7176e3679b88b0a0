#include "driver/irdma/flush_wq.h"

#include <algorithm>
#include <mutex>

#include "driver/irdma/irdma_device.h"

namespace irdma {

irdma_flush_wq::irdma_flush_wq(hal::Exec& exec, std::function<bool(irdma_qp*)> work)
    : exec_(exec), work_(std::move(work)), lock_(exec.make_lock()) {}

void irdma_flush_wq::start() {
  wake_ = exec_.make_event();
  worker_running_ = true;
  exec_.spawn("irdma-cleanup-wq", 0, [this] { worker(); });
}

void irdma_flush_wq::stop() {
  if (!wake_) return;
  std::unique_lock<hal::Lock> guard(*lock_);
  stop_ = true;
  wake_->signal();
  while (worker_running_) {
    guard.unlock();
    exec_.delay_ns(1000);
    guard.lock();
  }
}

void irdma_flush_wq::schedule(irdma_qp* qp) {
  {
    std::lock_guard<hal::Lock> guard(*lock_);
    if (!qp->flush_due_ns) queued_.push_back(qp);
    qp->flush_due_ns = exec_.now_ns() + IRDMA_FLUSH_DELAY_NS;
  }
  if (wake_) wake_->signal();
}

// Sleeps until the earliest QP's work is due, then runs it with the queue unlocked, marking
// the QP so that cancel_sync waits.
void irdma_flush_wq::worker() {
  std::unique_lock<hal::Lock> guard(*lock_);
  while (!stop_) {
    const uint64_t now = exec_.now_ns();
    irdma_qp* next = nullptr;
    for (irdma_qp* qp : queued_)
      if (!next || qp->flush_due_ns < next->flush_due_ns) next = qp;
    if (next && next->flush_due_ns <= now) {
      const uint64_t due = next->flush_due_ns;
      running_ = next;
      guard.unlock();
      const bool again = work_(next);
      guard.lock();
      if (next->flush_due_ns == due) {  // neither rescheduled nor cancelled meanwhile
        if (again) {
          next->flush_due_ns = exec_.now_ns() + IRDMA_FLUSH_DELAY_NS;
        } else {
          next->flush_due_ns = 0;
          queued_.erase(std::find(queued_.begin(), queued_.end(), next));
        }
      }
      running_ = nullptr;
      continue;
    }
    const uint64_t sleep_ns = next ? next->flush_due_ns - now : 0;
    guard.unlock();
    if (sleep_ns)
      wake_->wait_for(sleep_ns);
    else
      wake_->wait();
    guard.lock();
  }
  worker_running_ = false;
}

void irdma_flush_wq::cancel_sync(irdma_qp* qp) {
  std::unique_lock<hal::Lock> guard(*lock_);
  queued_.erase(std::remove(queued_.begin(), queued_.end(), qp), queued_.end());
  qp->flush_due_ns = 0;
  while (running_ == qp) {
    guard.unlock();
    exec_.delay_ns(1000);
    guard.lock();
  }
}

}  // namespace irdma
