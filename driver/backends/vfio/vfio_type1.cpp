// The type1 IOMMU interface: a container (/dev/vfio/vfio) with the function's group in it,
// the device fd from the group.
#include <fcntl.h>
#include <linux/vfio.h>
#include <sys/ioctl.h>

#include <cerrno>
#include <map>

#include "driver/backends/vfio/vfio_iommu.h"
#include "driver/backends/vfio/vfio_util.h"

namespace pcie {
namespace {

using namespace vfio_util;

class Type1 final : public VfioIommu {
 public:
  explicit Type1(const VfioFunction& function);
  ~Type1() override;

  const char* name() const override { return "type1"; }
  void map(void* cpu_address, uint64_t size, uint64_t iova, bool read, bool write) override;
  void unmap(uint64_t iova, uint64_t size) override;

 private:
  void read_iommu_info();

  // The destructor closes the device (the base's) before the group leaves the container.
  UniqueFd container_;
  UniqueFd group_;
  std::map<uint64_t, uint64_t> maps_;  // iova -> size
};

Type1::Type1(const VfioFunction& f) : VfioIommu(f) {
  const std::string& where = function_.where;
  container_.reset(::open("/dev/vfio/vfio", O_RDWR | O_CLOEXEC));
  if (!container_.valid()) {
    const int e = errno;
    throw PciTransportError(where + ": cannot open /dev/vfio/vfio (" + errno_text(e) + "); " +
                            (e == ENOENT ? "`modprobe vfio-pci`, or this kernel has no VFIO container (CONFIG_VFIO_CONTAINER)"
                                         : "run as root or give this user the vfio nodes"));
  }
  const int api = ::ioctl(container_.get(), VFIO_GET_API_VERSION);
  if (api != VFIO_API_VERSION) {
    throw PciTransportError(where + ": the kernel's VFIO API is " + std::to_string(api) + ", this build speaks " +
                            std::to_string(VFIO_API_VERSION));
  }
  if (::ioctl(container_.get(), VFIO_CHECK_EXTENSION, VFIO_TYPE1v2_IOMMU) != 1) {
    throw PciTransportError(where + ": the kernel offers no type1v2 IOMMU backend; `modprobe vfio_iommu_type1`");
  }

  const std::string group_path = "/dev/vfio/" + function_.group;
  group_.reset(::open(group_path.c_str(), O_RDWR | O_CLOEXEC));
  if (!group_.valid()) {
    const int e = errno;
    throw PciTransportError(where + ": cannot open " + group_path + " (" + errno_text(e) + "); " +
                            (e == EBUSY ? "the group is open already (another process, or this one): close it first"
                                        : "run as root or give this user the group's node"));
  }
  vfio_group_status status{};
  status.argsz = sizeof status;
  if (::ioctl(group_.get(), VFIO_GROUP_GET_STATUS, &status) != 0) {
    throw PciTransportError(where + ": GROUP_GET_STATUS on " + group_path + ": " + errno_text(errno));
  }
  if (!(status.flags & VFIO_GROUP_FLAGS_VIABLE)) throw PciTransportError(not_viable(where, function_.group));
  int container_fd = container_.get();
  if (::ioctl(group_.get(), VFIO_GROUP_SET_CONTAINER, &container_fd) != 0) {
    throw PciTransportError(where + ": GROUP_SET_CONTAINER: " + errno_text(errno));
  }
  if (::ioctl(container_.get(), VFIO_SET_IOMMU, VFIO_TYPE1v2_IOMMU) != 0) {
    throw PciTransportError(where + ": SET_IOMMU(type1v2): " + errno_text(errno));
  }
  read_iommu_info();

  const int fd = ::ioctl(group_.get(), VFIO_GROUP_GET_DEVICE_FD, function_.bdf.c_str());
  if (fd < 0) {
    const int e = errno;
    throw PciTransportError(where + ": GROUP_GET_DEVICE_FD: " + errno_text(e) +
                            (e == EBUSY ? "; another process has the device open" : ""));
  }
  device_.reset(fd);
}

// IOMMU_GET_INFO twice: the first answer says how large the capability chain is.
void Type1::read_iommu_info() {
  std::vector<uint8_t> buf(sizeof(vfio_iommu_type1_info));
  for (int attempt = 0; attempt < 2; ++attempt) {
    vfio_iommu_type1_info info{};
    info.argsz = static_cast<uint32_t>(buf.size());
    std::memcpy(buf.data(), &info, sizeof info);
    if (::ioctl(container_.get(), VFIO_IOMMU_GET_INFO, buf.data()) != 0) {
      throw PciTransportError(function_.where + ": IOMMU_GET_INFO: " + errno_text(errno));
    }
    std::memcpy(&info, buf.data(), sizeof info);
    if (info.argsz <= buf.size()) break;
    buf.assign(info.argsz, 0);
  }
  vfio_iommu_type1_info info{};
  std::memcpy(&info, buf.data(), sizeof info);
  if (info.flags & VFIO_IOMMU_INFO_PGSIZES) page_sizes_ = info.iova_pgsizes;
  if ((info.flags & VFIO_IOMMU_INFO_CAPS) && info.argsz <= buf.size()) {
    walk_caps(buf, info.cap_offset, [&](uint16_t id, uint16_t, uint32_t at) {
      if (id == VFIO_IOMMU_TYPE1_INFO_CAP_IOVA_RANGE) {
        vfio_iommu_type1_info_cap_iova_range cap{};
        if (!load_at(buf, at, cap)) return;
        for (uint32_t i = 0; i < cap.nr_iovas; ++i) {
          vfio_iova_range r{};
          if (!load_at(buf, at + sizeof cap + i * sizeof r, r)) break;
          ranges_.push_back({r.start, r.end});
        }
        ranges_reported_ = true;
      } else if (id == VFIO_IOMMU_TYPE1_INFO_DMA_AVAIL) {
        vfio_iommu_type1_info_dma_avail cap{};
        if (load_at(buf, at, cap)) dma_avail_ = cap.avail;
      }
    });
  }
  if (ranges_.empty()) fall_back_to_x86_ranges();
}

Type1::~Type1() {
  for (auto& [iova, size] : maps_) {
    vfio_iommu_type1_dma_unmap unmap{};
    unmap.argsz = sizeof unmap;
    unmap.iova = iova;
    unmap.size = size;
    ::ioctl(container_.get(), VFIO_IOMMU_UNMAP_DMA, &unmap);
  }
  device_.reset();
  if (group_.valid()) ::ioctl(group_.get(), VFIO_GROUP_UNSET_CONTAINER);
}

void Type1::map(void* cpu_address, uint64_t size, uint64_t iova, bool read, bool write) {
  vfio_iommu_type1_dma_map map{};
  map.argsz = sizeof map;
  map.flags = (read ? VFIO_DMA_MAP_FLAG_READ : 0) | (write ? VFIO_DMA_MAP_FLAG_WRITE : 0);
  map.vaddr = reinterpret_cast<uintptr_t>(cpu_address);
  map.iova = iova;
  map.size = size;
  if (::ioctl(container_.get(), VFIO_IOMMU_MAP_DMA, &map) != 0) {
    throw PciTransportError(map_error(function_.where, size, iova, errno, ranges_));
  }
  maps_[iova] = size;
}

void Type1::unmap(uint64_t iova, uint64_t size) {
  vfio_iommu_type1_dma_unmap unmap{};
  unmap.argsz = sizeof unmap;
  unmap.iova = iova;
  unmap.size = size;
  if (::ioctl(container_.get(), VFIO_IOMMU_UNMAP_DMA, &unmap) != 0) {
    throw PciTransportError(function_.where + ": UNMAP_DMA of " + hex(size) + " bytes at IOVA " + hex(iova) + ": " +
                            errno_text(errno));
  }
  maps_.erase(iova);
  if (unmap.size != size) {
    throw PciTransportError(function_.where + ": UNMAP_DMA at IOVA " + hex(iova) + " unmapped " + hex(unmap.size) +
                            " bytes, not " + hex(size) + ": unmap exactly what dma_map mapped");
  }
}

}  // namespace

void VfioIommu::fall_back_to_x86_ranges() {
  // x86 without the report: everything but page 0 and the MSI window, 39 bits (the
  // narrowest common IOMMU width).
  ranges_ = {{0x10000, 0xfedfffff}, {0xfef00000, (1ull << 39) - 1}};
}

std::unique_ptr<VfioIommu> open_type1(const VfioFunction& function) { return std::make_unique<Type1>(function); }

}  // namespace pcie
