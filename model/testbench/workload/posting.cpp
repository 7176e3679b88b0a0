// The posting thread: its loop, sends batched per doorbell, receives replenished, and
// when a completion wakes it.

#include <algorithm>

#include "model/testbench/host.h"
#include "model/testbench/workload/bookkeeping.h"
#include "model/testbench/workload/payload.h"

namespace irdma_sim::testbench {

using namespace ibcore;

namespace {

// On the host's clock (dev.hw().exec): simulated time, or wall time on silicon.
constexpr uint64_t kWaitSliceNs = 100'000;  // the posting thread's longest sleep

}  // namespace

// The posting side: completions arrive through interrupts, on the pool CQs' poll context
// (softirq or workqueue workers), which call the workload's done callbacks; this thread
// posts what fits and sleeps until a completion wakes it. Called with lock_ held.
void Workload::traffic() {
  const uint64_t start = dev_.hw().exec.now_ns();
  const uint64_t stop = sc_.traffic.stop_after_ns;
  const uint64_t stall = sc_.traffic.stall_timeout_ns ? sc_.traffic.stall_timeout_ns : host_.stall_timeout_ns();
  uint64_t last_progress = start, seen_completions = 0;
  started_ = last_progress_ = std::chrono::steady_clock::now();
  while (!finished()) {
    if (control_.stop && control_.stop()) {
      interrupted_ = true;
      interrupted_at_ps_ = host_.now_ps();
      stop_traffic();
      return;
    }
    if (control_.progress) report_progress();
    if (stop && dev_.hw().exec.now_ns() - start >= stop) {
      stop_traffic();
      sb_.record("no_stall", true, "stopped after " + std::to_string(stop) + " ns, as the scenario asks");
      return;
    }
    int progress = 0;
    for (unsigned i = next_ready(0); i != kNoQp; i = next_ready(i + 1)) {
      Qp& q = *qps_[i];
      if (q.torn_down) continue;
      if (q.cq_error) {
        progress += tear_down_pair(q);
        continue;
      }
      int did = 0;
      if (q.broken && !q.peer_flushed) did += flush_peer(q);
      did += maybe_resize(q);
      did += post_sends(q);
      if (did) mark_ready(q);  // it may have more to do on the next pass
      progress += did;
    }
    const uint64_t now = dev_.hw().exec.now_ns();
    if (progress || counters_.completions != seen_completions) {
      seen_completions = counters_.completions;
      last_progress = now;
      if (progress) continue;
    }
    if (now - last_progress > stall) {
      sb_.record("no_stall", false, "no completion for " + (stall % 1'000'000 ? std::to_string(stall) + " ns"
                                                                               : std::to_string(stall / 1'000'000) + " ms"));
      return;
    }
    counters_.idle_polls++;
    // Sleep until a completion, until the first QP idling after a burst may post again, or
    // for a slice: a long timeout a completion cuts short would stay in the simulator's
    // timed-event queue until it expires, and thousands of them slow every notification.
    uint64_t wake = now + kWaitSliceNs;
    // Entries are stale once the QP's gap moved on or it has nothing left to post.
    while (!idle_.empty()) {
      const Qp& q = *qps_[idle_.top().second];
      if (q.idle_until_ns == idle_.top().first && q.sends_posted < q.sends_total) break;
      idle_.pop();
    }
    if (!idle_.empty()) wake = std::min(wake, idle_.top().first);
    if (stop) wake = std::min(wake, start + stop);
    unlocked([&] { completed_->wait_for(wake - now); });
  }
  if (stop)
    warnings_.push_back("traffic.stop_after_ns = " + std::to_string(stop) + ": the traffic finished after " +
                        std::to_string(dev_.hw().exec.now_ns() - start) + " ns, before it; nothing was stopped");
  sb_.record("no_stall", true, "traffic finished");
}

void Workload::update_finished(Qp& q) {
  const bool done = q.sends_done == q.sends_total && q.recvs_done == q.recvs_total;
  if (done == q.done) return;
  q.done = done;
  if (done)
    unfinished_--;
  else
    unfinished_++;
}

void Workload::mark_ready(const Qp& q) { ready_.insert(q.index); }

unsigned Workload::next_ready(unsigned from) {
  const uint64_t now = dev_.hw().exec.now_ns();
  while (!idle_.empty() && idle_.top().first <= now) {
    const auto [until, index] = idle_.top();
    idle_.pop();
    if (qps_[index]->idle_until_ns == until) ready_.insert(index);
  }
  return ready_.take_from(from);
}

void Workload::report_progress() {
  const auto now = std::chrono::steady_clock::now();
  if (now - last_progress_ < std::chrono::milliseconds(500)) return;
  last_progress_ = now;
  RunProgress p;
  p.sim_time_ps = host_.now_ps();
  p.completions = counters_.completions;
  for (const auto& q : qps_) {
    p.sends_posted += q->sends_posted;
    p.sends_total += q->sends_total;
  }
  p.wall_s = std::chrono::duration<double>(now - started_).count();
  unlocked([&] { control_.progress(p); });
}

// How many more work requests `q` may post now: its SQ slots hold what is not yet retired,
// and a message goes into window slot seq % sq_depth only once the peer checked the
// WRITE_WITH_IMM that landed there sq_depth messages before.
uint64_t Workload::room(const Qp& q) const {
  const uint64_t depth = q.bq->sq_depth();
  const uint64_t free = depth - (q.sends_posted - q.sends_done);
  const auto& unchecked = q.peer->writes_to_check;
  return unchecked.empty() ? free : std::min(free, unchecked.front() + depth - q.sends_posted);
}

// A doorbell carries a whole batch: a QP posts once that much of it fits, unless fewer
// sends than that are left.
bool Workload::batch_fits(const Qp& q) const {
  const uint64_t left = q.sends_total - q.sends_posted;
  return left && room(q) >= std::min<uint64_t>({sc_.traffic.batch, q.bq->sq_depth(), left});
}

int Workload::post_sends(Qp& q) {
  const TrafficSpec& t = sc_.traffic;
  const BufferedQp& bq = *q.bq;
  if (!batch_fits(q) || dev_.hw().exec.now_ns() < q.idle_until_ns) return 0;
  int posted = 0;
  while (uint32_t(posted) < t.batch && q.sends_posted < q.sends_total && room(q)) {
    const TrafficOp op = (*q.ops)[q.sends_posted % q.ops->size()];
    // A datagram with no receive posted for it is dropped: a UD sender waits for credit,
    // unless the peer's receive queue is in error and none will come.
    const Qp& to = *q.peer;
    if (q.ud && !to.rq_error && to.recvs_posted <= to.recvs_done + to.incoming.size()) break;
    const uint64_t seq = q.sends_posted++;
    const uint32_t slot = uint32_t(seq % bq.sq_depth());
    const bool atomic = op == TrafficOp::fetch_add || op == TrafficOp::cmp_swap;
    const uint32_t len = atomic ? 8 : message_size(t, sc_.seed, q.index, seq);
    const bool fetches = op == TrafficOp::read || op == TrafficOp::read_inv || atomic;
    if (!fetches && t.check_payload) fill_payload(bq.send_slot(slot), len, payload_key(sc_.seed, q.index, seq));
    WrCtx& ctx = q.send_ctx[slot];
    ctx = {{&Workload::on_send_done}, this, &q, next_wr_id_++, slot, seq, op, len};
    ctx.posted_ps = host_.now_ps();

    ib_send_wr wr;
    wr.wr_cqe = &ctx.cqe;
    sge_scratch_.push_back(bq.send_sge(slot, len));
    wr.num_sge = 1;
    // Every signal_every-th WR is signaled, and so is one that fills the SQ or ends the
    // run: only a signaled completion retires the unsignaled WRs before it.
    const bool signaled = (seq + 1) % t.signal_every == 0 || q.sends_posted == q.sends_total ||
                          q.sends_posted - q.sends_done == bq.sq_depth();
    wr.send_flags = signaled ? IB_SEND_SIGNALED : 0;
    ctx.signaled = signaled;
    ExpectedCompletion done, msg;
    describe(q, seq, op, ctx, wr, sge_scratch_.back(), done, msg);
    if (consumes_receive(op)) {
      if (t.solicited_every && seq % t.solicited_every == t.solicited_every - 1)
        wr.send_flags |= IB_SEND_SOLICITED;
      sb_.expect_message(q.peer->index, msg);
      if (!q.peer->rq_error) {
        q.peer->incoming.push_back({seq, op, len});
        if (op == TrafficOp::write_imm) q.peer->writes_to_check.push_back(seq);
      }
    }
    done.seq = seq;
    done.signaled = signaled;
    sb_.expect_send(q.index, done);
    posted++;
    const bool burst_ends = t.burst && q.sends_posted % t.burst == 0;
    if (burst_ends) {
      q.idle_until_ns = dev_.hw().exec.now_ns() + t.idle_gap_ns;
      if (q.sends_posted < q.sends_total) idle_.emplace(q.idle_until_ns, q.index);
    }
    if (op == TrafficOp::nop) {
      // No verb posts a NOP: the batch so far goes first, then the NOP on its own.
      sge_scratch_.pop_back();
      send_batch(q);
      if (int ret = dev_.post_nop(bq.qp(), wr.wr_id, signaled)) post_failed("post_nop", ret);
    } else {
      wr_scratch_.push_back(wr);
    }
    if (burst_ends) break;
  }
  send_batch(q);
  counters_.sends_posted += uint64_t(posted);
  return posted;
}

// Posts the work requests gathered so far in one post_send (one doorbell).
void Workload::send_batch(Qp& q) {
  std::vector<ib_send_wr>& wrs = wr_scratch_;
  if (wrs.empty()) return;
  for (size_t i = 0; i < wrs.size(); i++) {
    wrs[i].sg_list = &sge_scratch_[i];
    wrs[i].next = i + 1 < wrs.size() ? &wrs[i + 1] : nullptr;
  }
  const ib_send_wr* bad = nullptr;
  if (int ret = dev_.post_send(q.bq->qp(), wrs.data(), &bad)) post_failed("post_send", ret);
  counters_.doorbells++;
  wrs.clear();
  sge_scratch_.clear();
}

void Workload::post_failed(const char* verb, int ret) {
  counters_.post_errors++;
  sb_.record(verb, false, std::string(verb) + " failed, errno " + std::to_string(-ret));
}

int Workload::post_recv(Qp& q) {
  const uint32_t slot = uint32_t(q.recvs_posted % q.bq->rq_depth());
  WrCtx& ctx = q.recv_ctx[slot];
  ctx = {{&Workload::on_recv_done}, this, &q, next_wr_id_++, slot};
  ctx.posted_ps = host_.now_ps();
  const ib_sge sge = q.bq->recv_sge(slot);
  ib_recv_wr wr;
  wr.wr_cqe = &ctx.cqe;
  wr.sg_list = &sge;
  wr.num_sge = 1;
  if (int ret = dev_.post_recv(q.bq->qp(), &wr, nullptr)) {
    post_failed("post_recv", ret);
    return ret;
  }
  sb_.expect_recv(q.index, ctx.wr_id, q.bq->qp());
  q.recvs_posted++;
  counters_.recvs_posted++;
  return 0;
}

// The posting thread is woken only when it has something to do: a batch fits in the QP's
// SQ, the QP broke or needs a resize, a UD peer may have credit, or the run is over. Each
// wake is a context switch.
void Workload::wake_poster(const Qp& q) {
  const TrafficSpec& t = sc_.traffic;
  const bool resize_due = q.own_cq && t.resize_every && q.completions - q.resized_at >= t.resize_every;
  if ((q.bq && batch_fits(q)) || resize_due || q.broken || q.cq_error || q.ud || q.peer->ud || finished())
    completed_->signal();
}

}  // namespace irdma_sim::testbench
