// The host CPU's accesses to the device's regions on SystemC: TLM transactions through the
// PCIe link, addressed as the endpoint's regions (pci_config.h). SimBar is hal::Bar on one
// BAR, SimPciConfig hal::PciConfig on the configuration space. A read stalls the CPU for
// its round trip; a posted memory write costs the CPU nothing and reaches the device a link
// latency later; a configuration write is not posted, so the CPU waits for it too.
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>

#include "driver/hal/bar.h"
#include "driver/hal/pci_config.h"
#include "model/platform/host_memory.h"

namespace irdma_sim::platform {

class SimMmio final : public sc_core::sc_module {
 public:
  tlm_utils::simple_initiator_socket<SimMmio> socket;

  // `host_memory`: the memory of the simulated host whose CPU makes the accesses and waits
  // out their round trips (resuming, it sees the device's writes that arrived meanwhile);
  // null for a host whose CPUs run in real time elsewhere (a served device's client).
  SimMmio(sc_core::sc_module_name name, HostMemory* host_memory);

  // One access; false when the device refused it.
  bool access(tlm::tlm_command cmd, unsigned region, uint64_t offset, void* data, unsigned len);
  uint64_t errors() const { return errors_; }

 private:
  HostMemory* host_memory_;
  tlm::tlm_generic_payload trans_;
  uint64_t errors_ = 0;
};

class SimBar final : public hal::Bar {
 public:
  // `size`: what the platform's enumeration found the BAR to be.
  SimBar(SimMmio& mmio, unsigned index, uint64_t size) : mmio_(mmio), index_(index), size_(size) {}
  void write32(uint64_t offset, uint32_t value) override { mmio_.access(tlm::TLM_WRITE_COMMAND, index_, offset, &value, 4); }
  void write64(uint64_t offset, uint64_t value) override { mmio_.access(tlm::TLM_WRITE_COMMAND, index_, offset, &value, 8); }
  uint32_t read32(uint64_t offset) override {
    uint32_t v = ~0u;  // what a failed PCIe read returns
    mmio_.access(tlm::TLM_READ_COMMAND, index_, offset, &v, 4);
    return v;
  }
  uint64_t read64(uint64_t offset) override {
    uint64_t v = ~0ull;
    mmio_.access(tlm::TLM_READ_COMMAND, index_, offset, &v, 8);
    return v;
  }
  uint64_t size() const override { return size_; }

 private:
  SimMmio& mmio_;
  unsigned index_;
  uint64_t size_;
};

class SimPciConfig final : public hal::PciConfig {
 public:
  explicit SimPciConfig(SimMmio& mmio);
  uint32_t read(uint32_t offset, unsigned len) override;
  void write(uint32_t offset, unsigned len, uint32_t value) override;

 private:
  SimMmio& mmio_;
};

}  // namespace irdma_sim::platform
