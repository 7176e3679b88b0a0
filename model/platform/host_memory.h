// Host memory as the device reaches it over PCIe: sparse (only allocated DMA regions
// exist), a TLM-2.0 target with DMI. Accesses outside every region fail with an address
// error instead of touching anything, so a device bug shows up as an error, not a crash.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

namespace irdma_sim::platform {

class HostMemory : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<HostMemory> socket;

  // `capacity`: the most bytes mapped at once (the DMA memory the host can give).
  HostMemory(sc_core::sc_module_name name, uint64_t capacity);

  struct Region {
    uint64_t iova;
    uint8_t* cpu;
    size_t size;
  };
  // Zeroed memory at a fresh address (never reused, so stale device addresses fault).
  // Returns an empty region if `size` is 0, `align` is not a power of two, or the memory
  // would pass the capacity (what dma_alloc_coherent's -ENOMEM stands for).
  Region alloc(size_t size, size_t align);
  // Unmaps the region at `iova`; returns false if there is none.
  bool free(uint64_t iova);
  // The CPU pointer for [iova, iova + len), or null if that range is not mapped.
  uint8_t* cpu_ptr(uint64_t iova, size_t len);

  // Sleeps the calling thread until the device next writes host memory (woken in the delta
  // after the write: what a CPU spinning on memory can notice) or `timeout` passes. Writes
  // notify only while a thread sleeps here: an event nobody waits for still costs the
  // scheduler a delta cycle.
  void wait_for_write(const sc_core::sc_time& timeout);
  uint64_t mapped_bytes() const { return mapped_bytes_; }
  uint64_t access_errors() const { return access_errors_; }

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi);
  unsigned int transport_dbg(tlm::tlm_generic_payload& trans);
  const Region* find(uint64_t iova, size_t len);

  sc_core::sc_event written_;
  unsigned watchers_ = 0;
  std::map<uint64_t, Region> regions_;
  // The region last found in each of 256 page slots: a message touches several regions
  // (WQE rings, buffers, CQ and CEQ rings) over and over, each found here in a few loads.
  std::array<const Region*, 256> by_page_{};
  std::map<uint64_t, std::unique_ptr<uint8_t[]>> storage_;
  uint64_t next_iova_ = 0x1'0000'0000ull;
  uint64_t mapped_bytes_ = 0;
  uint64_t capacity_;
  uint64_t access_errors_ = 0;
};

}  // namespace irdma_sim::platform
