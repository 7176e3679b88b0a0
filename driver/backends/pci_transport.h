// The transport a PCIe backend sits on: one PCI function reached through kernel VFIO, a
// vfio-user socket or a simulator. Interfaces only; the names and values are VFIO's, since
// every transport speaks in VFIO's terms (regions, irq indexes, eventfds, IOVA maps).
#pragma once

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>
#include <vector>

namespace pcie {

// Every failure of a transport: a one-line message saying what is wrong.
class PciTransportError : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

// VFIO's numbering (linux/vfio.h), restated so that no header here needs the kernel's.
namespace vfio {
constexpr uint32_t kDeviceFlagReset = 1u << 0;
constexpr uint32_t kDeviceFlagPci = 1u << 1;

constexpr uint32_t kBar0RegionIndex = 0;  // BAR0-5 are regions 0-5
constexpr uint32_t kRomRegionIndex = 6;
constexpr uint32_t kConfigRegionIndex = 7;
constexpr uint32_t kVgaRegionIndex = 8;
constexpr uint32_t kNumPciRegions = 9;

constexpr uint32_t kRegionFlagRead = 1u << 0;
constexpr uint32_t kRegionFlagWrite = 1u << 1;
constexpr uint32_t kRegionFlagMmap = 1u << 2;
constexpr uint32_t kRegionFlagCaps = 1u << 3;

constexpr uint32_t kIntxIrqIndex = 0;
constexpr uint32_t kMsiIrqIndex = 1;
constexpr uint32_t kMsixIrqIndex = 2;
constexpr uint32_t kErrIrqIndex = 3;
constexpr uint32_t kReqIrqIndex = 4;
constexpr uint32_t kNumPciIrqs = 5;

constexpr uint32_t kIrqInfoEventfd = 1u << 0;
constexpr uint32_t kIrqInfoMaskable = 1u << 1;
constexpr uint32_t kIrqInfoAutomasked = 1u << 2;
constexpr uint32_t kIrqInfoNoresize = 1u << 3;

constexpr uint32_t kDmaFlagRead = 1u << 0;
constexpr uint32_t kDmaFlagWrite = 1u << 1;
}  // namespace vfio

struct DeviceInfo {
  uint32_t flags = 0;  // vfio::kDeviceFlag*
  uint32_t num_regions = 0;
  uint32_t num_irqs = 0;
};

// A part of a region the CPU may access directly. `ptr` is the mapping of
// [offset, offset + size) of the region, or null where the transport could not map it.
struct MmapArea {
  uint64_t offset = 0;
  uint64_t size = 0;
  void* ptr = nullptr;
};

struct RegionInfo {
  uint32_t index = 0;
  uint32_t flags = 0;  // vfio::kRegionFlag*
  uint64_t size = 0;   // 0 = the device has no such region
  std::vector<MmapArea> mmap_areas;
};

// An IOVA range the IOMMU accepts, both ends inclusive.
struct IovaRange {
  uint64_t start = 0;
  uint64_t last = 0;
};

struct IrqInfo {
  uint32_t index = 0;
  uint32_t flags = 0;  // vfio::kIrqInfo*
  uint32_t count = 0;
};

class PciTransport {
 public:
  virtual ~PciTransport() = default;

  virtual DeviceInfo device_info() = 0;
  // Queried once and kept; the mappings live as long as the transport.
  virtual const RegionInfo& region(uint32_t index) = 0;

  // The slow path: config space and trapped registers, any size the region allows.
  virtual void region_read(uint32_t index, uint64_t offset, void* data, size_t size) = 0;
  virtual void region_write(uint32_t index, uint64_t offset, const void* data, size_t size) = 0;

  virtual IrqInfo irq_info(uint32_t index) = 0;
  // Vector start + i of irq `index` signals eventfds[i]; -1 leaves that vector without one.
  // The transport keeps no ownership of the fds.
  virtual void set_irq_eventfds(uint32_t index, uint32_t start, const std::vector<int>& eventfds) = 0;
  // Every vector of irq `index` off.
  virtual void disable_irqs(uint32_t index) = 0;

  // Lets the device reach [iova, iova + size), which is `cpu_address` here. `fd` (or -1)
  // backs the memory at `fd_offset`: a transport to another process shares it through the fd.
  virtual void dma_map(void* cpu_address, uint64_t size, uint64_t iova, int fd, uint64_t fd_offset,
                       uint32_t flags = vfio::kDmaFlagRead | vfio::kDmaFlagWrite) = 0;
  // Exactly a range given to dma_map.
  virtual void dma_unmap(uint64_t iova, uint64_t size) = 0;
  // Where dma_map accepts IOVAs (an IOMMU's apertures less its reserved regions); every
  // address where nothing stands between the device and our memory.
  virtual std::vector<IovaRange> iova_ranges() const { return {{0, ~0ull}}; }

  virtual void reset() = 0;
};

}  // namespace pcie
