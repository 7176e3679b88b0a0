// Aligned ranges out of [base, base + size) (or several such): first fit, and a freed range merges with its
// free neighbours so that the space does not splinter. Used for the IOVA window and inside
// each DMA block. Not thread-safe: its owner locks.
#pragma once

#include <cstdint>
#include <map>
#include <optional>

namespace pcie {

class RangeAllocator {
 public:
  RangeAllocator() = default;  // no space until free() adds some
  RangeAllocator(uint64_t base, uint64_t size);

  // The start of `size` (> 0) free bytes aligned to `align` (a power of two), or nothing
  // when no free range holds them.
  std::optional<uint64_t> allocate(uint64_t size, uint64_t align);
  // Gives back exactly a range allocate() returned, or adds a range the space lacked.
  void free(uint64_t start, uint64_t size);

 private:
  std::map<uint64_t, uint64_t> free_;  // start -> size, never adjacent to one another
};

}  // namespace pcie
