// How a device's DMA meets memory that host CPUs write and poll at the same time: the one
// rule every transport that shares host memory with a device in another process keeps (the
// vfio-user server's shared maps, the client answering DMA messages).
//
// Every descriptor the two sides hand each other keeps its valid (polarity) bit in the
// qword at offset 24 of a 32-byte-aligned block: a WQE's header (SQ, RQ, CQP), a CQE's,
// each half of a 64-byte CQE. A 16-byte AEQE keeps it in its second qword, the last of
// its write; an 8-byte CEQE, shadow area or arm qword is a single qword. The writer stores
// that qword last with release ordering; the reader loads it first with acquire ordering
// and the rest after, so a reader that sees a valid bit of this pass sees the body written
// before it. Silicon gets this from a read being one request answered coherently per cache
// line; a memcpy gives no order at all, and a device reading the body before the header
// took a stale body under a new header.
#pragma once

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <cstring>

namespace pcie::coherent_dma {

constexpr size_t kBlockBytes = 32;
constexpr size_t kValidQwordOffset = 24;

// Visits the byte offsets of the qwords of [addr, addr + size) block by block, each block's
// valid qword first or last. Only for 8-aligned accesses whose size is a multiple of 8
// (descriptors always are).
template <class Visit>
void in_block_order(uint64_t addr, size_t size, bool valid_first, Visit&& visit) {
  for (size_t off = 0; off < size;) {
    const size_t in_block = size_t(addr + off) % kBlockBytes;
    const size_t block_end = std::min(size, off + (kBlockBytes - in_block));
    const size_t valid = off + (kValidQwordOffset - in_block);
    const bool holds_valid = in_block <= kValidQwordOffset && valid < block_end;
    if (holds_valid && valid_first) visit(valid);
    for (size_t q = off; q < block_end; q += 8)
      if (!holds_valid || q != valid) visit(q);
    if (holds_valid && !valid_first) visit(valid);
    off = block_end;
  }
}

// The order a device reads them in: each block's valid qword first.
template <class Visit>
void in_read_order(uint64_t addr, size_t size, Visit&& visit) {
  in_block_order(addr, size, true, visit);
}

// The order a device writes them in: each block's valid qword last.
template <class Visit>
void in_write_order(uint64_t addr, size_t size, Visit&& visit) {
  in_block_order(addr, size, false, visit);
}

inline bool qword_access(const void* host, size_t size) {
  return size % 8 == 0 && reinterpret_cast<uintptr_t>(host) % 8 == 0;
}

// The device reads `size` bytes of host memory at `host` into `out` (blocks fall alike on
// bus and CPU addresses: a mapping starts on a page).
inline void device_read(const uint8_t* host, uint8_t* out, size_t size) {
  if (!qword_access(host, size)) {  // a payload: no descriptor is unaligned
    std::memcpy(out, host, size);
    return;
  }
  in_read_order(reinterpret_cast<uintptr_t>(host), size, [&](size_t q) {
    const uint64_t v = __atomic_load_n(reinterpret_cast<const uint64_t*>(host + q), __ATOMIC_ACQUIRE);
    std::memcpy(out + q, &v, 8);
  });
}

// The device writes `size` bytes from `in` to host memory at `host`.
inline void device_write(uint8_t* host, const uint8_t* in, size_t size) {
  if (!qword_access(host, size)) {
    std::memcpy(host, in, size);
    return;
  }
  in_write_order(reinterpret_cast<uintptr_t>(host), size, [&](size_t q) {
    uint64_t v;
    std::memcpy(&v, in + q, 8);
    __atomic_store_n(reinterpret_cast<uint64_t*>(host + q), v, __ATOMIC_RELEASE);
  });
}

}  // namespace pcie::coherent_dma
