// The terms on which an interconnect with timing grants DMI, beyond TLM-2.0's fixed
// latencies: every component on the path of a get_direct_mem_ptr request that takes part in
// the direct accesses puts itself in this extension (the nearest to the initiator last, and
// it calls on to the ones behind it). An initiator that accesses memory directly tells the
// terms of each access, so that the access costs the simulated time and leaves the trace a
// transported one would (the link's latency, serialisation and log; a waiting CPU's wake).
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm>

namespace irdma_sim::device {

class DmiTerms {
 public:
  // Before the initiator copies [addr, addr + len) out: `delay` (past the kernel's time)
  // becomes the time its data is back. False, with nothing done, when this read must be
  // transported instead (it would have to wait, or be ordered behind something).
  virtual bool read(uint64_t addr, uint32_t len, sc_core::sc_time& delay) = 0;
  // After the initiator copied [addr, addr + len) in, posted at `delay`.
  virtual void written(uint64_t addr, uint32_t len, sc_core::sc_time& delay) = 0;

 protected:
  ~DmiTerms() = default;
};

struct DmiTermsExtension : tlm::tlm_extension<DmiTermsExtension> {
  DmiTerms* terms = nullptr;

  tlm::tlm_extension_base* clone() const override { return new DmiTermsExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    terms = static_cast<const DmiTermsExtension&>(other).terms;
  }
};

}  // namespace irdma_sim::device
