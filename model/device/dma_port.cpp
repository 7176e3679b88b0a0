#include "model/device/dma_port.h"

namespace irdma_sim::device {

bool DmaPort::transact(tlm::tlm_command cmd, uint64_t addr, void* data, uint32_t len,
                       sc_core::sc_time& delay) {
  if (!config_.bus_master()) {
    errors_++;
    return false;
  }
  trans_.set_command(cmd);
  trans_.set_address(addr);
  trans_.set_data_ptr(static_cast<unsigned char*>(data));
  trans_.set_data_length(len);
  trans_.set_streaming_width(len);
  trans_.set_byte_enable_ptr(nullptr);
  trans_.set_dmi_allowed(false);
  trans_.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  socket_->b_transport(trans_, delay);
  if (!trans_.is_response_ok()) {
    errors_++;
    return false;
  }
  return true;
}

bool DmaPort::read(uint64_t addr, void* dst, uint32_t len) {
  time_.catch_up();
  sc_core::sc_time delay = time_.local();
  const bool ok = transact(tlm::TLM_READ_COMMAND, addr, dst, len, delay);
  time_.set_local(delay);
  return ok;
}

bool DmaPort::write(uint64_t addr, const void* src, uint32_t len) {
  sc_core::sc_time delay = time_.local();
  const bool ok = transact(tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(src), len, delay);
  time_.set_local(delay);
  return ok;
}

bool DmaPort::write_now(uint64_t addr, const void* src, uint32_t len) {
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  return transact(tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(src), len, delay);
}

}  // namespace irdma_sim::device
