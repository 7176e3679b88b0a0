#include "driver/backends/vfio/vfio_transport.h"

#include <linux/vfio.h>
#include <sys/ioctl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <string>

#include "driver/backends/vfio/vfio_util.h"

namespace pcie {
namespace {

using namespace vfio_util;

static_assert(vfio::kRegionFlagMmap == VFIO_REGION_INFO_FLAG_MMAP, "pci_transport.h restates linux/vfio.h");
static_assert(vfio::kRegionFlagCaps == VFIO_REGION_INFO_FLAG_CAPS, "pci_transport.h restates linux/vfio.h");
static_assert(vfio::kDeviceFlagReset == VFIO_DEVICE_FLAGS_RESET, "pci_transport.h restates linux/vfio.h");
static_assert(vfio::kMsixIrqIndex == VFIO_PCI_MSIX_IRQ_INDEX, "pci_transport.h restates linux/vfio.h");
static_assert(vfio::kConfigRegionIndex == VFIO_PCI_CONFIG_REGION_INDEX, "pci_transport.h restates linux/vfio.h");
static_assert(vfio::kDmaFlagRead == VFIO_DMA_MAP_FLAG_READ, "pci_transport.h restates linux/vfio.h");
static_assert(vfio::kDmaFlagWrite == VFIO_DMA_MAP_FLAG_WRITE, "pci_transport.h restates linux/vfio.h");

// "BB:DD.F" -> "0000:BB:DD.F"; anything else is left to sysfs to judge.
std::string canonical_bdf(const std::string& bdf) {
  unsigned domain = 0, bus = 0, dev = 0, fn = 0;
  char tail = 0;
  if (std::sscanf(bdf.c_str(), "%x:%x:%x.%x%c", &domain, &bus, &dev, &fn, &tail) == 4 ||
      (domain = 0, std::sscanf(bdf.c_str(), "%x:%x.%x%c", &bus, &dev, &fn, &tail) == 3)) {
    if (domain <= 0xffff && bus <= 0xff && dev <= 0x1f && fn <= 7) {
      char buf[32];
      std::snprintf(buf, sizeof buf, "%04x:%02x:%02x.%x", domain, bus, dev, fn);
      return buf;
    }
  }
  throw PciTransportError("vfio: '" + bdf + "' is not a PCI address: give DDDD:BB:DD.F as `lspci -D` prints it");
}

}  // namespace

std::string VfioTransport::where() const { return "vfio " + bdf_; }

VfioTransport::VfioTransport(const std::string& bdf, VfioIommuKind kind) : bdf_(canonical_bdf(bdf)) {
  const std::string sysdev = "/sys/bus/pci/devices/" + bdf_;
  if (::access(sysdev.c_str(), F_OK) != 0) {
    throw PciTransportError(where() + ": no such PCI function; `lspci -D` lists the addresses present");
  }
  // With the IOMMU off vfio-pci cannot bind at all: say that first.
  const std::string group_name = link_basename(sysdev + "/iommu_group");
  if (group_name.empty()) {
    throw PciTransportError(where() + ": no IOMMU group, so the IOMMU is off; enable VT-d/AMD-Vi in firmware and "
                            "boot with intel_iommu=on (or amd_iommu=on)");
  }
  const std::string driver = link_basename(sysdev + "/driver");
  if (driver != "vfio-pci") {
    throw PciTransportError(
        where() + ": bound to " + (driver.empty() ? std::string("no driver") : driver) +
        ", not vfio-pci; `modprobe vfio-pci; echo vfio-pci > " + sysdev + "/driver_override; " +
        (driver.empty() ? std::string() : "echo " + bdf_ + " > " + sysdev + "/driver/unbind; ") + "echo " + bdf_ +
        " > /sys/bus/pci/drivers_probe`");
  }
  group_number_ = std::stoi(group_name);

  const VfioFunction function{bdf_, group_name, where()};
  const bool iommufd = kind == VfioIommuKind::iommufd || (kind == VfioIommuKind::automatic && iommufd_offered(bdf_));
  iommu_ = iommufd ? open_iommufd(function) : open_type1(function);
  vfio_device_info dinfo{};
  dinfo.argsz = sizeof dinfo;
  if (::ioctl(device(), VFIO_DEVICE_GET_INFO, &dinfo) != 0) {
    throw PciTransportError(where() + ": DEVICE_GET_INFO: " + errno_text(errno));
  }
  if (!(dinfo.flags & VFIO_DEVICE_FLAGS_PCI)) {
    throw PciTransportError(where() + ": the VFIO device is not a PCI device (flags " + hex(dinfo.flags) + ")");
  }
  device_info_ = {dinfo.flags, dinfo.num_regions, dinfo.num_irqs};
}

VfioTransport::~VfioTransport() {
  for (auto& [ptr, size] : mappings_) ::munmap(ptr, size);
}

DeviceInfo VfioTransport::device_info() { return device_info_; }

RegionInfo VfioTransport::query_region(uint32_t index) {
  std::vector<uint8_t> buf(sizeof(vfio_region_info));
  vfio_region_info info{};
  for (int attempt = 0; attempt < 2; ++attempt) {
    info = {};
    info.argsz = static_cast<uint32_t>(buf.size());
    info.index = index;
    std::memcpy(buf.data(), &info, sizeof info);
    if (::ioctl(device(), VFIO_DEVICE_GET_REGION_INFO, buf.data()) != 0) {
      int e = errno;
      if (e == EINVAL) {  // vfio-pci's answer for a region the device does not have (VGA)
        RegionInfo absent;
        absent.index = index;
        region_offsets_[index] = 0;
        return absent;
      }
      throw PciTransportError(where() + ": GET_REGION_INFO(" + std::to_string(index) + "): " + errno_text(e));
    }
    std::memcpy(&info, buf.data(), sizeof info);
    if (info.argsz <= buf.size()) break;
    buf.assign(info.argsz, 0);  // the capability chain needs more room: ask again
  }
  RegionInfo out;
  out.index = index;
  out.flags = info.flags;
  out.size = info.size;
  region_offsets_[index] = info.offset;
  if (!(info.flags & VFIO_REGION_INFO_FLAG_MMAP) || info.size == 0) return out;

  bool sparse = false;
  if ((info.flags & VFIO_REGION_INFO_FLAG_CAPS) && info.argsz <= buf.size()) {
    walk_caps(buf, info.cap_offset, [&](uint16_t id, uint16_t, uint32_t at) {
      if (id != VFIO_REGION_INFO_CAP_SPARSE_MMAP) return;
      vfio_region_info_cap_sparse_mmap cap{};
      if (!load_at(buf, at, cap)) return;
      sparse = true;
      for (uint32_t i = 0; i < cap.nr_areas; ++i) {
        vfio_region_sparse_mmap_area area{};
        if (!load_at(buf, at + sizeof cap + i * sizeof area, area)) break;
        if (area.size != 0 && area.offset <= info.size && area.size <= info.size - area.offset) {
          out.mmap_areas.push_back({area.offset, area.size, nullptr});
        }
      }
    });
  }
  if (!sparse) out.mmap_areas.push_back({0, info.size, nullptr});

  int prot = ((info.flags & VFIO_REGION_INFO_FLAG_READ) ? PROT_READ : 0) |
             ((info.flags & VFIO_REGION_INFO_FLAG_WRITE) ? PROT_WRITE : 0);
  for (MmapArea& area : out.mmap_areas) {
    void* p = ::mmap(nullptr, area.size, prot, MAP_SHARED, device(), static_cast<off_t>(info.offset + area.offset));
    if (p == MAP_FAILED) continue;  // left to pread/pwrite
    area.ptr = p;
    mappings_.emplace_back(p, area.size);
  }
  return out;
}

const RegionInfo& VfioTransport::region(uint32_t index) {
  std::lock_guard lock(regions_mutex_);
  return region_locked(index);
}

const RegionInfo& VfioTransport::region_locked(uint32_t index) {
  auto it = regions_.find(index);
  if (it == regions_.end()) {
    it = regions_.emplace(index, std::make_unique<RegionInfo>(query_region(index))).first;
  }
  return *it->second;
}

uint64_t VfioTransport::file_offset(uint32_t index, uint64_t offset, size_t size, const char* access) {
  std::lock_guard lock(regions_mutex_);
  const RegionInfo& info = region_locked(index);
  if (info.size == 0) throw PciTransportError(where() + ": the device has no region " + std::to_string(index));
  if (offset > info.size || size > info.size - offset) {
    throw PciTransportError(where() + ": " + access + " of " + std::to_string(size) + " bytes at " + hex(offset) +
                            " passes the end of region " + std::to_string(index) + " (" + hex(info.size) + " bytes)");
  }
  return region_offsets_.at(index) + offset;
}

void VfioTransport::region_read(uint32_t index, uint64_t offset, void* data, size_t size) {
  const ssize_t n = ::pread(device(), data, size, static_cast<off_t>(file_offset(index, offset, size, "read")));
  if (n != static_cast<ssize_t>(size)) {
    throw PciTransportError(where() + ": pread of region " + std::to_string(index) + " at " + hex(offset) + ": " +
                            (n < 0 ? errno_text(errno) : "short read"));
  }
}

void VfioTransport::region_write(uint32_t index, uint64_t offset, const void* data, size_t size) {
  const ssize_t n = ::pwrite(device(), data, size, static_cast<off_t>(file_offset(index, offset, size, "write")));
  if (n != static_cast<ssize_t>(size)) {
    throw PciTransportError(where() + ": pwrite of region " + std::to_string(index) + " at " + hex(offset) + ": " +
                            (n < 0 ? errno_text(errno) : "short write"));
  }
}

uint16_t VfioTransport::enable_memory_and_bus_master() {
  uint16_t command = 0;
  region_read(VFIO_PCI_CONFIG_REGION_INDEX, 0x4, &command, sizeof command);
  command |= 0x2 | 0x4;  // Memory Space, Bus Master
  region_write(VFIO_PCI_CONFIG_REGION_INDEX, 0x4, &command, sizeof command);
  region_read(VFIO_PCI_CONFIG_REGION_INDEX, 0x4, &command, sizeof command);
  return command;
}

IrqInfo VfioTransport::irq_info(uint32_t index) {
  vfio_irq_info info{};
  info.argsz = sizeof info;
  info.index = index;
  if (::ioctl(device(), VFIO_DEVICE_GET_IRQ_INFO, &info) != 0) {
    // vfio-pci's answer for an index the device lacks (ERR without AER, REQ): no vectors.
    if (errno == EINVAL) return {index, 0, 0};
    throw PciTransportError(where() + ": GET_IRQ_INFO(" + std::to_string(index) + "): " + errno_text(errno));
  }
  return {info.index, info.flags, info.count};
}

void VfioTransport::set_irq_eventfds(uint32_t index, uint32_t start, const std::vector<int>& eventfds) {
  if (eventfds.empty()) return;
  IrqInfo info = irq_info(index);
  if (start > info.count || eventfds.size() > info.count - start) {
    throw PciTransportError(where() + ": irq " + std::to_string(index) + " has " + std::to_string(info.count) +
                            " vectors, not " + std::to_string(start + eventfds.size()));
  }
  std::vector<uint8_t> buf(sizeof(vfio_irq_set) + eventfds.size() * sizeof(int32_t));
  vfio_irq_set set{};
  set.argsz = static_cast<uint32_t>(buf.size());
  set.flags = VFIO_IRQ_SET_DATA_EVENTFD | VFIO_IRQ_SET_ACTION_TRIGGER;
  set.index = index;
  set.start = start;
  set.count = static_cast<uint32_t>(eventfds.size());
  std::memcpy(buf.data(), &set, sizeof set);
  for (size_t i = 0; i < eventfds.size(); ++i) {
    int32_t fd = eventfds[i];
    std::memcpy(buf.data() + sizeof set + i * sizeof fd, &fd, sizeof fd);
  }
  if (::ioctl(device(), VFIO_DEVICE_SET_IRQS, buf.data()) != 0) {
    int e = errno;
    throw PciTransportError(where() + ": SET_IRQS(index " + std::to_string(index) + ", vectors " +
                            std::to_string(start) + ".." + std::to_string(start + eventfds.size() - 1) +
                            "): " + errno_text(e) +
                            (e == EINVAL ? "; this kernel cannot grow an enabled set: disable and give every "
                                           "vector at once"
                                         : ""));
  }
}

void VfioTransport::disable_irqs(uint32_t index) {
  vfio_irq_set set{};
  set.argsz = sizeof set;
  set.flags = VFIO_IRQ_SET_DATA_NONE | VFIO_IRQ_SET_ACTION_TRIGGER;
  set.index = index;
  set.start = 0;
  set.count = 0;
  if (::ioctl(device(), VFIO_DEVICE_SET_IRQS, &set) != 0) {
    throw PciTransportError(where() + ": SET_IRQS(index " + std::to_string(index) + " off): " + errno_text(errno));
  }
}

void VfioTransport::dma_map(void* cpu_address, uint64_t size, uint64_t iova, int, uint64_t, uint32_t flags) {
  iommu_->map(cpu_address, size, iova, flags & vfio::kDmaFlagRead, flags & vfio::kDmaFlagWrite);
}

void VfioTransport::dma_unmap(uint64_t iova, uint64_t size) { iommu_->unmap(iova, size); }

void VfioTransport::reset() {
  if (!(device_info_.flags & VFIO_DEVICE_FLAGS_RESET)) {
    throw PciTransportError(where() + ": the device offers no reset (no FLR, PM or bus reset VFIO can use)");
  }
  if (::ioctl(device(), VFIO_DEVICE_RESET) != 0) {
    throw PciTransportError(where() + ": DEVICE_RESET: " + errno_text(errno));
  }
}

}  // namespace pcie
