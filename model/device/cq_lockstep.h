// Lock-step checking of a CQ writer under test (the Verilated one) against a TlmCqWriter:
// both take every request; the twin reads the very bytes the writer under test read, and
// the two must agree on every access they make (reads, and the address and bytes of every
// write, in order) and on every outcome (written or dropped, the slot, the head re-read,
// the event and its CEQE). The first disagreement throws CqLockstepError with both views.
//
// It also keeps the timing correlation: per request, the cycles the writer under test took
// against the twin's stage costs, by kind of request.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <memory>
#include <stdexcept>
#include <string>
#include <vector>

#include "model/device/cq_writer.h"

namespace irdma_sim::device {

class CqLockstepError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// Cycles per request of one kind: the writer under test's as a histogram, the twin's summed.
struct CqCycleStats {
  static constexpr unsigned kBins = 256;  // the last bin holds kBins - 1 cycles and more
  uint64_t requests = 0;
  uint64_t dut_cycles = 0;
  uint64_t model_cycles = 0;
  uint64_t dut_max = 0;
  std::array<uint64_t, kBins> dut_histogram{};
  void add(uint64_t dut, uint64_t model);
  // The smallest cycle count at or under which `fraction` of the requests fell (kBins - 1
  // standing for that and more).
  uint64_t dut_quantile(double fraction) const;
};

struct CqCorrelation {
  // dropped: CHKOVERFLOW kept the completion out; no_cq: its CQ does not exist.
  enum Kind : unsigned { cqe, extended_cqe, cqe_head_read, dropped, no_cq, arm, context, kKinds };
  static const char* name(Kind k);
  std::array<CqCycleStats, kKinds> kinds;
};

class LockstepCqWriter final : public CqWriter {
 public:
  // `dut_name` names the writer under test in messages ("RTL").
  LockstepCqWriter(CqWriterPort& port, const CqWriterFactory& make_dut, const StageCycles& cycles,
                   std::string dut_name);
  ~LockstepCqWriter() override;

  void create(uint32_t cq, const CqRing& ring) override;
  void resize(uint32_t cq, const CqRing& ring) override;
  void destroy(uint32_t cq) override;
  CqWriteOutcome write(uint32_t cq, const CqeFields& fields) override;
  CqArmOutcome arm(uint32_t cq) override;
  uint64_t last_cycles() const override { return dut_->last_cycles(); }

  const CqCorrelation& correlation() const { return correlation_; }
  uint64_t requests() const { return requests_; }
  CqWriter& dut() { return *dut_; }

  struct Access {
    bool write = false;
    bool ok = false;
    uint64_t addr = 0;
    uint32_t len = 0;
    std::array<uint8_t, 64> bytes{};
  };

 private:
  class RecordingPort;
  class TwinPort;
  void begin();
  // The first access the two made differently, as each side saw it; false when none.
  bool accesses_differ(std::string& dut_view, std::string& twin_view) const;
  // Throws when the accesses differ, naming the request.
  void agree(const char* request, uint32_t cq) const;
  [[noreturn]] void disagree(const std::string& what, const std::string& dut_view,
                             const std::string& twin_view) const;
  void count(CqCorrelation::Kind kind);

  std::unique_ptr<RecordingPort> recording_;
  std::unique_ptr<TwinPort> twin_port_;
  std::unique_ptr<CqWriter> dut_;
  TlmCqWriter twin_;
  std::string dut_name_;
  CqCorrelation correlation_;
  uint64_t requests_ = 0;
};

}  // namespace irdma_sim::device
