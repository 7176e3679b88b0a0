// Host memory as the device reaches it over PCIe: sparse (only allocated DMA regions
// exist), a TLM-2.0 target with DMI. Accesses outside every region fail with an address
// error instead of touching anything, so a device bug shows up as an error, not a crash.
//
// Memory costs what is touched, as an OS gives it: one reservation of address space at the
// start (not committed), a region's pages zero-filled by the kernel on first touch and
// given back after the region is freed, in batches (one madvise, and one TLB flush, per run
// of freed regions rather than per region). IOVAs mirror the reservation's offsets; a
// region's lookup is a page-table walk, whatever the number of regions.
#pragma once

#include <array>
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "model/device/dmi_terms.h"
#include "model/platform/foreign_memory.h"

namespace irdma_sim::platform {

// Device writes held on their way to host memory until the host looks (PcieLink's posted
// writes, when the link lands them so): the host CPU lands those that have arrived
// whenever it resumes, and a CPU spinning on memory wakes when the next one arrives.
class PostedWrites {
 public:
  // Lands every held write that has arrived by the kernel's time.
  virtual void land_due_writes() = 0;
  // When the next held write to land arrives (absolute), if any is held.
  virtual std::optional<sc_core::sc_time> next_arrival() const = 0;

 protected:
  ~PostedWrites() = default;
};

// Its DMI grants come with terms (device/dmi_terms.h) so that a direct write still wakes a
// CPU waiting for one.
class HostMemory : public sc_core::sc_module, private device::DmiTerms {
 public:
  tlm_utils::simple_target_socket<HostMemory> socket;

  // `capacity`: the most bytes mapped at once (the DMA memory the host can give).
  // `iova_space`: the address space reserved for IOVAs (0: 64 times the capacity, at least
  // 1 GiB); a freed region's IOVAs are not handed out again until it has all been used.
  // Throws std::runtime_error when the OS refuses the reservation.
  HostMemory(sc_core::sc_module_name name, uint64_t capacity, uint64_t iova_space = 0);
  ~HostMemory() override;

  struct Region {
    uint64_t iova;
    uint8_t* cpu;  // null for a foreign region
    size_t size;
    ForeignMemory* foreign = nullptr;  // whose pages these are, when not the host's
    uint64_t foreign_addr = 0;         // the owner's address of the region's first byte
  };
  // Zeroed memory at a fresh address. Returns an empty region if `size` is 0, `align` is
  // not a power of two, or the memory would pass the capacity or the IOVA space (what
  // dma_alloc_coherent's -ENOMEM stands for).
  Region alloc(size_t size, size_t align);
  // Maps the whole pages [addr, addr + size) of `owner` touches at fresh IOVAs, as an IOMMU
  // maps a pinned user range (addr's byte is at the region's iova + addr % 4096); the
  // device's accesses there are the owner's reads and writes, never direct. They count
  // against the IOVA space, not the capacity (the owner's memory is not the host's).
  // Returns an empty region when the IOVA space has no room.
  Region map_foreign(ForeignMemory& owner, uint64_t addr, size_t size);
  // Unmaps the region at `iova`; returns false if there is none. Its pages go back to the
  // OS once kReleaseBatch bytes of freed regions are waiting, or before its IOVAs are reused.
  bool free(uint64_t iova);
  // The CPU pointer for [iova, iova + len), or null if that range is not mapped here (a
  // foreign region's bytes are its owner's).
  uint8_t* cpu_ptr(uint64_t iova, size_t len);

  // Sleeps the calling thread until the device next writes host memory (woken in the delta
  // after the write, or as a held write arrives: what a CPU spinning on memory can notice)
  // or `timeout` passes. Writes notify only while a thread sleeps here: an event nobody
  // waits for still costs the scheduler a delta cycle.
  void wait_for_write(const sc_core::sc_time& timeout);

  // Writes held until the host looks (null: every write lands as it arrives).
  void hold_posted_writes(PostedWrites* writes) { posted_ = writes; }
  // Where a host CPU resumes (or code outside the simulation looks): every held write that
  // has arrived is there to see.
  void land_posted_writes() {
    if (posted_) posted_->land_due_writes();
  }
  // A held write arrives at `at`: a CPU spinning on memory wakes then to see it.
  void posted_write_arrives(const sc_core::sc_time& at) {
    if (watchers_) written_.notify(at - sc_core::sc_time_stamp());
  }
  uint64_t mapped_bytes() const { return mapped_bytes_; }
  uint64_t foreign_bytes() const { return foreign_bytes_; }
  uint64_t access_errors() const { return access_errors_; }

 private:
  static constexpr unsigned kPageShift = 12;
  static constexpr unsigned kChunkPages = 512;  // one page-table chunk covers 2 MiB
  using Chunk = std::array<uint32_t, kChunkPages>;  // region slot per page, 0: none

  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  bool get_direct_mem_ptr(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi);
  bool read(uint64_t, uint32_t, sc_core::sc_time&) override { return true; }
  void written(uint64_t, uint32_t, sc_core::sc_time&) override { wake_watchers(); }
  void wake_watchers() {
    if (watchers_) written_.notify(sc_core::SC_ZERO_TIME);
  }
  unsigned int transport_dbg(tlm::tlm_generic_payload& trans);
  const Region* find(uint64_t iova, size_t len) const;
  // Where `bytes` (page-rounded, a guard page after) aligned to `align` fit, or ~0.
  uint64_t place(uint64_t bytes, uint64_t align);
  // Gives the pages of freed regions back to the OS: touched again, they read zero.
  void release_freed_pages();
  void set_pages(uint64_t iova, uint64_t bytes, uint32_t slot);
  // Takes a slot for `r`, its pages and its place in by_iova_.
  const Region& insert(const Region& r);

  sc_core::sc_event written_;
  unsigned watchers_ = 0;
  PostedWrites* posted_ = nullptr;
  uint8_t* arena_ = nullptr;  // the reservation; IOVA kIovaBase + n is arena_[n]
  uint64_t arena_bytes_ = 0;
  uint64_t next_offset_ = 0;  // the bump pointer; past the end, gaps are searched
  std::map<uint64_t, uint32_t> by_iova_;  // region start -> slot, for free() and gaps
  std::vector<Region> slots_{Region{}};   // slot 0 is no region
  std::vector<uint32_t> free_slots_;
  std::vector<std::unique_ptr<Chunk>> page_table_;  // by 2 MiB chunk of the arena
  // Freed regions whose pages are still resident: offset in the arena, page-rounded bytes.
  static constexpr uint64_t kReleaseBatch = 64ull << 20;
  std::vector<std::pair<uint64_t, uint64_t>> freed_;
  uint64_t freed_bytes_ = 0;
  uint64_t mapped_bytes_ = 0;
  uint64_t foreign_bytes_ = 0;
  uint64_t capacity_;
  uint64_t access_errors_ = 0;
};

}  // namespace irdma_sim::platform
