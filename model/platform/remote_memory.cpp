#include "model/platform/remote_memory.h"

#include "driver/backends/pci_transport.h"

namespace irdma_sim::platform {

RemoteMemory::RemoteMemory(sc_core::sc_module_name name, VfioUserServer& server)
    : sc_module(name), socket("socket"), server_(server) {
  socket.register_b_transport(this, &RemoteMemory::b_transport);
}

void RemoteMemory::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time&) {
  if (trans.get_byte_enable_ptr() || (!trans.is_read() && !trans.is_write())) {
    trans.set_response_status(tlm::TLM_GENERIC_ERROR_RESPONSE);
    access_errors_++;
    return;
  }
  try {
    if (trans.is_read())
      server_.dma_read(trans.get_address(), trans.get_data_ptr(), trans.get_data_length());
    else
      server_.dma_write(trans.get_address(), trans.get_data_ptr(), trans.get_data_length());
    trans.set_response_status(tlm::TLM_OK_RESPONSE);
  } catch (const pcie::PciTransportError&) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    access_errors_++;
  }
}

}  // namespace irdma_sim::platform
