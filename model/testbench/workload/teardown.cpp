// Teardown: what is left in the rings drained, everything destroyed, and the checks on
// what the run left behind.

#include "driver/core/cq.h"
#include "driver/core/cq_poll.h"
#include "driver/core/cq_pool.h"
#include "driver/irdma/irdmadv.h"
#include "model/testbench/workload/bookkeeping.h"

namespace irdma_sim::testbench {

using namespace ibcore;

void Workload::count_cq_stats(ib_cq* cq) {
  irdma::irdmadv_cq stats;
  irdma::irdmadv_query_cq(cq, &stats);
  counters_.corrupt_cqes += stats.corrupt_cqes;
  counters_.destroyed_qp_cqes += stats.destroyed_qp_cqes;
  counters_.ext_half_waits += stats.ext_half_waits;
  counters_.retired_ring_completions += stats.retired_polled;
}

void Workload::teardown() {
  teardown_started_ = std::chrono::steady_clock::now();
  // The CQs' poll contexts stop first, each waiting out a handler under way (it may need
  // the lock): after a stall, one still running would post to a QP destroyed under it, or
  // check its batch after the drain below took later completions. The drain takes the rest.
  if (dev_.poll_workers)
    for (ib_cq* cq : cqs_) unlocked([&] { dev_.poll_workers->cancel(cq); });
  // Stopped with work in flight: every QP to error (FLUSH_WQES) and destroyed now, their
  // unpolled CQEs cleaned out of the rings; the drain below finds nothing to report.
  if (stopped_early_) {
    for (auto& q : qps_)
      if (q->bq) flush_peer(*q->peer);
    for (auto& q : qps_)
      if (!destroy_qp(*q)) sb_.record("teardown_clean", false, "destroying a QP failed");
  }
  uint64_t left = 0;
  for (ib_cq* cq : cqs_)  // what a stall left
    left += uint64_t(unlocked([&] { return ib_process_cq_direct(cq, -1); }));
  sb_.record("no_completion_left_in_rings", left == 0,
             left ? std::to_string(left) + " completion(s) were still in the rings" : "all rings drained");
  for (ib_cq* cq : cqs_) count_cq_stats(cq);
  const uint64_t corrupt = counters_.corrupt_cqes;
  sb_.record("no_corrupt_cqes", corrupt == 0,
             std::to_string(corrupt) + " CQE(s) named an unknown QP or WQE index");

  bool clean = true;
  for (auto it = qps_.rbegin(); it != qps_.rend(); ++it) {
    Qp& q = **it;
    if (q.mw && unlocked([&] { return dev_.dealloc_mw(q.mw); })) clean = false;
    if (q.mr && unlocked([&] { return dev_.dereg_mr(q.mr); })) clean = false;
    q.mw = nullptr;
    q.mr = nullptr;
    if (!destroy_qp(q)) clean = false;
    if (q.cq && unlocked([&] { return q.own_cq ? ib_free_cq(q.cq) : ib_cq_pool_put(q.cq, q.nr_cqe); }))
      clean = false;
  }
  const size_t pool_before = counters_.pool_cqs;
  const int pool_after = unlocked([&] { return dev_.remove(); });  // pool CQs still in use, kept
  sb_.record("teardown_clean", clean && pool_after == 0,
             "destroyed " + std::to_string(qps_.size()) + " QPs and " +
                 std::to_string(pool_before) + " pool CQs; " + std::to_string(pool_after) +
                 " pool CQ(s) left");
}

bool Workload::destroy_qp(Qp& q) {
  if (!q.bq) return true;
  if (unlocked([&] { return q.bq->destroy(); })) return false;
  q.bq.reset();
  return true;
}

}  // namespace irdma_sim::testbench
