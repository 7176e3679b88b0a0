// Memory keys as the device keeps them: regions and windows allocated through the CQP
// (ALLOC_STAG / DEALLOC_STAG), regions registered by FAST_REG_NSMR with a page list,
// windows bound over a region by BIND_MW, either invalidated by INV_STAG, by an RDMA READ
// with invalidate or by an incoming SEND_WITH_INV. An RDMA request names an STag and a
// virtual address: the table checks key, rights and bounds and translates the address
// through the region's pages. STag 0 is the kernel's global key: all of memory, unchecked.
#pragma once

#include <cstdint>
#include <unordered_map>
#include <vector>

namespace irdma_sim::device {

// STAGRIGHTS (irdma's IRDMA_ACCESS_FLAGS_*, 5 bits).
enum StagRight : uint8_t {
  RIGHT_LOCAL_READ = 0x01,
  RIGHT_LOCAL_WRITE = 0x02,
  RIGHT_REMOTE_READ = 0x04,
  RIGHT_REMOTE_WRITE = 0x08,
  RIGHT_BIND_WINDOW = 0x10,
};

enum class RemoteAccess { read, write, atomic };

// A run of physically contiguous bytes.
struct Extent {
  uint64_t addr;
  uint64_t len;
};

// What a registration or a bind asks for.
struct StagGrant {
  uint32_t stag = 0;
  uint64_t va = 0;
  uint64_t len = 0;
  uint8_t rights = 0;
  bool atomics = false;
};

// The AE ids of memory-key failures (spec G.5's table: each flushes FLUSH_PROT_ERR locally).
inline constexpr uint16_t AE_AMP_UNALLOCATED_STAG = 0x102;
inline constexpr uint16_t AE_AMP_INVALID_STAG = 0x103;
inline constexpr uint16_t AE_AMP_BAD_PD = 0x105;
inline constexpr uint16_t AE_AMP_BAD_STAG_KEY = 0x106;
inline constexpr uint16_t AE_AMP_BOUNDS_VIOLATION = 0x108;
inline constexpr uint16_t AE_AMP_RIGHTS_VIOLATION = 0x109;

class StagTable {
 public:
  static constexpr uint64_t kPage = 4096;

  explicit StagTable(uint32_t max_index) : max_index_(max_index) {}

  // CQP commands; return a CQP minor code or 0.
  uint16_t alloc(uint32_t index, bool window, bool type1, uint64_t max_len, uint32_t pd);
  uint16_t dealloc(uint32_t index, bool window);

  // SQ operations; return a flush code (spec G.5) or 0.
  // `pages` lists the region's pages; `contiguous`: it holds only the first of a physically
  // contiguous run (REG_MR's, however long, costs no list).
  uint16_t fast_register(const StagGrant& g, std::vector<uint64_t> pages, bool contiguous = false);
  uint16_t bind(const StagGrant& window, uint32_t region_stag, bool type1);
  // An STag the device never allocated is ignored: the kernel may name any key.
  uint16_t invalidate(uint32_t stag);

  // Checks a remote access of [va, va + len) under `stag` by a QP of PD `pd` and appends
  // the physical extents to `out`. Returns 0 or FLUSH_REM_ACCESS_ERR.
  uint16_t translate(uint32_t stag, uint64_t va, uint64_t len, RemoteAccess access, uint32_t pd,
                     std::vector<Extent>& out) const;
  // The same for a local fragment (an SGE's lkey) of a QP of PD `pd`; the device writes into
  // it when `write`. Returns 0 or the AE (AE_AMP_*) that refuses it.
  uint16_t translate_local(uint32_t stag, uint64_t va, uint64_t len, bool write, uint32_t pd,
                           std::vector<Extent>& out) const;
  // Pages a registration of `len` bytes at `va` spans.
  // Function level reset: no STag allocated (registrations_ keeps counting: an index reused
  // after it is a new registration too).
  void reset() { entries_.clear(); }
  static uint64_t pages_spanned(uint64_t va, uint64_t len) {
    return len ? ((va % kPage) + len + kPage - 1) / kPage : 0;
  }

 private:
  struct Entry {
    bool window = false;
    bool type1 = false;
    bool valid = false;
    uint8_t key = 0;
    uint8_t rights = 0;
    bool atomics = false;
    uint64_t va = 0, len = 0;
    uint64_t max_len = 0;          // region: what its allocation may map
    uint32_t pd = 0;
    std::vector<uint64_t> pages;   // region: page addresses (the first only, when contiguous)
    bool contiguous = false;
    uint64_t generation = 0;       // region: one per registration
    uint32_t parent = 0;           // window: its region's index
    uint64_t parent_generation = 0;
  };
  // Appends the physical extents of [va, va + len) of `region`, contiguous ones merged.
  static void append_pages(const Entry& region, uint64_t va, uint64_t len, std::vector<Extent>& out);
  const Entry* usable(uint32_t stag, RemoteAccess access) const;

  uint32_t max_index_;
  uint64_t registrations_ = 0;  // numbers registrations table-wide: an index reused is new
  std::unordered_map<uint32_t, Entry> entries_;  // by STag index (stag >> 8)
};

}  // namespace irdma_sim::device
