#include "model/device/dma_port.h"

#include <cstring>

namespace irdma_sim::device {

DmaPort::DmaPort(tlm::tlm_initiator_socket<>& socket, EngineTime& time, const PciConfigSpace& config)
    : socket_(socket), time_(time), config_(config), grants_(size_t(1) << kGrantBits) {
  dmi_request_.set_extension(new DmiTermsExtension);
  purpose_ = new DmaPurposeExtension;
  trans_.set_extension(purpose_);
}

bool DmaPort::direct(tlm::tlm_command cmd, uint64_t addr, void* data, uint32_t len, sc_core::sc_time& delay) {
  const Grant& g = grant_for(addr);
  if (len == 0 || addr < g.start || addr > g.end || len - 1 > g.end - addr) return false;
  uint8_t* at = g.ptr + (addr - g.start);
  if (cmd == tlm::TLM_READ_COMMAND) {
    if (!g.read || !g.terms->read(addr, len, delay)) return false;
    std::memcpy(data, at, len);
  } else {
    if (!g.write) return false;
    std::memcpy(at, data, len);
    g.terms->written(addr, len, delay);
  }
  direct_++;
  return true;
}

bool DmaPort::transact(tlm::tlm_generic_payload& trans, tlm::tlm_command cmd, uint64_t addr, void* data,
                       uint32_t len, sc_core::sc_time& delay) {
  if (!config_.bus_master()) {
    blocked_++;
    return false;
  }
  if (direct(cmd, addr, data, len, delay)) return true;
  trans.set_command(cmd);
  trans.set_address(addr);
  trans.set_data_ptr(static_cast<unsigned char*>(data));
  trans.set_data_length(len);
  trans.set_streaming_width(len);
  trans.set_byte_enable_ptr(nullptr);
  trans.set_dmi_allowed(false);
  trans.set_response_status(tlm::TLM_INCOMPLETE_RESPONSE);
  socket_->b_transport(trans, delay);
  if (!trans.is_response_ok()) {
    errors_++;
    aborted_ += trans.get_response_status() == tlm::TLM_GENERIC_ERROR_RESPONSE;
    return false;
  }
  if (trans.is_dmi_allowed()) request_dmi(cmd, addr);
  return true;
}

void DmaPort::request_dmi(tlm::tlm_command cmd, uint64_t addr) {
  Grant& g = grant_for(addr);
  if (addr >= g.start && addr <= g.end) return;  // granted; this access was the terms' to decline
  DmiTermsExtension* ext = dmi_request_.get_extension<DmiTermsExtension>();
  ext->terms = nullptr;
  dmi_request_.set_command(cmd);
  dmi_request_.set_address(addr);
  tlm::tlm_dmi dmi;
  // Without terms a pointer would skip the link's timing and trace: not taken.
  if (!socket_->get_direct_mem_ptr(dmi_request_, dmi) || !ext->terms) return;
  if (g.start > g.end) granted_.push_back(slot_of(addr));
  g = {dmi.get_start_address(), dmi.get_end_address(), dmi.get_dmi_ptr(), ext->terms,
                     dmi.is_read_allowed(), dmi.is_write_allowed()};
}

void DmaPort::invalidate_dmi(uint64_t start, uint64_t end) {
  for (size_t i = 0; i < granted_.size();) {
    Grant& g = grants_[granted_[i]];
    if (g.start <= end && start <= g.end) {
      g = Grant{};
      granted_[i] = granted_.back();
      granted_.pop_back();
    } else {
      i++;
    }
  }
}

bool DmaPort::read(uint64_t addr, void* dst, uint32_t len, const DmaPurpose& purpose) {
  time_.catch_up();
  sc_core::sc_time delay = time_.local();
  purpose_->purpose = purpose;
  const bool ok = transact(trans_, tlm::TLM_READ_COMMAND, addr, dst, len, delay);
  purpose_->purpose = {};
  time_.set_local(delay);
  return ok;
}

bool DmaPort::write(uint64_t addr, const void* src, uint32_t len, const DmaPurpose& purpose) {
  sc_core::sc_time delay = time_.local();
  purpose_->purpose = purpose;
  const bool ok = transact(trans_, tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(src), len, delay);
  purpose_->purpose = {};
  time_.set_local(delay);
  return ok;
}

bool DmaPort::write_now(uint64_t addr, const void* src, uint32_t len) {
  sc_core::sc_time delay = sc_core::SC_ZERO_TIME;
  return transact(now_trans_, tlm::TLM_WRITE_COMMAND, addr, const_cast<void*>(src), len, delay);
}

}  // namespace irdma_sim::device
