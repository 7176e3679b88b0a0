#include "driver/core/cq_poll.h"

#include <algorithm>
#include <string>

#include "driver/core/cq.h"

namespace ibcore {

ib_poll_workers::ib_poll_workers(hal::Exec& exec) : exec_(exec) {
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

ib_poll_workers::~ib_poll_workers() { stop(); }

ib_poll_workers::worker& ib_poll_workers::worker_for(const ib_cq* cq) {
  // The CQ's vector is served on CPU `vector` (its CEQ's affinity).
  const size_t cpu = cq->comp_vector % softirq_.size();
  switch (cq->poll_ctx) {
    case IB_POLL_SOFTIRQ: return *softirq_[cpu];
    case IB_POLL_WORKQUEUE: return *bound_[cpu];
    default: return *unbound_;
  }
}

void ib_poll_workers::schedule(ib_cq* cq) {
  if (stopping_ || cq->poll_scheduled) return;
  cq->poll_scheduled = true;
  worker& w = worker_for(cq);
  w.cqs.push_back(cq);
  w.wake->signal();
}

void ib_poll_workers::cancel(ib_cq* cq) {
  if (!cq->poll_scheduled) return;
  auto& q = worker_for(cq).cqs;
  q.erase(std::remove(q.begin(), q.end(), cq), q.end());
  cq->poll_scheduled = false;
}

void ib_poll_workers::stop() {
  stopping_ = true;
  for (auto* group : {&softirq_, &bound_})
    for (auto& w : *group) w->wake->signal();
  if (unbound_) unbound_->wake->signal();
}

void ib_poll_workers::run(worker& w) {
  for (;;) {
    while (w.cqs.empty()) {
      if (stopping_) {
        w.running = false;
        return;
      }
      w.wake->wait();
    }
    ib_cq* cq = w.cqs.front();
    w.cqs.pop_front();
    cq->poll_scheduled = false;
    if (poll(cq)) schedule(cq);
  }
}

// ib_poll_handler (softirq) and ib_cq_poll_work (workqueues).
bool ib_poll_workers::poll(ib_cq* cq) {
  const int budget = cq->poll_ctx == IB_POLL_SOFTIRQ ? IB_POLL_BUDGET_IRQ : IB_POLL_BUDGET_WORKQUEUE;
  const int completed = ib_process_cq(cq, budget, cq->wc.data(), IB_POLL_BATCH);
  counters_.runs++;
  counters_.completions += uint64_t(completed);
  if (completed >= budget) {
    counters_.budget_spent++;
    return true;
  }
  counters_.rearms++;
  if (ib_req_notify_cq(cq, IB_POLL_FLAGS) > 0) {
    counters_.missed++;
    return true;
  }
  return false;
}

}  // namespace ibcore
