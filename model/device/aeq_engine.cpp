#include "model/device/aeq_engine.h"

#include <algorithm>

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

namespace {

constexpr uint32_t kMinAeqEntries = 16;
constexpr uint32_t kMaxAeqEntries = 1u << 19;

}  // namespace

AeqEngine::AeqEngine(DmaPort& dma, EngineTime& time, trace::TraceLog& trace, MsixVectors& vectors)
    : dma_(dma), time_(time), trace_(trace), vectors_(vectors) {}

uint16_t AeqEngine::create(uint64_t base, uint32_t entries) {
  if (exists_) return CQP_MINOR_ID_IN_USE;
  if (entries < kMinAeqEntries || entries > kMaxAeqEntries) return CQP_MINOR_BAD_SIZE;
  exists_ = true;
  base_ = base;
  entries_ = entries;
  tail_ = {};
  outstanding_ = 0;
  return 0;
}

uint16_t AeqEngine::destroy() {
  if (!exists_) return CQP_MINOR_NO_SUCH_OBJECT;
  exists_ = false;
  return 0;
}

void AeqEngine::post(const AsyncEvent& ae) {
  if (!exists_ || outstanding_ == entries_) {
    counters_.dropped++;
    trace_.event(time_.now_ps(), "aeqe_dropped").num("code", ae.code).num("id", ae.object_id);
    return;
  }
  const uint64_t aeqe[2] = {ae.ctx, put(AEQE_QPCQID_LOW, ae.object_id) |
                                        put(AEQE_AECODE, ae.code) |
                                        put(AEQE_QPCQID_HI, ae.object_id >> AEQE_QPCQID_LOW.width()) |
                                        put(AEQE_AESRC, ae.source) | put(AEQE_VALID, tail_.polarity)};
  if (!dma_.write(base_ + uint64_t(tail_.idx) * 16, aeqe, 16, {DmaPurpose::aeqe_write})) {  // refused, or bus mastering off
    counters_.dropped++;
    return;
  }
  tail_.advance(entries_);
  outstanding_++;
  counters_.aeqes++;
  trace_.event(time_.now_ps(), "aeqe").num("code", ae.code).num("source", ae.source).num("id", ae.object_id);
  if (bit(aeqctl_, PFINT_AEQCTL_CAUSE_ENA)) vectors_.event(unsigned(get(aeqctl_, PFINT_AEQCTL_MSIX_INDX)));
}

void AeqEngine::consumed(uint32_t n) { outstanding_ -= std::min<uint64_t>(n, outstanding_); }

bool AeqEngine::unconsumed(unsigned vector) const {
  return exists_ && outstanding_ && bit(aeqctl_, PFINT_AEQCTL_CAUSE_ENA) &&
         get(aeqctl_, PFINT_AEQCTL_MSIX_INDX) == vector;
}

}  // namespace irdma_sim::device
