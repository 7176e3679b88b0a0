#include "driver/backends/pcie/range_allocator.h"

#include <iterator>

namespace pcie {

RangeAllocator::RangeAllocator(uint64_t base, uint64_t size) {
  if (size) free_.emplace(base, size);
}

std::optional<uint64_t> RangeAllocator::allocate(uint64_t size, uint64_t align) {
  for (auto it = free_.begin(); it != free_.end(); ++it) {
    const auto [start, length] = *it;
    const uint64_t pad = (align - start % align) % align;  // no overflow near 2^64
    if (pad > length || size > length - pad) continue;
    free_.erase(it);
    if (pad) free_.emplace(start, pad);
    if (length - pad > size) free_.emplace(start + pad + size, length - pad - size);
    return start + pad;
  }
  return std::nullopt;
}

void RangeAllocator::free(uint64_t start, uint64_t size) {
  auto next = free_.lower_bound(start);
  if (next != free_.end() && start + size == next->first) {
    size += next->second;
    next = free_.erase(next);
  }
  if (next != free_.begin()) {
    auto prev = std::prev(next);
    if (prev->first + prev->second == start) {
      prev->second += size;
      return;
    }
  }
  free_.emplace_hint(next, start, size);
}

}  // namespace pcie
