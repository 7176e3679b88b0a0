#include "driver/core/cq_poll.h"

#include <algorithm>
#include <string>

#include "driver/core/cq.h"

namespace ibcore {

ib_poll_workers::ib_poll_workers(hal::Exec& exec) : exec_(exec), lock_(exec.make_lock()) {
  const auto start = [&](const std::string& name, unsigned cpu) {
    auto w = std::make_unique<worker>();
    w->wake = exec_.make_event();
    w->running = true;
    worker* raw = w.get();
    exec_.spawn(name, cpu, [this, raw] { run(*raw); });
    return w;
  };
  for (unsigned cpu = 0; cpu < exec_.num_cpus(); cpu++) {
    softirq_.push_back(start("ksoftirqd/" + std::to_string(cpu), cpu));
    bound_.push_back(start("ib-comp-wq/" + std::to_string(cpu), cpu));
  }
  unbound_ = start("ib-comp-unb-wq", 0);
}

ib_poll_workers::~ib_poll_workers() { request_stop(); }

ib_poll_workers::worker& ib_poll_workers::worker_for(const ib_cq* cq) {
  // The CQ's vector is served on CPU `vector` (its CEQ's affinity).
  const size_t cpu = cq->comp_vector % softirq_.size();
  switch (cq->poll_ctx) {
    case IB_POLL_SOFTIRQ: return *softirq_[cpu];
    case IB_POLL_WORKQUEUE: return *bound_[cpu];
    default: return *unbound_;
  }
}

ib_poll_counters ib_poll_workers::counters() const {
  lock_->lock();
  const ib_poll_counters c = counters_;
  lock_->unlock();
  return c;
}

void ib_poll_workers::schedule(ib_cq* cq) {
  lock_->lock();
  worker* w = nullptr;
  if (!stopping_ && !cq->poll_scheduled && !cq->poll_disabled) {
    cq->poll_scheduled = true;
    if (in_hardirq_ && cq->poll_ctx == IB_POLL_SOFTIRQ) {
      raised_.push_back(cq);
    } else {
      w = &worker_for(cq);
      w->cqs.push_back(cq);
    }
  }
  lock_->unlock();
  if (w) w->wake->signal();
}

// Only the CQ's own worker, or the interrupt that raised it, polls it: once it is off
// their queues nothing runs it again.
void ib_poll_workers::cancel(ib_cq* cq) {
  lock_->lock();
  cq->poll_disabled = true;
  if (cq->poll_scheduled) {
    for (auto* q : {&worker_for(cq).cqs, &raised_}) q->erase(std::remove(q->begin(), q->end(), cq), q->end());
    cq->poll_scheduled = false;
  }
  counters_.cancels_waited += cq->poll_running;
  for (;;) {
    const bool running = cq->poll_running;
    lock_->unlock();
    if (!running) return;
    exec_.delay_ns(1000);
    lock_->lock();
  }
}

void ib_poll_workers::enable(ib_cq* cq) {
  lock_->lock();
  cq->poll_disabled = false;
  lock_->unlock();
}

void ib_poll_workers::enter_hardirq() {
  lock_->lock();
  in_hardirq_++;
  lock_->unlock();
}

// __do_softirq: what the handler raised is polled, then what those polls raised, for at
// most MAX_SOFTIRQ_RESTART rounds; a CQ still asking for more then goes to ksoftirqd.
void ib_poll_workers::irq_exit() {
  constexpr unsigned kMaxRounds = 10;
  lock_->lock();
  for (unsigned round = 0; round < kMaxRounds && !raised_.empty(); round++) {
    for (size_t n = raised_.size(); n > 0 && !raised_.empty(); n--) {  // a cancel may take some
      ib_cq* cq = raised_.front();
      raised_.pop_front();
      cq->poll_scheduled = false;
      cq->poll_running = true;
      counters_.at_irq_exit++;
      lock_->unlock();
      const bool again = poll(cq);
      lock_->lock();
      cq->poll_running = false;
      if (again && !stopping_ && !cq->poll_disabled && !cq->poll_scheduled) {
        cq->poll_scheduled = true;
        raised_.push_back(cq);
      }
    }
  }
  std::vector<worker*> woken;
  if (--in_hardirq_ == 0) {  // else a handler still under way polls them as it returns
    for (ib_cq* cq : raised_) {
      worker& w = worker_for(cq);
      w.cqs.push_back(cq);
      woken.push_back(&w);
    }
    raised_.clear();
  }
  lock_->unlock();
  for (worker* w : woken) w->wake->signal();
}

void ib_poll_workers::request_stop() {
  lock_->lock();
  stopping_ = true;
  lock_->unlock();
  for (auto* group : {&softirq_, &bound_})
    for (auto& w : *group) w->wake->signal();
  if (unbound_) unbound_->wake->signal();
}

bool ib_poll_workers::any_running() const {
  lock_->lock();
  bool any = unbound_ && unbound_->running;
  for (auto* group : {&softirq_, &bound_})
    for (const auto& w : *group) any = any || w->running;
  lock_->unlock();
  return any;
}

void ib_poll_workers::stop() {
  request_stop();
  while (any_running()) exec_.delay_ns(1000);
}

void ib_poll_workers::run(worker& w) {
  for (;;) {
    lock_->lock();
    if (w.cqs.empty()) {
      const bool stop = stopping_;
      if (stop) w.running = false;
      lock_->unlock();
      if (stop) return;
      w.wake->wait();  // a schedule() between the unlock and here leaves the event set
      continue;
    }
    ib_cq* cq = w.cqs.front();
    w.cqs.pop_front();
    cq->poll_scheduled = false;
    cq->poll_running = true;
    lock_->unlock();
    const bool again = poll(cq);
    lock_->lock();
    cq->poll_running = false;
    // Queued again in the same breath: once a cancel() sees the poll over, nothing here
    // touches the CQ.
    const bool requeue = again && !stopping_ && !cq->poll_disabled && !cq->poll_scheduled;
    if (requeue) {
      cq->poll_scheduled = true;
      w.cqs.push_back(cq);
    }
    lock_->unlock();
  }
}

// ib_poll_handler (softirq) and ib_cq_poll_work (workqueues).
bool ib_poll_workers::poll(ib_cq* cq) {
  const int budget = cq->poll_ctx == IB_POLL_SOFTIRQ ? IB_POLL_BUDGET_IRQ : IB_POLL_BUDGET_WORKQUEUE;
  const int completed = ib_process_cq(cq, budget, cq->wc.data(), IB_POLL_BATCH);
  const bool spent = completed >= budget;
  const bool missed = !spent && ib_req_notify_cq(cq, IB_POLL_FLAGS) > 0;
  // A valid CQE at the head that polled as nothing is still landing (an extended one whose
  // other half has not): as the kernel's re-polls do, spend a moment before the next look.
  if (missed && completed == 0) exec_.cpu_relax();
  lock_->lock();
  counters_.runs++;
  counters_.completions += uint64_t(completed);
  counters_.budget_spent += spent;
  counters_.rearms += !spent;
  counters_.missed += missed;
  lock_->unlock();
  return spent || missed;
}

}  // namespace ibcore
