#include "model/device/ceq_engine.h"

#include <algorithm>

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

constexpr uint32_t kMinCeqEntries = 8;
constexpr uint32_t kMaxCeqEntries = 262143;  // max_hw_ceq_size

unsigned msix_index(uint32_t ceqctl) { return unsigned(get(ceqctl, GLINT_CEQCTL_MSIX_INDX)); }
bool cause_enabled(uint32_t ceqctl) { return bit(ceqctl, GLINT_CEQCTL_CAUSE_ENA); }

}  // namespace

CeqEngine::CeqEngine(const DeviceConfig& cfg, DmaPort& dma, EngineTime& time,
                     trace::TraceLog& trace, MsixVectors& vectors)
    : cfg_(cfg), dma_(dma), time_(time), trace_(trace), vectors_(vectors), ceqctl_(cfg.num_ceqs) {}

uint16_t CeqEngine::create(uint32_t ceq_id, uint64_t base, uint32_t entries) {
  if (ceq_id >= cfg_.num_ceqs) return CQP_MINOR_BAD_ID;
  if (ceqs_.count(ceq_id)) return CQP_MINOR_ID_IN_USE;
  if (entries < kMinCeqEntries || entries > kMaxCeqEntries) return CQP_MINOR_BAD_SIZE;
  Ceq& q = ceqs_[ceq_id];
  q.base = base;
  q.entries = entries;
  return 0;
}

uint16_t CeqEngine::destroy(uint32_t ceq_id) {
  return ceqs_.erase(ceq_id) ? 0 : CQP_MINOR_NO_SUCH_OBJECT;
}

bool CeqEngine::notify(uint32_t ceq_id, uint64_t cq_ctx) {
  auto it = ceqs_.find(ceq_id);
  if (it == ceqs_.end()) {
    counters_.ceqes_dropped++;
    return false;
  }
  Ceq& q = it->second;
  if (q.unacked == q.entries) {  // full of CEQEs not yet acknowledged: never overwritten
    counters_.ceqes_dropped++;
    trace_.coverage().hit(trace::Cover::ceq, {2});
    trace_.event(time_.now_ps(), "ceqe_dropped").num("ceq", ceq_id).addr("ctx", cq_ctx);
    return false;
  }
  const uint64_t ceqe = put(CEQE_CQCTX, cq_ctx) | put(CEQE_VALID, q.tail.polarity);
  if (!dma_.write(q.base + uint64_t(q.tail.idx) * 8, &ceqe, 8, {DmaPurpose::ceqe_write, ceq_id})) {  // refused, or bus mastering off
    counters_.ceqes_dropped++;
    return false;
  }
  trace_.coverage().hit(trace::Cover::ceq, {0});
  if (q.tail.advance(q.entries)) trace_.coverage().hit(trace::Cover::ceq, {1});
  q.unacked++;
  counters_.ceqes++;
  trace_.event(time_.now_ps(), "ceqe").num("ceq", ceq_id).addr("ctx", cq_ctx);
  if (cause_enabled(ceqctl_[ceq_id])) vectors_.event(msix_index(ceqctl_[ceq_id]));
  return true;
}

void CeqEngine::ack(uint32_t ceq_id, bool acked) {
  auto it = ceqs_.find(ceq_id);
  if (it == ceqs_.end() || it->second.unacked == 0) return;
  it->second.unacked--;
  counters_.cqacks += acked;
}

bool CeqEngine::unacked(unsigned vector) const {
  for (const auto& [id, q] : ceqs_)
    if (q.unacked && cause_enabled(ceqctl_[id]) && msix_index(ceqctl_[id]) == vector)
      return true;
  return false;
}

void CeqEngine::reset() {
  ceqs_.clear();
  std::fill(ceqctl_.begin(), ceqctl_.end(), 0);
}

void CeqEngine::write_ceqctl(uint32_t ceq_id, uint32_t value) {
  if (ceq_id < ceqctl_.size()) ceqctl_[ceq_id] = value;
}

uint32_t CeqEngine::read_ceqctl(uint32_t ceq_id) const {
  return ceq_id < ceqctl_.size() ? ceqctl_[ceq_id] : 0;
}

}  // namespace irdma_sim::device
