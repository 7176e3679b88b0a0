// What a device access is for, carried beside the TLP for the test bench alone (no PCIe
// field holds it): the link's faults strike the accesses of one purpose only, and tell the
// bench which queue they struck so that it can expect what follows.
#pragma once

#include <cstdint>

#include <tlm>

namespace irdma_sim::device {

struct DmaPurpose {
  enum Kind : uint8_t {
    other,       // contexts, CQP rings, flushes: never struck
    wqe_fetch,   // SQ WQEs on their way to execution: `object` is the QP, `request` the one at the head
    cq_arm,      // a CQ's shadow area, read for its arm: `object` is the CQ (never the CCQ)
    cqe_write,   // a CQE (either half): `object` is the CQ (never the CCQ)
    ceqe_write,  // `object` is the CEQ
    aeqe_write,
    payload_write,  // a message's data landing in host memory: `object` is the QP whose completion reports it
  };
  Kind kind = other;
  uint32_t object = 0;
  uint64_t request = 0;  // wqe_fetch: the QP's request number (NOPs not counted) at the head
};

struct DmaPurposeExtension : tlm::tlm_extension<DmaPurposeExtension> {
  DmaPurpose purpose;

  tlm::tlm_extension_base* clone() const override { return new DmaPurposeExtension(*this); }
  void copy_from(const tlm::tlm_extension_base& other) override {
    purpose = static_cast<const DmaPurposeExtension&>(other).purpose;
  }
};

}  // namespace irdma_sim::device
