// hal::Bar on SystemC: the host CPU's MMIO accesses to BAR0, as TLM transactions through
// the PCIe link. A read stalls the CPU for its round trip; a posted write costs the CPU
// nothing and reaches the device a link latency later.
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "driver/hal/bar.h"

namespace irdma_sim::platform {

class SimMmio final : public sc_core::sc_module, public hal::Bar {
 public:
  tlm_utils::simple_initiator_socket<SimMmio> socket;

  explicit SimMmio(sc_core::sc_module_name name);

  void write32(uint64_t offset, uint32_t value) override { access(tlm::TLM_WRITE_COMMAND, offset, &value, 4); }
  void write64(uint64_t offset, uint64_t value) override { access(tlm::TLM_WRITE_COMMAND, offset, &value, 8); }
  uint32_t read32(uint64_t offset) override;
  uint64_t read64(uint64_t offset) override;
  uint64_t errors() const { return errors_; }

 private:
  void access(tlm::tlm_command cmd, uint64_t offset, void* data, unsigned len);
  tlm::tlm_generic_payload trans_;
  uint64_t errors_ = 0;
};

}  // namespace irdma_sim::platform
