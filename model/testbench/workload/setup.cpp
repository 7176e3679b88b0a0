// Setup: the QPs' CQs (from the pool or their own), the QP pairs connected, memory keys,
// the scenario's faults registered, the first receives posted.

#include <algorithm>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <mutex>

#include "driver/core/cq.h"
#include "driver/core/cq_pool.h"
#include "driver/irdma/irdmadv.h"
#include "model/testbench/host.h"
#include "model/testbench/workload/bookkeeping.h"
#include "model/testbench/workload/payload.h"

namespace irdma_sim::testbench {

using namespace ibcore;

namespace {

// How many of the first `n` work requests of the op cycle are `kind`.
template <typename Kind>
uint64_t count_ops(const std::vector<TrafficOp>& ops, uint64_t n, Kind kind) {
  uint64_t per_cycle = 0, rest = 0;
  for (size_t i = 0; i < ops.size(); i++) {
    per_cycle += kind(ops[i]);
    if (i < n % ops.size()) rest += kind(ops[i]);
  }
  return n / ops.size() * per_cycle + rest;
}

}  // namespace

size_t Workload::pool_size() {
  const std::lock_guard<std::mutex> held(dev_.cq_pools_lock);
  size_t n = 0;
  for (const auto& pool : dev_.cq_pools) n += pool.size();
  return n;
}

bool Workload::setup() {
  dev_.pool_policy = sc_.pool_policy;
  {
    // Sized for every QP before the first exists: the device may be given up (and each QP
    // made so far marked ready) while the rest are being made.
    const std::lock_guard<hal::Lock> held(*lock_);
    ready_.resize(unsigned(2 * sc_.pairs.size()));
  }
  if (sc_.traffic.resize_every) {
    std::vector<std::string> pooled;
    for (const QpPairSpec& pair : sc_.pairs)
      if (!pair.own_cqs) pooled.push_back(pair.name);
    if (!pooled.empty()) {
      std::string names;
      for (size_t i = 0; i < std::min<size_t>(pooled.size(), 4); i++) names += (i ? ", " : "") + pooled[i];
      if (pooled.size() > 4) names += " and " + std::to_string(pooled.size() - 4) + " more";
      warnings_.push_back("traffic.resize_every: " + std::to_string(pooled.size()) + " pair(s) have pool CQs, which "
                          "cannot be resized (" + names + "): only pairs with cq: own resize");
    }
  }
  if (!sc_.traffic.check_payload) {
    sb_.payloads_unchecked();
    warnings_.push_back("traffic.check_payload is false: no payload was generated or compared; every completion "
                        "was still matched against its work request");
  }
  const uint32_t slot_bytes = BufferedQp::slot_bytes_for(sc_.traffic.max_bytes);
  for (const QpPairSpec& pair : sc_.pairs) {
    for (int side = 0; side < 2; side++) {
      auto q = std::make_unique<Qp>();
      q->index = unsigned(qps_.size());
      q->ops = &sc_.ops_of(size_t(&pair - sc_.pairs.data()));
      q->sends_total = sc_.traffic.sends_per_qp;
      q->nr_cqe = pair.cq_entries ? pair.cq_entries : pair.sq_depth + pair.rq_depth;
      // A CQ sized for less than its QP's work may overflow: the QP's side stops answering
      // its peer, which may then report what a faulted QP's peer does, before the CQ error
      // reaches the workload and the pair is torn down.
      if (q->nr_cqe < pair.sq_depth + pair.rq_depth) sb_.expect_peer_fault(q->index ^ 1);
      const ib_poll_context ctx = sc_.poll_ctx_of(size_t(&pair - sc_.pairs.data()));
      q->own_cq = pair.own_cqs;
      const size_t pool_cqs = q->own_cq ? 0 : pool_size();
      const int vector = pair.vector_of(side);
      auto cq = q->own_cq ? ib_alloc_cq(&dev_, nullptr, int(q->nr_cqe), unsigned(std::max(vector, 0)), ctx)
                          : ib_cq_pool_get(&dev_, q->nr_cqe, vector, ctx);
      if (!q->own_cq && !cq.is_err())
        coverage_.hit(trace::Cover::pool_get, {dev_.pool_policy == cq_pool_policy::least_used ? 0u : 1u,
                                               vector < 0 ? 0u : 1u, pool_size() > pool_cqs ? 1u : 0u});
      if (cq.is_err()) {
        if (out_of(cq.err(), "config.device.max_cq", sc_.config.device.max_cq,
                   pair.name + ": allocating its CQs"))
          return false;
        sb_.record("setup", false,
                   pair.name + ": allocating a CQ of " + std::to_string(q->nr_cqe) + " entries (" +
                       (pair.cq_entries ? "cq_entries" : "sq_depth + rq_depth") + ") on vector " +
                       std::to_string(vector) + " failed, errno " + std::to_string(-cq.err()) +
                       "; the device caps CQs at config.device.max_cqe = " +
                       std::to_string(sc_.config.device.max_cqe));
        return false;
      }
      q->cq = cq.get();
      irdma::irdmadv_cq dv;
      irdma::irdmadv_query_cq(q->cq, &dv);
      q->cq_num = dv.cq_num;
      if (std::find(cqs_.begin(), cqs_.end(), q->cq) == cqs_.end()) cqs_.push_back(q->cq);
      q->cq->event_handler = [this](const ib_event& ev) { cq_error(ev); };
      int err = 0;
      q->ud = pair.ud;
      q->qkey = 0x1000 + unsigned(qps_.size());
      q->bq.reset(BufferedQp::create(dev_, q->cq, pair.sq_depth, pair.rq_depth, slot_bytes, err,
                                     pair.ud ? IB_QPT_UD : IB_QPT_RC));
      if (q->bq) q->qp_num = q->bq->qp_num();
      q->send_ctx.resize(pair.sq_depth);
      q->atomic_values.assign(pair.sq_depth, 0);  // DMA memory starts zeroed
      q->recv_ctx.resize(pair.rq_depth);
      qps_.push_back(std::move(q));
      if (err) {
        if (!out_of(err, "config.device.max_qp", sc_.config.device.max_qp, pair.name + ": creating its QPs"))
          sb_.record("setup", false, pair.name + ": creating a QP failed, errno " + std::to_string(-err));
        return false;
      }
    }
    Qp& a = *qps_[qps_.size() - 2];
    Qp& b = *qps_[qps_.size() - 1];
    a.peer = &b;
    b.peer = &a;
    const bool connected = pair.ud ? !dev_.connect_qp(a.bq->qp(), 0, a.qkey) &&
                                         !dev_.connect_qp(b.bq->qp(), 0, b.qkey)
                                   : !dev_.connect_qp(a.bq->qp(), b.bq->qp_num()) &&
                                         !dev_.connect_qp(b.bq->qp(), a.bq->qp_num());
    if (!connected) {
      sb_.record("setup", false, pair.name + ": connecting the QP pair failed");
      return false;
    }
  }
  for (auto& q : qps_)
    if (!make_keys(*q)) return false;
  inject_faults();
  listen_for_struck_accesses();
  counters_.pool_cqs = 0;
  for (const auto& pool : dev_.cq_pools) counters_.pool_cqs += pool.size();
  for (auto& q : qps_) {
    q->recvs_total = count_ops(*q->peer->ops, q->peer->sends_total, consumes_receive);
    const BufferedQp& bq = *q->bq;
    for (uint32_t slot = 0; slot < bq.sq_depth() && sc_.traffic.check_payload; slot++)  // the second half serves READs
      fill_payload(bq.window_slot(bq.sq_depth() + slot), bq.slot_bytes(),
                   read_source_key(sc_.seed, q->index, slot));
  }
  const std::lock_guard<hal::Lock> held(*lock_);
  unfinished_ = qps_.size();
  for (auto& q : qps_) {
    update_finished(*q);
    mark_ready(*q);
    const uint64_t initial = std::min<uint64_t>(q->bq->rq_depth(), q->recvs_total);
    for (uint64_t i = 0; i < initial; i++)
      if (post_recv(*q)) return false;
  }
  sb_.record("setup", true,
             std::to_string(qps_.size()) + " QPs on " + std::to_string(cqs_.size()) +
                 " pool CQ(s); the pool holds " + std::to_string(counters_.pool_cqs));
  return true;
}

bool Workload::out_of(int err, const char* key, uint64_t limit, const std::string& what) {
  if (err == -ENOSPC) {
    limit_error_ = std::string(key) + " = " + std::to_string(limit) + " is used up: " + what +
                   " failed with ENOSPC (every id the device has is taken)";
  } else if (err == -ENOMEM) {
    limit_error_ = "config.host.memory_mb = " + std::to_string(sc_.config.host.memory_mb) +
                   " is used up: " + what + " failed with ENOMEM (the driver's rings and the workload's buffers need more)";
  } else {
    return false;
  }
  return true;
}

// Registers the scenario's faults with the device and the expectation model. A fault by
// rate fails each request with that probability: the first that fails is drawn from the
// seed (geometrically), and may lie beyond the QP's last request.
void Workload::inject_faults() {
  for (const FaultSpec& f : sc_.faults) {
    Qp& q = *qps_[2 * f.pair + f.side];
    uint64_t request = uint64_t(f.request);
    if (f.request < 0) {
      const double u = double(splitmix64(sc_.seed ^ 0xFA17 ^ (uint64_t(q.index) << 32)) >> 11) * 0x1p-53;
      const double n = f.rate >= 1   ? 0
                       : f.rate <= 0 ? HUGE_VAL
                                     : std::floor(std::log1p(-u) / std::log1p(-f.rate));
      request = n < double(q.sends_total) ? uint64_t(n) : q.sends_total;
    }
    counters_.faults.push_back({q.bq->qp_num(), request, f.flush_code});
    if (request >= q.sends_total) {
      char rate[32];
      std::snprintf(rate, sizeof rate, "%g", f.rate);
      warnings_.push_back("the fault on pair " + sc_.pairs[f.pair].name + " side " + (f.side ? "b" : "a") + " at rate " +
                          rate + " drew none of its QP's " + std::to_string(q.sends_total) +
                          " requests: nothing was injected");
      continue;
    }
    if (!host_.backdoor()->inject_fault(q.bq->qp_num(), request, f.flush_code)) {
      sb_.record("setup", false, "the device refused the fault on QP " + std::to_string(q.bq->qp_num()) +
                                     " at request " + std::to_string(request));
      continue;
    }
    sb_.expect_fault(q.index, request, f.flush_code);
    sb_.expect_peer_fault(q.peer->index);
  }
}

void Workload::listen_for_struck_accesses() {
  const platform::LinkFaultConfig& f = sc_.config.link.faults;
  // A refused CQE half matters only in a 64-byte slot, whose extended half may be read
  // stale (scoreboard.h, expect_stale_extended).
  const bool stale_ext = f.cqe_write_error_rate && sc_.config.device.cqe_64byte;
  if ((!f.wqe_read_error_rate && !f.payload_write_poison_rate && !stale_ext) || !host_.backdoor()) return;
  host_.backdoor()->on_struck_access([this](const backends::DeviceBackdoor::StruckAccess& access) {
    const std::lock_guard<std::mutex> held(struck_lock_);
    struck_.push_back(access);
  });
}

void Workload::expect_struck() {
  using StruckAccess = backends::DeviceBackdoor::StruckAccess;
  std::vector<StruckAccess> struck;
  {
    const std::lock_guard<std::mutex> held(struck_lock_);
    if (struck_.empty()) return;
    struck.swap(struck_);
  }
  for (const StruckAccess& access : struck)
    for (auto& q : qps_)
      if (access.kind == StruckAccess::cqe_refused) {
        if (q->cq_num == access.cq) sb_.expect_stale_extended(q->index);
      } else if (q->bq && q->bq->qp_num() == access.qp) {
        if (access.kind == StruckAccess::payload_poisoned) {
          // An RDMA WRITE with immediate's data is checked at both ends.
          sb_.expect_poisoned_payload(q->index);
          sb_.expect_poisoned_payload(q->peer->index);
          continue;
        }
        sb_.expect_fetch_fault(q->index, access.request, irdma::FLUSH_FATAL_ERR);
        sb_.expect_peer_fault(q->peer->index);
      }
}

}  // namespace irdma_sim::testbench
