#include "model/platform/sim_mmio.h"

namespace irdma_sim::platform {

SimMmio::SimMmio(sc_core::sc_module_name name) : sc_module(name), socket("socket") {}

void SimMmio::access(tlm::tlm_command cmd, uint64_t offset, void* data, unsigned len) {
  trans_.set_command(cmd);
  trans_.set_address(offset);
  trans_.set_data_ptr(static_cast<unsigned char*>(data));
  trans_.set_data_length(len);
  trans_.set_streaming_width(len);
  trans_.set_byte_enable_ptr(nullptr);
  trans_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  socket->b_transport(trans_, delay);
  if (!trans_.is_response_ok()) errors_++;
  // A read stalls the CPU for its round trip; a posted write retires at once.
  if (cmd == tlm::TLM_READ_COMMAND) sc_core::wait(delay);
}

uint32_t SimMmio::read32(uint64_t offset) {
  uint32_t v = ~0u;  // what a failed PCIe read returns
  access(tlm::TLM_READ_COMMAND, offset, &v, 4);
  return v;
}

uint64_t SimMmio::read64(uint64_t offset) {
  uint64_t v = ~0ull;
  access(tlm::TLM_READ_COMMAND, offset, &v, 8);
  return v;
}

}  // namespace irdma_sim::platform
