// hal::DmaAllocator for a device behind a PciTransport: coherent memory the device reaches
// at IOVAs of our choosing. Memory comes in memfd-backed MAP_SHARED blocks (2 MiB by
// default), so that a transport to another process can share the very pages by fd; each
// block is mapped for the device once (transport.dma_map) and carved first-fit into
// allocations. An allocation larger than a block gets a block of its own. A block is
// unmapped and freed when its last allocation goes, so once the driver has freed
// everything nothing stays mapped.
//
// IOVAs come from our own allocator in [iova_base, dma_mask] where the transport's IOMMU
// accepts them (iova_ranges()), never IOVA = VA: an IOMMU with fewer address bits than the
// CPU (39 under QEMU's vIOMMU) or a device with a narrower DMA mask would refuse or
// truncate user addresses.
//
// Nothing throws into the driver: when memory, IOVA space or the transport refuses,
// alloc_coherent returns an empty buffer and errors() says why. Thread-safe.
#pragma once

#include <cstddef>
#include <cstdint>
#include <map>
#include <mutex>
#include <string>

#include "driver/backends/pci_transport.h"
#include "driver/backends/pcie/range_allocator.h"
#include "driver/backends/pcie/transport_errors.h"
#include "driver/hal/dma.h"

namespace pcie {

struct DmaPoolOptions {
  // IOVAs below this stay unused: no null-like device addresses, clear of the x86 MSI
  // window at 0xFEE00000.
  uint64_t iova_base = 4ull << 30;
  uint64_t dma_mask = (1ull << 39) - 1;  // the highest IOVA the device and the IOMMU reach
  uint64_t block_size = 2ull << 20;      // a power of two, at least a page
};

class DmaPool final : public hal::DmaAllocator {
 public:
  // Throws std::invalid_argument for options (or IOVA ranges) that leave no block's window.
  explicit DmaPool(PciTransport& transport, DmaPoolOptions options = {});
  ~DmaPool() override;  // unmaps and frees every block, allocations or not
  DmaPool(const DmaPool&) = delete;
  DmaPool& operator=(const DmaPool&) = delete;

  // Zeroed memory whose CPU address and IOVA are both aligned to `align` (a power of two);
  // an empty buffer for size 0, a bad alignment, or when the memory cannot be had.
  hal::DmaBuffer alloc_coherent(size_t size, size_t align) override;
  // A buffer this pool did not hand out is ignored and counted in errors().
  void free_coherent(const hal::DmaBuffer& buf) override;

  uint64_t mapped_bytes() const;    // in blocks the device may reach
  size_t block_count() const;       // one dma_map() each
  size_t allocation_count() const;  // handed out and not freed
  const TransportErrors& errors() const { return errors_; }

 private:
  struct Block {
    uint8_t* cpu;
    uint64_t size;
    uint64_t align;  // of both its CPU address and its IOVA
    RangeAllocator space;  // offsets into the block
    size_t allocations = 0;
  };
  using Blocks = std::map<uint64_t, Block>;  // by IOVA

  Blocks::iterator new_block_locked(uint64_t size, uint64_t align);
  void release_block_locked(Blocks::iterator block);

  PciTransport& transport_;
  const DmaPoolOptions options_;
  mutable std::mutex mutex_;
  RangeAllocator iova_space_;
  uint64_t largest_window_ = 0;  // the largest IOVA range we allocate in
  std::string windows_;          // those ranges, for errors
  Blocks blocks_;
  std::map<uint64_t, uint64_t> allocations_;  // IOVA -> rounded size
  uint64_t mapped_bytes_ = 0;
  TransportErrors errors_;
};

}  // namespace pcie
