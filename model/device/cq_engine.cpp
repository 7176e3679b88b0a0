#include "model/device/cq_engine.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/device/regs.h"

namespace irdma_sim::device {

using namespace regs;

CqEngine::CqEngine(DmaPort& dma, EngineTime& time, CeqEngine& ceqs, AeqEngine& aeq, trace::TraceLog& trace,
                   const CqWriterFactory& make_writer)
    : time_(time), ceqs_(ceqs), aeq_(aeq), trace_(trace), port_(dma, time),
      writer_(make_writer(port_)) {}

CqRing CqEngine::ring_of(const CqContext& cq) {
  CqRing ring;
  ring.base = cq.base;
  ring.shadow = cq.shadow;
  ring.size = cq.size;
  ring.shadow_read_threshold = cq.shadow_read_threshold;
  ring.check_overflow = cq.check_overflow;
  ring.ceqe_enable = cq.ceqe_mask && cq.ceq_id_valid;
  ring.cqe_64byte = cq.cqe_64byte;
  return ring;
}

void CqEngine::add(const CqContext& cq) {
  cqs_[cq.id] = cq;
  writer_->create(cq.id, ring_of(cq));
}

bool CqEngine::remove(uint32_t cq_id) {
  auto it = cqs_.find(cq_id);
  if (it == cqs_.end()) return false;
  for (; it->second.events_unacked; it->second.events_unacked--) ceqs_.ack(it->second.ceq_id, false);
  cqs_.erase(it);
  writer_->destroy(cq_id);
  return true;
}

void CqEngine::reset() {
  std::vector<uint32_t> ids;
  for (const auto& [id, cq] : cqs_) ids.push_back(id);
  std::sort(ids.begin(), ids.end());  // the writer's block sees the same order every run
  for (const uint32_t id : ids) writer_->destroy(id);
  cqs_.clear();
}

void CqEngine::resize(uint32_t cq_id, uint64_t base, uint32_t size, uint32_t shadow_read_threshold,
                      bool check_overflow, bool ceqe_mask) {
  CqContext& cq = cqs_.at(cq_id);
  trace_.coverage().hit(trace::Cover::cq_resize, {size > cq.size ? 0u : size < cq.size ? 1u : 2u});
  cq.base = base;
  cq.size = size;
  cq.shadow_read_threshold = shadow_read_threshold;
  cq.check_overflow = check_overflow;
  cq.ceqe_mask = ceqe_mask;
  writer_->resize(cq_id, ring_of(cq));
  counters_.resizes++;
  trace_.event(time_.now_ps(), "cq_resize").num("cq", cq_id).num("size", size).addr("base", base);
}

void CqEngine::ack(uint32_t cq_id) {
  auto it = cqs_.find(cq_id);
  if (it == cqs_.end() || !it->second.events_unacked) return;
  it->second.events_unacked--;
  ceqs_.ack(it->second.ceq_id);
}

bool CqEngine::arm(uint32_t cq_id) {
  auto it = cqs_.find(cq_id);
  if (it == cqs_.end()) return false;
  if (it->second.catastrophic) return true;  // taken; nothing comes of it
  if (cq_id != 0) port_.purpose = {DmaPurpose::cq_arm, cq_id};
  const CqArmOutcome arm = writer_->arm(cq_id);
  port_.purpose = {};
  if (arm.status == CqArmOutcome::no_cq)
    throw std::logic_error("CQ engine: its writer has no CQ " + std::to_string(cq_id) + ", which the engine holds");
  // A function the host stopped from mastering the bus is quiesced, not in error.
  if (arm.status == CqArmOutcome::failed && cq_id != 0 && port_.mastering()) {
    catastrophe(it->second);
    return true;
  }
  if (arm.status != CqArmOutcome::armed && arm.status != CqArmOutcome::stale) return false;
  const unsigned kind = arm.solicited_only ? 1 : 0;
  if (arm.status == CqArmOutcome::stale) {
    counters_.stale_arms++;
    trace_.coverage().hit(trace::Cover::cq_arm, {kind, 3});
    return true;
  }
  counters_.arms++;
  if (arm.arms) trace_.coverage().hit(trace::Cover::cq_arm, {kind, arm.event ? 1u : 0u});
  if (arm.event) raise_event(it->second, arm.ceqe);
  return true;
}

void CqEngine::raise_event(CqContext& cq, bool ceqe) {
  if (!ceqe || !ceqs_.notify(cq.ceq_id, cq.ctx)) return;
  counters_.events++;
  cq.events_unacked++;
}

const CqContext* CqEngine::find(uint32_t cq_id) const {
  auto it = cqs_.find(cq_id);
  return it == cqs_.end() ? nullptr : &it->second;
}

// cqe_write's bins: where a CQE's last half fell, and cq_ring's wrap.
void CqEngine::cover_write(const CqContext& cq, uint32_t slot, bool extended, bool wrapped) {
  const bool split = extended && !cq.cqe_64byte && slot == cq.size - 1;
  const uint32_t last = extended && !cq.cqe_64byte ? (slot + 1) % cq.size : slot;
  trace_.coverage().hit(trace::Cover::cqe_write,
                        {cq.cqe_64byte ? 1u : 0u, extended ? 1u : 0u, split ? 2u : last == cq.size - 1 ? 1u : 0u});
  if (wrapped) trace_.coverage().hit(trace::Cover::cq_ring, {0});
}

// A completion CHKOVERFLOW kept out: the first makes the CQ's error AEQE.
void CqEngine::overflowed(const CqContext& cq, const CqeFields& fields, bool began) {
  counters_.cqes_overflowed++;
  trace_.coverage().hit(trace::Cover::cq_ring, {2});
  trace_.event(time_.now_ps(), "cqe_overflow")
      .num("cq", cq.id)
      .num("qp", fields.qp_id)
      .num("sq", fields.sq)
      .num("wqe_idx", fields.wqe_idx)
      .num("dropped", 1);
  if (!began) return;
  counters_.overflows++;
  aeq_.post({cq.ctx, cq.id, AE_CQ_OPERATION_ERROR, AE_SOURCE_CQ});
}

// The arm's shadow area read failed: the device cannot know what the driver consumed or
// asked for, so the CQ is in error for good and the driver is told by AEQE.
void CqEngine::catastrophe(CqContext& cq) {
  cq.catastrophic = true;
  counters_.catastrophic++;
  trace_.event(time_.now_ps(), "cq_catastrophic").num("cq", cq.id);
  aeq_.post({cq.ctx, cq.id, AE_LCE_CQ_CATASTROPHIC, AE_SOURCE_CQ});
}

bool CqEngine::post(uint32_t cq_id, const CqeFields& fields) {
  auto it = cqs_.find(cq_id);
  if (it == cqs_.end()) {
    counters_.cqes_dropped++;
    trace_.event(time_.now_ps(), "cqe_dropped").num("cq", cq_id);
    return false;
  }
  CqContext& cq = it->second;
  if (cq.catastrophic) {
    counters_.cqes_overflowed++;
    trace_.event(time_.now_ps(), "cqe_dropped").num("cq", cq_id).num("qp", fields.qp_id);
    return false;
  }
  if (cq_id != 0) port_.purpose = {DmaPurpose::cqe_write, cq_id};
  const CqWriteOutcome out = writer_->write(cq_id, fields);
  port_.purpose = {};
  if (out.status == CqWriteOutcome::no_cq)
    throw std::logic_error("CQ engine: its writer has no CQ " + std::to_string(cq_id) + ", which the engine holds");
  if (out.head_read) {
    counters_.head_reads++;
    trace_.coverage().hit(trace::Cover::cq_ring, {1});
  }
  if (out.status == CqWriteOutcome::overflowed) {
    overflowed(cq, fields, out.overflow_began);
    return false;
  }
  if (out.write_error) {  // refused by the host, or not sent: no CQE landed for it
    counters_.cqes_refused++;
    trace_.event(time_.now_ps(), "cqe_refused").num("cq", cq_id).num("qp", fields.qp_id);
    return false;
  }
  if (fields.extended) counters_.extended_cqes++;
  counters_.cqes_written++;
  if (cq_id == 0) counters_.ccq_cqes++;
  cover_write(cq, out.slot, fields.extended, out.wrapped);
  if (out.event) {
    trace_.coverage().hit(trace::Cover::cq_arm, {out.solicited_only ? 1u : 0u, 2});
    raise_event(cq, out.ceqe);
  }

  if (trace_.enabled()) {
    uint8_t bytes[64];
    std::memcpy(bytes, out.main.data(), 32);
    if (fields.extended) std::memcpy(bytes + 32, out.ext.data(), 32);
    const unsigned stride = cq.cqe_64byte ? 64 : 32;
    trace_.event(time_.now_ps(), "cqe")
        .num("cq", cq_id)
        .num("slot", out.slot)
        .addr("addr", cq.base + uint64_t(out.slot) * stride)
        .hex("bytes", bytes, fields.extended ? 64 : 32);
  }
  return true;
}

}  // namespace irdma_sim::device
