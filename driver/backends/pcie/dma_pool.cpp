#include "driver/backends/pcie/dma_pool.h"

#include <sys/mman.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <stdexcept>
#include <string>

#include "driver/backends/hex.h"
#include "driver/backends/unique_fd.h"
#include "driver/hal/align.h"

namespace pcie {
namespace {

using backends::hex;
using hal::round_up;

// A cache line: a buffer the device writes never shares one with a buffer the CPU writes.
constexpr uint64_t kMinAlign = 64;

uint64_t page_size() {
  static const uint64_t page = uint64_t(::sysconf(_SC_PAGESIZE));
  return page;
}

bool power_of_two(uint64_t v) { return v && !(v & (v - 1)); }

const DmaPoolOptions& validated(const DmaPoolOptions& o) {
  if (!power_of_two(o.block_size) || o.block_size < page_size())
    throw std::invalid_argument("DmaPool: block_size must be a power of two of at least a page");
  if (o.iova_base == 0 || o.iova_base > o.dma_mask || o.dma_mask - o.iova_base + 1 < o.block_size)
    throw std::invalid_argument("DmaPool: [iova_base, dma_mask] must be above 0 and hold a block");
  return o;
}

// `size` bytes of `fd`, MAP_SHARED at an address aligned to `align` (a power of two of at
// least a page), or null with errno set.
void* map_aligned(int fd, uint64_t size, uint64_t align) {
  if (align - page_size() > SIZE_MAX - size) {
    errno = ENOMEM;
    return nullptr;
  }
  const size_t reserve = size + align - page_size();
  void* reserved = ::mmap(nullptr, reserve, PROT_NONE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_NORESERVE, -1, 0);
  if (reserved == MAP_FAILED) return nullptr;
  const uintptr_t base = reinterpret_cast<uintptr_t>(reserved);
  const uintptr_t start = round_up(base, align), end = start + size;
  void* p = ::mmap(reinterpret_cast<void*>(start), size, PROT_READ | PROT_WRITE, MAP_SHARED | MAP_FIXED, fd, 0);
  if (p == MAP_FAILED) {
    const int error = errno;
    ::munmap(reserved, reserve);
    errno = error;
    return nullptr;
  }
  if (start > base) ::munmap(reserved, start - base);
  if (base + reserve > end) ::munmap(reinterpret_cast<void*>(end), base + reserve - end);
  return p;
}

}  // namespace

DmaPool::DmaPool(PciTransport& transport, DmaPoolOptions options)
    : transport_(transport), options_(validated(options)) {
  for (const IovaRange& r : transport_.iova_ranges()) {
    const uint64_t start = std::max(r.start, options_.iova_base), last = std::min(r.last, options_.dma_mask);
    if (start > last) continue;
    iova_space_.free(start, last - start + 1);
    largest_window_ = std::max(largest_window_, last - start + 1);
    windows_ += (windows_.empty() ? "[" : ", [") + hex(start) + ", " + hex(last) + "]";
  }
  if (largest_window_ < options_.block_size)
    throw std::invalid_argument("DmaPool: the IOMMU accepts no " + std::to_string(options_.block_size) +
                                "-byte block of IOVAs in [" + hex(options_.iova_base) + ", " + hex(options_.dma_mask) +
                                "] (the device's DMA mask)");
}

DmaPool::~DmaPool() {
  std::lock_guard lock(mutex_);
  while (!blocks_.empty()) release_block_locked(blocks_.begin());
}

hal::DmaBuffer DmaPool::alloc_coherent(size_t size, size_t align) {
  if (size == 0 || !power_of_two(align) || size > largest_window_ || align > largest_window_) {
    errors_.record("DMA: no allocation of " + std::to_string(size) + " bytes aligned to " + std::to_string(align) +
                   " in IOVA windows of at most " + std::to_string(largest_window_) + " bytes");
    return {};
  }
  const uint64_t alignment = std::max<uint64_t>(align, kMinAlign);
  const uint64_t rounded = round_up(size, kMinAlign);
  uint8_t* cpu = nullptr;
  uint64_t iova = 0;
  {
    std::lock_guard lock(mutex_);
    auto block = blocks_.end();
    std::optional<uint64_t> offset;
    for (auto it = blocks_.begin(); it != blocks_.end(); ++it) {
      if (it->second.align < alignment) continue;  // offsets align only as far as the base does
      if ((offset = it->second.space.allocate(rounded, alignment))) {
        block = it;
        break;
      }
    }
    if (!offset) {
      block = new_block_locked(std::max(options_.block_size, round_up(rounded, page_size())),
                               std::max(options_.block_size, alignment));
      if (block == blocks_.end()) return {};
      offset = block->second.space.allocate(rounded, alignment);  // offset 0 of a block that big
    }
    ++block->second.allocations;
    cpu = block->second.cpu + *offset;
    iova = block->first + *offset;
    allocations_.emplace(iova, rounded);
  }
  std::memset(cpu, 0, rounded);  // nobody else has the buffer yet
  return {cpu, iova, size};
}

void DmaPool::free_coherent(const hal::DmaBuffer& buf) {
  if (!buf) return;
  std::lock_guard lock(mutex_);
  auto allocation = allocations_.find(buf.iova);
  if (allocation == allocations_.end()) {
    errors_.record("DMA: free of IOVA " + hex(buf.iova) + ", which this pool did not hand out");
    return;
  }
  auto block = std::prev(blocks_.upper_bound(buf.iova));
  const uint64_t offset = buf.iova - block->first;
  if (buf.cpu != block->second.cpu + offset) {
    errors_.record("DMA: free of IOVA " + hex(buf.iova) + " with a CPU address that is not its own");
    return;
  }
  block->second.space.free(offset, allocation->second);
  allocations_.erase(allocation);
  if (--block->second.allocations == 0) release_block_locked(block);
}

DmaPool::Blocks::iterator DmaPool::new_block_locked(uint64_t size, uint64_t align) {
  const std::string what = "DMA: block of " + std::to_string(size) + " bytes";
  const std::optional<uint64_t> iova = iova_space_.allocate(size, align);
  if (!iova) {
    errors_.record(what + ": no room in the IOVA window " + windows_);
    return blocks_.end();
  }
  UniqueFd fd(::memfd_create("irdma-dma", MFD_CLOEXEC));  // the mapping and the transport keep the pages
  void* cpu = nullptr;
  if (!fd.valid() || ::ftruncate(fd.get(), off_t(size)) != 0 || !(cpu = map_aligned(fd.get(), size, align))) {
    errors_.record(what + ": " + std::strerror(errno));
    iova_space_.free(*iova, size);
    return blocks_.end();
  }
  try {
    transport_.dma_map(cpu, size, *iova, fd.get(), 0);
  } catch (const PciTransportError& e) {
    errors_.record(what + ": " + e.what());
    ::munmap(cpu, size);
    iova_space_.free(*iova, size);
    return blocks_.end();
  }
  mapped_bytes_ += size;
  return blocks_.emplace(*iova, Block{static_cast<uint8_t*>(cpu), size, align, RangeAllocator(0, size)}).first;
}

void DmaPool::release_block_locked(Blocks::iterator block) {
  const auto& [iova, b] = *block;
  bool unmapped = true;
  try {
    transport_.dma_unmap(iova, b.size);
  } catch (const PciTransportError& e) {
    errors_.record("DMA: unmap of the block at IOVA " + hex(iova) + ": " + e.what());
    unmapped = false;
  }
  // Our pages may go either way: the device's mapping holds its own reference to them. Its
  // IOVAs may not while it may still hold them.
  if (unmapped) iova_space_.free(iova, b.size);
  ::munmap(b.cpu, b.size);
  mapped_bytes_ -= b.size;
  blocks_.erase(block);
}

uint64_t DmaPool::mapped_bytes() const {
  std::lock_guard lock(mutex_);
  return mapped_bytes_;
}

size_t DmaPool::block_count() const {
  std::lock_guard lock(mutex_);
  return blocks_.size();
}

size_t DmaPool::allocation_count() const {
  std::lock_guard lock(mutex_);
  return allocations_.size();
}

}  // namespace pcie
