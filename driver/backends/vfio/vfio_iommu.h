// How a VFIO device is had and its DMA mapped: the kernel's two interfaces.
//   type1:   /dev/vfio/vfio (a container) and /dev/vfio/<group>; every kernel with VFIO.
//   iommufd: /dev/iommu (an IO address space) and the device's own cdev,
//            /dev/vfio/devices/vfioN; kernels from 6.6 built with CONFIG_IOMMUFD and
//            CONFIG_VFIO_DEVICE_CDEV.
// Either way the device fd that comes out speaks the same region, irq and reset ioctls.
// Every failure throws PciTransportError with one line saying what to do.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "driver/backends/pci_transport.h"
#include "driver/backends/unique_fd.h"

namespace pcie {

enum class VfioIommuKind {
  automatic,  // iommufd where the kernel has it for this function, type1 otherwise
  type1,
  iommufd,
};

// The function to open: its canonical address, its IOMMU group's number, the prefix of
// every message ("vfio 0000:00:03.0").
struct VfioFunction {
  std::string bdf;
  std::string group;
  std::string where;
};

class VfioIommu {
 public:
  virtual ~VfioIommu() = default;

  virtual const char* name() const = 0;  // "type1" or "iommufd"
  int device_fd() const { return device_.get(); }
  // Lets the device reach [iova, iova + size) as `cpu_address` (pinned by the kernel).
  virtual void map(void* cpu_address, uint64_t size, uint64_t iova, bool read, bool write) = 0;
  virtual void unmap(uint64_t iova, uint64_t size) = 0;

  // What the IOMMU accepts: the page sizes it maps (a bitmap; iommufd gives the smallest
  // only), its IOVA ranges (a fallback where the
  // kernel reports none) and how many more mappings it takes (0 = not reported).
  uint64_t page_sizes() const { return page_sizes_; }
  const std::vector<IovaRange>& ranges() const { return ranges_; }
  bool ranges_reported() const { return ranges_reported_; }
  uint32_t dma_avail() const { return dma_avail_; }

 protected:
  explicit VfioIommu(VfioFunction function) : function_(std::move(function)) {}
  void fall_back_to_x86_ranges();

  VfioFunction function_;
  UniqueFd device_;
  uint64_t page_sizes_ = 0;
  std::vector<IovaRange> ranges_;
  bool ranges_reported_ = false;
  uint32_t dma_avail_ = 0;
};

// True when this kernel offers iommufd and `bdf` a VFIO cdev (vfio-pci bound, 6.6+), and
// this user may open both.
bool iommufd_offered(const std::string& bdf);
std::unique_ptr<VfioIommu> open_type1(const VfioFunction& function);
std::unique_ptr<VfioIommu> open_iommufd(const VfioFunction& function);

}  // namespace pcie
