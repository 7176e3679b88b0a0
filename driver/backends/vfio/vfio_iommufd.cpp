// The iommufd interface (kernel 6.6+): an IO address space on /dev/iommu, the function's
// VFIO cdev bound to it and attached, DMA mapped at our IOVAs. linux/iommufd.h and the cdev
// ioctls are newer than Debian 12's kernel headers, so their layouts are restated here.
#include <fcntl.h>
#include <sys/ioctl.h>
#include <unistd.h>

#include <cerrno>
#include <map>

#include "driver/backends/vfio/vfio_iommu.h"
#include "driver/backends/vfio/vfio_util.h"

namespace pcie {
namespace {

using namespace vfio_util;

// linux/iommufd.h: type ';', commands from 0x80.
constexpr unsigned kIommufdType = ';';
constexpr unsigned long kIommuDestroy = _IO(kIommufdType, 0x80);
constexpr unsigned long kIommuIoasAlloc = _IO(kIommufdType, 0x81);
constexpr unsigned long kIommuIoasIovaRanges = _IO(kIommufdType, 0x84);
constexpr unsigned long kIommuIoasMap = _IO(kIommufdType, 0x85);
constexpr unsigned long kIommuIoasUnmap = _IO(kIommufdType, 0x86);
constexpr uint32_t kIoasMapFixedIova = 1u << 0, kIoasMapWriteable = 1u << 1, kIoasMapReadable = 1u << 2;
// linux/vfio.h, 6.6+: VFIO_BASE + 18 and + 19.
constexpr unsigned long kVfioDeviceBindIommufd = _IO(VFIO_TYPE, VFIO_BASE + 18);
constexpr unsigned long kVfioDeviceAttachIommufdPt = _IO(VFIO_TYPE, VFIO_BASE + 19);

struct IommuDestroy {
  uint32_t size, id;
};
struct IommuIoasAlloc {
  uint32_t size, flags, out_ioas_id;
};
struct IommuIovaRange {
  uint64_t start, last;
};
struct IommuIoasIovaRanges {
  uint32_t size, ioas_id, num_iovas, reserved;
  uint64_t allowed_iovas, out_iova_alignment;
};
struct IommuIoasMap {
  uint32_t size, flags, ioas_id, reserved;
  uint64_t user_va, length, iova;
};
struct IommuIoasUnmap {
  uint32_t size, ioas_id;
  uint64_t iova, length;
};
struct VfioDeviceBindIommufd {
  uint32_t argsz, flags;
  int32_t iommufd;
  uint32_t out_devid;
};
struct VfioDeviceAttachIommufdPt {
  uint32_t argsz, flags, pt_id;
};
static_assert(sizeof(IommuIoasIovaRanges) == 32 && sizeof(IommuIoasMap) == 40 && sizeof(IommuIoasUnmap) == 24);

// The cdev's name under /sys/bus/pci/devices/BDF/vfio-dev ("vfio3"), or "".
std::string cdev_name(const std::string& bdf) {
  for (const std::string& name : list_dir("/sys/bus/pci/devices/" + bdf + "/vfio-dev"))
    if (name.rfind("vfio", 0) == 0) return name;
  return "";
}

class Iommufd final : public VfioIommu {
 public:
  explicit Iommufd(const VfioFunction& function);
  ~Iommufd() override;

  const char* name() const override { return "iommufd"; }
  void map(void* cpu_address, uint64_t size, uint64_t iova, bool read, bool write) override;
  void unmap(uint64_t iova, uint64_t size) override;

 private:
  void read_ranges();

  UniqueFd iommufd_;  // closed after the device (the destructor sees to it)
  uint32_t ioas_ = 0;
  std::map<uint64_t, uint64_t> maps_;  // iova -> size
};

Iommufd::Iommufd(const VfioFunction& f) : VfioIommu(f) {
  const std::string& where = function_.where;
  iommufd_.reset(::open("/dev/iommu", O_RDWR | O_CLOEXEC));
  if (!iommufd_.valid()) {
    const int e = errno;
    throw PciTransportError(where + ": cannot open /dev/iommu (" + errno_text(e) + "); " +
                            (e == ENOENT ? "this kernel has no iommufd (CONFIG_IOMMUFD): use type1"
                                         : "run as root or give this user /dev/iommu"));
  }
  IommuIoasAlloc alloc{sizeof alloc, 0, 0};
  if (::ioctl(iommufd_.get(), kIommuIoasAlloc, &alloc) != 0) {
    throw PciTransportError(where + ": IOMMU_IOAS_ALLOC: " + errno_text(errno));
  }
  ioas_ = alloc.out_ioas_id;

  const std::string cdev = cdev_name(function_.bdf);
  if (cdev.empty()) {
    throw PciTransportError(where + ": no VFIO cdev under /sys/bus/pci/devices/" + function_.bdf +
                            "/vfio-dev; this kernel has none (CONFIG_VFIO_DEVICE_CDEV, 6.6+): use type1");
  }
  const std::string path = "/dev/vfio/devices/" + cdev;
  device_.reset(::open(path.c_str(), O_RDWR | O_CLOEXEC));
  if (!device_.valid()) {
    const int e = errno;
    throw PciTransportError(where + ": cannot open " + path + " (" + errno_text(e) + "); " +
                            (e == EBUSY ? "the device is open already (another process, or this one): close it first"
                                        : "run as root or give this user the device's node"));
  }
  VfioDeviceBindIommufd bind{sizeof bind, 0, iommufd_.get(), 0};
  if (::ioctl(device_.get(), kVfioDeviceBindIommufd, &bind) != 0) {
    const int e = errno;
    // Binding claims DMA ownership of the whole group: a member on another driver refuses it.
    if (!group_members_on_other_drivers(function_.group).empty())
      throw PciTransportError(not_viable(where, function_.group));
    std::string why = where + ": VFIO_DEVICE_BIND_IOMMUFD: " + errno_text(e);
    if (e == EINVAL) why += "; the device is open already (another process, or this one): close it first";
    if (e == EPERM) why += "; the IOMMU cannot isolate its interrupts (iommufd's allow_unsafe_interrupts)";
    throw PciTransportError(why);
  }
  VfioDeviceAttachIommufdPt attach{sizeof attach, 0, ioas_};
  if (::ioctl(device_.get(), kVfioDeviceAttachIommufdPt, &attach) != 0) {
    throw PciTransportError(where + ": VFIO_DEVICE_ATTACH_IOMMUFD_PT: " + errno_text(errno));
  }
  read_ranges();
}

// The IOAS's allowed ranges once the device's domain is attached (its aperture less the
// reserved regions, such as the MSI window). Asked twice: the first answer gives the count.
void Iommufd::read_ranges() {
  std::vector<IommuIovaRange> ranges(4);
  for (int attempt = 0; attempt < 2; ++attempt) {
    IommuIoasIovaRanges q{sizeof q, ioas_, static_cast<uint32_t>(ranges.size()), 0,
                          reinterpret_cast<uintptr_t>(ranges.data()), 0};
    if (::ioctl(iommufd_.get(), kIommuIoasIovaRanges, &q) == 0) {
      ranges.resize(q.num_iovas);
      page_sizes_ = q.out_iova_alignment;  // iommufd reports only the smallest page it maps
      for (const IommuIovaRange& r : ranges) ranges_.push_back({r.start, r.last});
      ranges_reported_ = true;
      return;
    }
    if (errno != EMSGSIZE) throw PciTransportError(function_.where + ": IOMMU_IOAS_IOVA_RANGES: " + errno_text(errno));
    ranges.resize(q.num_iovas);
  }
  fall_back_to_x86_ranges();
}

Iommufd::~Iommufd() {
  for (auto& [iova, size] : maps_) {
    IommuIoasUnmap u{sizeof u, ioas_, iova, size};
    ::ioctl(iommufd_.get(), kIommuIoasUnmap, &u);
  }
  device_.reset();  // unbinds
  IommuDestroy destroy{sizeof destroy, ioas_};
  if (iommufd_.valid()) ::ioctl(iommufd_.get(), kIommuDestroy, &destroy);
}

void Iommufd::map(void* cpu_address, uint64_t size, uint64_t iova, bool read, bool write) {
  IommuIoasMap m{sizeof m,
                 kIoasMapFixedIova | (read ? kIoasMapReadable : 0) | (write ? kIoasMapWriteable : 0),
                 ioas_,
                 0,
                 reinterpret_cast<uintptr_t>(cpu_address),
                 size,
                 iova};
  if (::ioctl(iommufd_.get(), kIommuIoasMap, &m) != 0) {
    throw PciTransportError(map_error(function_.where, size, iova, errno, ranges_));
  }
  maps_[iova] = size;
}

void Iommufd::unmap(uint64_t iova, uint64_t size) {
  IommuIoasUnmap u{sizeof u, ioas_, iova, size};
  if (::ioctl(iommufd_.get(), kIommuIoasUnmap, &u) != 0) {
    const int e = errno;
    throw PciTransportError(function_.where + ": IOMMU_IOAS_UNMAP of " + hex(size) + " bytes at IOVA " + hex(iova) +
                            ": " + errno_text(e) + (e == ENOENT ? "; unmap exactly what dma_map mapped" : ""));
  }
  maps_.erase(iova);
  if (u.length != size) {  // the kernel says how much it unmapped
    throw PciTransportError(function_.where + ": IOMMU_IOAS_UNMAP at IOVA " + hex(iova) + " unmapped " + hex(u.length) +
                            " bytes, not " + hex(size) + ": unmap exactly what dma_map mapped");
  }
}

}  // namespace

bool iommufd_offered(const std::string& bdf) {
  // Usable by this user too: a user given only the group's node goes through type1.
  const std::string cdev = cdev_name(bdf);
  return !cdev.empty() && ::access("/dev/iommu", R_OK | W_OK) == 0 &&
         ::access(("/dev/vfio/devices/" + cdev).c_str(), R_OK | W_OK) == 0;
}

std::unique_ptr<VfioIommu> open_iommufd(const VfioFunction& function) { return std::make_unique<Iommufd>(function); }

}  // namespace pcie
