#include "model/platform/host_memory.h"

#include <cstring>

namespace irdma_sim::platform {
namespace {

constexpr uint64_t kPage = 4096;

}  // namespace

HostMemory::HostMemory(sc_core::sc_module_name name, uint64_t capacity)
    : sc_module(name), socket("socket"), capacity_(capacity) {
  socket.register_b_transport(this, &HostMemory::b_transport);
  socket.register_get_direct_mem_ptr(this, &HostMemory::get_direct_mem_ptr);
  socket.register_transport_dbg(this, &HostMemory::transport_dbg);
}

HostMemory::Region HostMemory::alloc(size_t size, size_t align) {
  if (size == 0 || align == 0 || (align & (align - 1)) || size > capacity_ - mapped_bytes_) return {};
  const uint64_t a = align < kPage ? kPage : align;
  const uint64_t iova = (next_iova_ + a - 1) & ~(a - 1);
  // A one-page hole after every region turns overruns into address errors.
  next_iova_ = iova + ((size + kPage - 1) & ~(kPage - 1)) + kPage;
  auto bytes = std::make_unique<uint8_t[]>(size);  // value-initialised: zeroed
  Region r{iova, bytes.get(), size};
  regions_.emplace(iova, r);
  storage_.emplace(iova, std::move(bytes));
  mapped_bytes_ += size;
  return r;
}

bool HostMemory::free(uint64_t iova) {
  auto it = regions_.find(iova);
  if (it == regions_.end()) return false;
  const Region r = it->second;
  for (const Region*& r : by_page_)
    if (r == &it->second) r = nullptr;
  regions_.erase(it);
  storage_.erase(iova);
  mapped_bytes_ -= r.size;
  socket->invalidate_direct_mem_ptr(r.iova, r.iova + r.size - 1);
  return true;
}

namespace {

bool covers(const HostMemory::Region& r, uint64_t iova, size_t len) {
  return len != 0 && iova >= r.iova && iova - r.iova <= r.size && len <= r.size - (iova - r.iova);
}

}  // namespace

const HostMemory::Region* HostMemory::find(uint64_t iova, size_t len) {
  const Region*& slot = by_page_[(iova / kPage) % by_page_.size()];
  if (slot && covers(*slot, iova, len)) return slot;
  auto it = regions_.upper_bound(iova);
  if (it == regions_.begin()) return nullptr;
  --it;
  if (!covers(it->second, iova, len)) return nullptr;
  slot = &it->second;
  return slot;
}

void HostMemory::wait_for_write(const sc_core::sc_time& timeout) {
  watchers_++;
  sc_core::wait(timeout, written_);
  watchers_--;
}

uint8_t* HostMemory::cpu_ptr(uint64_t iova, size_t len) {
  const Region* r = find(iova, len);
  return r ? r->cpu + (iova - r->iova) : nullptr;
}

unsigned int HostMemory::transport_dbg(tlm::tlm_generic_payload& trans) {
  uint8_t* p = cpu_ptr(trans.get_address(), trans.get_data_length());
  if (!p) return 0;
  if (trans.is_read())
    std::memcpy(trans.get_data_ptr(), p, trans.get_data_length());
  else if (trans.is_write())
    std::memcpy(p, trans.get_data_ptr(), trans.get_data_length());
  return trans.get_data_length();
}

void HostMemory::b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time&) {
  if (trans.get_byte_enable_ptr()) {
    trans.set_response_status(tlm::TLM_BYTE_ENABLE_ERROR_RESPONSE);
    access_errors_++;
    return;
  }
  if (!trans.is_read() && !trans.is_write()) {
    trans.set_response_status(tlm::TLM_COMMAND_ERROR_RESPONSE);
    access_errors_++;
    return;
  }
  if (transport_dbg(trans) != trans.get_data_length() || trans.get_data_length() == 0) {
    trans.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE);
    access_errors_++;
    return;
  }
  if (trans.is_write() && watchers_) written_.notify(sc_core::SC_ZERO_TIME);
  trans.set_dmi_allowed(true);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

bool HostMemory::get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi) {
  const Region* found = find(trans.get_address(), 1);
  if (!found) return false;
  const Region& r = *found;
  dmi.set_dmi_ptr(r.cpu);
  dmi.set_start_address(r.iova);
  dmi.set_end_address(r.iova + r.size - 1);
  dmi.allow_read_write();
  dmi.set_read_latency(sc_core::SC_ZERO_TIME);
  dmi.set_write_latency(sc_core::SC_ZERO_TIME);
  return true;
}

}  // namespace irdma_sim::platform
