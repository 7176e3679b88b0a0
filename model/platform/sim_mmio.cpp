#include "model/platform/sim_mmio.h"

#include "model/device/pci_config.h"

namespace irdma_sim::platform {

SimMmio::SimMmio(sc_core::sc_module_name name, HostMemory* host_memory)
    : sc_module(name), socket("socket"), host_memory_(host_memory) {}

bool SimMmio::access(tlm::tlm_command cmd, unsigned region, uint64_t offset, void* data, unsigned len) {
  trans_.set_command(cmd);
  trans_.set_address(device::region_address(region, offset));
  trans_.set_data_ptr(static_cast<unsigned char*>(data));
  trans_.set_data_length(len);
  trans_.set_streaming_width(len);
  trans_.set_byte_enable_ptr(nullptr);
  trans_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(trans_, delay);
  const bool ok = trans_.is_response_ok();
  if (!ok) errors_++;
  // A read stalls the CPU for its round trip, and so does a configuration write (the link
  // returns its completion time); a posted write retires at once.
  if (host_memory_ && (cmd == tlm::TLM_READ_COMMAND || region == device::kConfigRegion)) {
    sc_core::wait(delay);
    host_memory_->land_posted_writes();
  }
  return ok;
}

SimPciConfig::SimPciConfig(SimMmio& mmio) : mmio_(mmio) {}

uint32_t SimPciConfig::read(uint32_t offset, unsigned len) {
  uint32_t v = ~0u;
  mmio_.access(tlm::TLM_READ_COMMAND, device::kConfigRegion, offset, &v, len);
  return len == 4 ? v : v & ((1u << (8 * len)) - 1);
}

void SimPciConfig::write(uint32_t offset, unsigned len, uint32_t value) {
  mmio_.access(tlm::TLM_WRITE_COMMAND, device::kConfigRegion, offset, &value, len);
}

}  // namespace irdma_sim::platform
