// The kernel VFIO transport: one PCI function bound to vfio-pci, its device fd had through
// iommufd and the function's cdev where the kernel offers them, type1 otherwise
// (vfio_iommu.h). BARs are mmapped where the region allows it; config space and the rest
// go through pread/pwrite. DMA is mapped at the caller's IOVAs, which must lie inside
// iova_ranges() (and below the device's DMA mask: the kernel cannot know it). Interrupts
// are eventfds by SET_IRQS; on kernels before ~6.5 an enabled MSI-X set cannot grow, so
// give every vector at once. Every failure throws PciTransportError with one line saying
// what is wrong and what to do. Region accesses may come from any thread; maps and irq
// sets from one at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "driver/backends/pci_transport.h"
#include "driver/backends/vfio/vfio_iommu.h"

namespace pcie {

class VfioTransport final : public PciTransport {
 public:
  // `bdf` is "DDDD:BB:DD.F" (or "BB:DD.F", domain 0). Checks that the function is there,
  // behind an IOMMU and on vfio-pci, then opens it through `kind`'s interface.
  explicit VfioTransport(const std::string& bdf, VfioIommuKind kind = VfioIommuKind::automatic);
  ~VfioTransport() override;
  VfioTransport(const VfioTransport&) = delete;
  VfioTransport& operator=(const VfioTransport&) = delete;

  DeviceInfo device_info() override;
  const RegionInfo& region(uint32_t index) override;
  void region_read(uint32_t index, uint64_t offset, void* data, size_t size) override;
  void region_write(uint32_t index, uint64_t offset, const void* data, size_t size) override;
  IrqInfo irq_info(uint32_t index) override;
  void set_irq_eventfds(uint32_t index, uint32_t start, const std::vector<int>& eventfds) override;
  void disable_irqs(uint32_t index) override;
  // `fd` and `fd_offset` are not needed: the kernel pins `cpu_address` itself.
  void dma_map(void* cpu_address, uint64_t size, uint64_t iova, int fd, uint64_t fd_offset,
               uint32_t flags = vfio::kDmaFlagRead | vfio::kDmaFlagWrite) override;
  void dma_unmap(uint64_t iova, uint64_t size) override;
  // DEVICE_RESET; throws where the device does not offer it (no kDeviceFlagReset).
  void reset() override;

  const std::string& bdf() const { return bdf_; }
  int group_number() const { return group_number_; }
  const char* iommu_name() const { return iommu_->name(); }  // "type1" or "iommufd"
  // What the IOMMU said: the page sizes it maps, the IOVA ranges it accepts (the x86
  // fallback where the kernel reports none), how many more mappings it takes (0 = not
  // reported; type1 only).
  uint64_t iova_page_sizes() const { return iommu_->page_sizes(); }
  std::vector<IovaRange> iova_ranges() const override { return iommu_->ranges(); }
  uint32_t dma_avail() const { return iommu_->dma_avail(); }
  bool iova_ranges_reported() const { return iommu_->ranges_reported(); }
  // Sets Memory Space and Bus Master in the COMMAND register; returns the new value.
  uint16_t enable_memory_and_bus_master();

 private:
  RegionInfo query_region(uint32_t index);
  const RegionInfo& region_locked(uint32_t index);
  // The device fd's position of [offset, offset + size) in region `index`; throws when the
  // region is absent or too short for it (`access`: "read" or "write", for the message).
  uint64_t file_offset(uint32_t index, uint64_t offset, size_t size, const char* access);
  std::string where() const;  // "vfio 0000:00:03.0"
  int device() const { return iommu_->device_fd(); }

  std::string bdf_;
  int group_number_ = -1;
  std::unique_ptr<VfioIommu> iommu_;  // holds the device fd
  DeviceInfo device_info_;
  // Queried on first use from any thread; entries stay where they are once made.
  std::mutex regions_mutex_;
  std::map<uint32_t, std::unique_ptr<RegionInfo>> regions_;  // stable addresses for region()
  std::map<uint32_t, uint64_t> region_offsets_;              // file offset of each region
  std::vector<std::pair<void*, size_t>> mappings_;           // munmapped when the transport goes
};

}  // namespace pcie
