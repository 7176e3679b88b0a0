// What a device host implements to be served over vfio-user by VfioUserServer: a PCI
// function's config space, its regions and interrupt counts, and the hooks the protocol
// calls. Plain C++; callbacks run on the thread that drives the server.
#pragma once

#include <cstddef>
#include <cstdint>
#include <vector>

namespace irdma_sim::platform {

struct VfioUserRegion {
  uint32_t index = 0;  // a BAR (0-5), the ROM (6) or a device-specific region (>= 9); never config (7)
  uint64_t size = 0;
  uint32_t flags = 0;  // pcie::vfio::kRegionFlagRead / kRegionFlagWrite
  // Shared pages: with an fd, the client mmaps [offset, offset + size) of each area from the
  // fd at fd_offset + offset (no areas = the whole region). The endpoint keeps the fd open
  // as long as the server lives; accesses outside the areas arrive as region_read/write.
  int fd = -1;
  uint64_t fd_offset = 0;
  struct Area {
    uint64_t offset = 0;  // page-aligned, from the region start
    uint64_t size = 0;
  };
  std::vector<Area> mmap_areas;
};

class VfioUserEndpoint {
 public:
  virtual ~VfioUserEndpoint() = default;

  virtual uint32_t config_space_size() const = 0;  // 256 (PCI) or 4096 (PCIe)
  virtual std::vector<VfioUserRegion> regions() const = 0;  // asked once, when the server starts
  virtual uint32_t irq_count(uint32_t irq_index) const = 0;  // vectors per pcie::vfio irq index
  virtual bool can_reset() const { return true; }

  // Accesses the client makes through the socket, already checked to lie inside the
  // region (or config space). Return 0 or a positive errno for the client (EINVAL for an
  // access width the device does not take, say).
  virtual int config_read(uint64_t offset, void* data, size_t size) = 0;
  virtual int config_write(uint64_t offset, const void* data, size_t size) = 0;
  virtual int region_read(uint32_t index, uint64_t offset, void* data, size_t size) = 0;
  virtual int region_write(uint32_t index, uint64_t offset, const void* data, size_t size) = 0;

  // DEVICE_RESET. DMA maps and irq eventfds stay; the device's own state goes back to reset.
  virtual void reset() = 0;

  // The client granted or withdrew [iova, iova + size). After dma_unmapped returns the
  // device must hold no pointer into that range.
  virtual void dma_mapped(uint64_t iova, uint64_t size, uint32_t flags) {}
  virtual void dma_unmapped(uint64_t iova, uint64_t size) {}
};

}  // namespace irdma_sim::platform
