// Recovery: a broken connection's peer moved to error, a CQ error's pair torn down, own CQs
// resized under traffic, the traffic stopped with work in flight.

#include <algorithm>
#include <cerrno>
#include <mutex>

#include "driver/core/cq.h"
#include "model/testbench/workload/bookkeeping.h"

namespace irdma_sim::testbench {

using namespace ibcore;

// IB_EVENT_CQ_ERR (the device overflowed the CQ): the QPs on it are done for. Called in the
// event's interrupt; the posting thread tears their pairs down.
void Workload::cq_error(const ib_event& ev) {
  if (ev.event != IB_EVENT_CQ_ERR) return;
  const std::lock_guard<hal::Lock> held(*lock_);
  counters_.cq_errors++;
  for (auto& q : qps_)
    if (q->cq == ev.cq) {
      q->cq_error = true;
      mark_ready(*q);
    }
  completed_->signal();
}

// IB_EVENT_DEVICE_FATAL (a CQP command timed out): the driver completes every QP's work in
// software as flushed from now on, a general flush first on any queue. Called with no
// lock held, from whichever thread's CQP command timed out.
void Workload::device_fatal(const ib_event& ev) {
  if (ev.event != IB_EVENT_DEVICE_FATAL) return;
  const std::lock_guard<hal::Lock> held(*lock_);
  counters_.device_fatal++;
  for (auto& q : qps_) {
    sb_.expect_peer_fault(q->index);
    mark_ready(*q);
  }
  completed_->signal();
}

void Workload::verb_failed(const char* check, int ret, const std::string& detail) {
  const std::string why = detail + " failed, errno " + std::to_string(-ret);
  if (ret != -ETIMEDOUT && ret != -EBUSY) {
    sb_.record(check, false, why);
  } else if (!counters_.device_fatal) {
    lost_with_the_device_.emplace_back(check, why);
  }
}

// The recovery a ULP makes of a CQ error: both QPs of the pair destroyed (their unpolled
// CQEs with them), their own CQs freed, what was still expected of them given up.
int Workload::tear_down_pair(Qp& q) {
  // Both given up before either goes: the peer of the first destroyed fails its work
  // meanwhile (retries exceeded), which is no error of its own.
  for (Qp* x : {&q, q.peer}) {
    x->torn_down = true;
    sb_.abandon(x->index);
  }
  for (Qp* x : {&q, q.peer}) {
    if (!destroy_qp(*x)) sb_.record("tear_down_pair", false, "destroying a QP failed");
    x->sends_done = x->sends_posted = x->sends_total;
    x->recvs_done = x->recvs_posted = x->recvs_total;
    update_finished(*x);
  }
  for (Qp* x : {&q, q.peer}) {
    if (!x->own_cq || !x->cq) continue;
    cqs_.erase(std::remove(cqs_.begin(), cqs_.end(), x->cq), cqs_.end());
    // CQEs its polls dropped, their QP being destroyed (on OS threads a poll may find the
    // QP so between destroy's mark and its clean), count as the clean's do.
    count_cq_stats(x->cq);
    if (unlocked([&] { return ib_free_cq(x->cq); }))
      sb_.record("tear_down_pair", false, "freeing a CQ in error failed");
    x->cq = nullptr;
  }
  counters_.pairs_torn_down++;
  return 1;
}

int Workload::flush_peer(Qp& q) {
  q.peer_flushed = true;
  irdma::irdma_qp* const peer = q.peer->bq->qp();
  const int ret = unlocked([&] { return dev_.flush_qp(peer); });
  if (ret && ret != -EALREADY)
    sb_.record("flush_qp", false, "moving a QP to error failed, errno " + std::to_string(-ret));
  return 1;
}

void Workload::stop_traffic() {
  for (auto& q : qps_) {
    sb_.abandon(q->index);
    q->torn_down = true;
  }
  stopped_early_ = true;
}

// Under traffic: a QP with a CQ of its own resizes it after every traffic.resize_every of
// its completions, to the sizes the scenario lists, in turn.
int Workload::maybe_resize(Qp& q) {
  const TrafficSpec& t = sc_.traffic;
  if (!q.own_cq || !t.resize_every || q.completions - q.resized_at < t.resize_every) return 0;
  q.resized_at = q.completions;
  const uint32_t cqe = t.resize_cqes[q.resizes++ % t.resize_cqes.size()];
  if (int ret = unlocked([&] { return ib_resize_cq(q.cq, int(cqe)); }))
    verb_failed("resize_cq", ret, "resizing a CQ to " + std::to_string(cqe));
  counters_.cq_resizes++;
  return 1;
}

}  // namespace irdma_sim::testbench
