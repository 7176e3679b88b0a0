#include "model/platform/host_memory.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "driver/hal/align.h"

namespace irdma_sim::platform {
namespace {

using hal::round_up;

constexpr uint64_t kPage = 4096;
constexpr uint64_t kIovaBase = 0x1'0000'0000ull;  // clear of the null-ish low 4 GiB
constexpr uint64_t kNoRoom = ~0ull;

uint64_t iova_space_for(uint64_t capacity, uint64_t asked) {
  if (asked) return round_up(asked, 2ull << 20);
  const uint64_t wanted = capacity > (1ull << 40) / 16 ? 1ull << 40 : capacity * 16;
  return round_up(std::max<uint64_t>(wanted, 1ull << 30), 2ull << 20);
}

bool covers(const HostMemory::Region& r, uint64_t iova, size_t len) {
  return len != 0 && iova >= r.iova && iova - r.iova <= r.size && len <= r.size - (iova - r.iova);
}

}  // namespace

HostMemory::HostMemory(sc_core::sc_module_name name, uint64_t capacity, uint64_t iova_space)
    : sc_module(name), socket("socket"), arena_bytes_(iova_space_for(capacity, iova_space)), capacity_(capacity) {
  // One mapping, never split: a mapping per region would run into vm.max_map_count with a
  // few thousand queues. Small pages, so that a touched byte costs a page, not 2 MiB.
  void* p = ::mmap(nullptr, arena_bytes_, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (p == MAP_FAILED)
    throw std::runtime_error("host memory: cannot reserve " + std::to_string(arena_bytes_ >> 20) +
                             " MiB of address space (" + std::strerror(errno) +
                             "): is vm.overcommit_memory 2? Lower config.host.memory_mb");
  arena_ = static_cast<uint8_t*>(p);
  ::madvise(arena_, arena_bytes_, MADV_NOHUGEPAGE);
  page_table_.resize(arena_bytes_ / (kChunkPages * kPage));
  socket.register_b_transport(this, &HostMemory::b_transport);
  socket.register_get_direct_mem_ptr(this, &HostMemory::get_direct_mem_ptr);
  socket.register_transport_dbg(this, &HostMemory::transport_dbg);
}

HostMemory::~HostMemory() { ::munmap(arena_, arena_bytes_); }

// A region takes its pages and one guard page after them, which turns overruns into address
// errors. Fresh IOVAs first; once the space is used up, the first gap that fits.
uint64_t HostMemory::place(uint64_t bytes, uint64_t align) {
  const uint64_t end = kIovaBase + arena_bytes_;
  uint64_t at = round_up(kIovaBase + next_offset_, align);
  if (at <= end && end - at >= bytes + kPage) return at;
  release_freed_pages();  // a gap may hold them: what is placed there must read zero
  at = round_up(kIovaBase, align);
  for (const auto& [start, slot] : by_iova_) {
    if (at < start && start - at >= bytes + kPage) return at;
    at = round_up(start + round_up(slots_[slot].size, kPage) + kPage, align);
  }
  return at <= end && end - at >= bytes + kPage ? at : kNoRoom;
}

void HostMemory::set_pages(uint64_t iova, uint64_t bytes, uint32_t slot) {
  for (uint64_t page = (iova - kIovaBase) / kPage, last = page + bytes / kPage; page < last; page++) {
    std::unique_ptr<Chunk>& chunk = page_table_[page / kChunkPages];
    if (!chunk) chunk = std::make_unique<Chunk>();  // zeroed: no region
    (*chunk)[page % kChunkPages] = slot;
  }
}

const HostMemory::Region& HostMemory::insert(const Region& r) {
  const uint64_t bytes = round_up(r.size, kPage);
  next_offset_ = std::max(next_offset_, r.iova - kIovaBase + bytes + kPage);
  uint32_t slot;
  if (free_slots_.empty()) {
    slot = uint32_t(slots_.size());
    slots_.push_back({});
  } else {
    slot = free_slots_.back();
    free_slots_.pop_back();
  }
  slots_[slot] = r;
  by_iova_.emplace(r.iova, slot);
  set_pages(r.iova, bytes, slot);
  return slots_[slot];
}

HostMemory::Region HostMemory::alloc(size_t size, size_t align) {
  if (size == 0 || align == 0 || (align & (align - 1)) || size > capacity_ - mapped_bytes_) return {};
  const uint64_t iova = place(round_up(size, kPage), std::max<uint64_t>(align, kPage));
  if (iova == kNoRoom) return {};
  mapped_bytes_ += size;
  // Zero: never touched, or given back on free.
  return insert({iova, arena_ + (iova - kIovaBase), size});
}

HostMemory::Region HostMemory::map_foreign(ForeignMemory& owner, uint64_t addr, size_t size) {
  const uint64_t first = addr & ~(kPage - 1);
  if (size == 0 || addr + size < addr) return {};
  const uint64_t bytes = round_up(addr + size - first, kPage);
  const uint64_t iova = place(bytes, kPage);
  if (iova == kNoRoom) return {};
  foreign_bytes_ += bytes;
  return insert({iova, nullptr, bytes, &owner, first});
}

bool HostMemory::free(uint64_t iova) {
  auto it = by_iova_.find(iova);
  if (it == by_iova_.end()) return false;
  const uint32_t slot = it->second;
  const Region r = slots_[slot];
  const uint64_t bytes = round_up(r.size, kPage);
  set_pages(iova, bytes, 0);
  by_iova_.erase(it);
  slots_[slot] = {};
  free_slots_.push_back(slot);
  (r.foreign ? foreign_bytes_ : mapped_bytes_) -= r.size;
  socket->invalidate_direct_mem_ptr(r.iova, r.iova + r.size - 1);
  if (r.cpu) {
    freed_.emplace_back(iova - kIovaBase, bytes);
    if ((freed_bytes_ += bytes) >= kReleaseBatch) release_freed_pages();
  }
  return true;
}

// A run of freed regions with no live one between goes back in one call: the guard pages
// and alignment gaps inside it were never touched.
void HostMemory::release_freed_pages() {
  std::sort(freed_.begin(), freed_.end());
  for (size_t i = 0; i < freed_.size();) {
    const uint64_t start = freed_[i].first;
    uint64_t end = start + freed_[i].second;
    const auto live = by_iova_.lower_bound(kIovaBase + end);
    const uint64_t barrier = live == by_iova_.end() ? arena_bytes_ : live->first - kIovaBase;
    for (++i; i < freed_.size() && freed_[i].first < barrier; ++i) end = freed_[i].first + freed_[i].second;
    // Refused (it should not be, on our own private mapping): the pages stay, zeroed here.
    if (::madvise(arena_ + start, end - start, MADV_DONTNEED) != 0) std::memset(arena_ + start, 0, end - start);
  }
  freed_.clear();
  freed_bytes_ = 0;
}

const HostMemory::Region* HostMemory::find(uint64_t iova, size_t len) const {
  if (iova < kIovaBase || iova - kIovaBase >= arena_bytes_) return nullptr;
  const uint64_t page = (iova - kIovaBase) / kPage;
  const Chunk* chunk = page_table_[page / kChunkPages].get();
  const uint32_t slot = chunk ? (*chunk)[page % kChunkPages] : 0;
  if (!slot || !covers(slots_[slot], iova, len)) return nullptr;
  return &slots_[slot];
}

void HostMemory::wait_for_write(const sc_core::sc_time& timeout) {
  land_posted_writes();
  if (posted_)
    if (const std::optional<sc_core::sc_time> at = posted_->next_arrival())
      written_.notify(*at - sc_core::sc_time_stamp());
  watchers_++;
  sc_core::wait(timeout, written_);
  watchers_--;
  land_posted_writes();
}

uint8_t* HostMemory::cpu_ptr(uint64_t iova, size_t len) {
  const Region* r = find(iova, len);
  return r && r->cpu ? r->cpu + (iova - r->iova) : nullptr;
}

unsigned int HostMemory::transport_dbg(tlm::tlm_generic_payload& trans) {
  const uint64_t iova = trans.get_address();
  const unsigned len = trans.get_data_length();
  const Region* r = find(iova, len);
  if (!r) return 0;
  if (r->foreign) {
    const uint64_t addr = r->foreign_addr + (iova - r->iova);
    const bool ok = trans.is_read() ? r->foreign->read(addr, trans.get_data_ptr(), len)
                                    : r->foreign->write(addr, trans.get_data_ptr(), len);
    return ok ? len : 0;
  }
  uint8_t* p = r->cpu + (iova - r->iova);
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
  if (trans.is_write()) wake_watchers();
  trans.set_dmi_allowed(find(trans.get_address(), 1)->cpu != nullptr);
  trans.set_response_status(tlm::TLM_OK_RESPONSE);
}

bool HostMemory::get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi) {
  const Region* found = find(trans.get_address(), 1);
  if (!found || !found->cpu) return false;
  const Region& r = *found;
  dmi.set_dmi_ptr(r.cpu);
  dmi.set_start_address(r.iova);
  dmi.set_end_address(r.iova + r.size - 1);
  dmi.allow_read_write();
  dmi.set_read_latency(sc_core::SC_ZERO_TIME);
  dmi.set_write_latency(sc_core::SC_ZERO_TIME);
  if (auto* ext = trans.get_extension<device::DmiTermsExtension>()) ext->terms = this;
  return true;
}

}  // namespace irdma_sim::platform
