// The kernel VFIO transport (type1 IOMMU): one PCI function bound to vfio-pci, reached
// through /dev/vfio/vfio (the container), /dev/vfio/<group> and the device fd. BARs are
// mmapped where the region allows it; config space and the rest go through pread/pwrite.
// DMA is MAP_DMA/UNMAP_DMA of the caller's IOVAs, which must lie inside iova_ranges() (and
// below the device's DMA mask: the kernel cannot know it). Interrupts are eventfds by
// SET_IRQS; on kernels before ~6.5 an enabled MSI-X set cannot grow, so give every vector
// at once. Every failure throws PciTransportError with one line saying what is wrong and
// what to do. Region accesses may come from any thread; maps and irq sets from one at a time.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "driver/backends/pci_transport.h"
#include "driver/backends/unique_fd.h"

namespace pcie {

class VfioTransport final : public PciTransport {
 public:
  // `bdf` is "DDDD:BB:DD.F" (or "BB:DD.F", domain 0). Opens the container and the group,
  // checks viability, sets TYPE1v2, reads the IOMMU's info and opens the device.
  explicit VfioTransport(const std::string& bdf);
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
  // From IOMMU_GET_INFO: the page sizes the IOMMU maps, the IOVA ranges it accepts (the
  // x86 fallback where the kernel reports none) and how many more mappings it takes
  // (0 = not reported).
  uint64_t iova_page_sizes() const { return iova_page_sizes_; }
  std::vector<IovaRange> iova_ranges() const override { return iova_ranges_; }
  uint32_t dma_avail() const { return dma_avail_; }
  bool iova_ranges_reported() const { return iova_ranges_reported_; }
  // Sets Memory Space and Bus Master in the COMMAND register; returns the new value.
  uint16_t enable_memory_and_bus_master();

 private:
  RegionInfo query_region(uint32_t index);
  const RegionInfo& region_locked(uint32_t index);
  uint64_t region_offset(uint32_t index);
  std::string where() const;  // "vfio 0000:00:03.0"

  std::string bdf_;
  int group_number_ = -1;
  UniqueFd container_;
  UniqueFd group_;
  UniqueFd device_;
  DeviceInfo device_info_;
  uint64_t iova_page_sizes_ = 0;
  std::vector<IovaRange> iova_ranges_;
  bool iova_ranges_reported_ = false;
  uint32_t dma_avail_ = 0;
  // Queried on first use from any thread; entries stay where they are once made.
  std::mutex regions_mutex_;
  std::map<uint32_t, std::unique_ptr<RegionInfo>> regions_;  // stable addresses for region()
  std::map<uint32_t, uint64_t> region_offsets_;              // file offset of each region
  std::vector<std::pair<void*, size_t>> mappings_;           // munmapped when the transport goes
  std::map<uint64_t, uint64_t> dma_maps_;                    // iova -> size
};

}  // namespace pcie
