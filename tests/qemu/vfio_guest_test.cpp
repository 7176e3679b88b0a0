// Runs inside the QEMU guest (tests/qemu/run_in_guest.py) against QEMU's emulated functions
// bound to vfio-pci behind intel-iommu, through pcie::VfioTransport and the driver's PCIe
// backend on it. One line per check; exits 0 only when every check passed.
//   vfio_guest_test BDF...              each function by its vendor:device (edu, e1000e, nvme)
//   vfio_guest_test --iommu=iommufd BDF...  through iommufd and the cdev (type1: the container)
//   vfio_guest_test --iommu-off BDF...  a guest without an IOMMU: the error that says so
#include <sys/klog.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <dirent.h>
#include <fstream>
#include <string>
#include <vector>

#include "tests/qemu/guest_test.h"

namespace guest {
namespace {

int failure_count = 0;
pcie::VfioIommuKind chosen_iommu = pcie::VfioIommuKind::automatic;

}  // namespace

pcie::VfioIommuKind iommu_kind() { return chosen_iommu; }
void set_iommu_kind(pcie::VfioIommuKind kind) { chosen_iommu = kind; }

void check(bool ok, const std::string& what) {
  std::printf("%s %s\n", ok ? "PASS" : "FAIL", what.c_str());
  std::fflush(stdout);
  if (!ok) ++failure_count;
}

void info(const std::string& what) {
  std::printf("INFO %s\n", what.c_str());
  std::fflush(stdout);
}

int failures() { return failure_count; }


std::string kernel_log() {
  int size = ::klogctl(10 /* SYSLOG_ACTION_SIZE_BUFFER */, nullptr, 0);
  if (size <= 0) return "";
  std::string buf(static_cast<size_t>(size), '\0');
  int n = ::klogctl(3 /* SYSLOG_ACTION_READ_ALL */, buf.data(), size);
  buf.resize(n > 0 ? static_cast<size_t>(n) : 0);
  return buf;
}

size_t kernel_log_count(const std::string& needle) {
  const std::string log = kernel_log();
  size_t n = 0;
  for (size_t at = log.find(needle); at != std::string::npos; at = log.find(needle, at + 1)) ++n;
  return n;
}

std::string sysfs(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  std::getline(in, line);
  return line;
}

void expect_error(const std::string& what, const std::string& needle, const std::function<void()>& fn) {
  try {
    fn();
  } catch (const std::exception& e) {
    check(std::string(e.what()).find(needle) != std::string::npos, what + ": \"" + e.what() + "\"");
    return;
  }
  check(false, what + ": no error");
}

MsixCap read_msix_cap(pcie::PciTransport& t) {
  MsixCap cap;
  uint8_t at = 0;
  t.region_read(pcie::vfio::kConfigRegionIndex, 0x34, &at, 1);
  for (int guard = 0; at >= 0x40 && guard < 48; ++guard) {
    uint8_t hdr[2];
    t.region_read(pcie::vfio::kConfigRegionIndex, at, hdr, 2);
    if (hdr[0] == 0x11) {
      uint16_t control = 0;
      uint32_t table = 0, pba = 0;
      t.region_read(pcie::vfio::kConfigRegionIndex, at + 2u, &control, 2);
      t.region_read(pcie::vfio::kConfigRegionIndex, at + 4u, &table, 4);
      t.region_read(pcie::vfio::kConfigRegionIndex, at + 8u, &pba, 4);
      cap = {true, (control & 0x7FFu) + 1, table & 7, table & ~7u, pba & 7, pba & ~7u};
      break;
    }
    at = hdr[1];
  }
  return cap;
}

void reset_checks(pcie::VfioTransport& t, const std::string& method, const std::function<bool()>& was_reset,
                  const std::string& what) {
  const std::string attr = "/sys/bus/pci/devices/" + t.bdf() + "/reset_method";
  const std::string methods = sysfs(attr);
  info("reset methods: " + (methods.empty() ? std::string("none") : methods));
  if (!(t.device_info().flags & pcie::vfio::kDeviceFlagReset)) {
    expect_error("no reset offered, refused clearly", "offers no reset", [&] { t.reset(); });
    return;
  }
  if ((" " + methods + " ").find(" " + method + " ") == std::string::npos) {
    check(false, "the function offers no " + method + " reset");
    return;
  }
  std::ofstream(attr) << method << "\n";
  t.reset();
  check(!was_reset || was_reset(), "DEVICE_RESET (" + method + ") " + what);
}

void print_infos(pcie::PciTransport& t) {
  const pcie::DeviceInfo d = t.device_info();
  info("device: flags " + hex(d.flags) + ", " + std::to_string(d.num_regions) + " regions, " +
       std::to_string(d.num_irqs) + " irq indexes");
  for (uint32_t i = 0; i < d.num_regions && i < pcie::vfio::kNumPciRegions; ++i) {
    const pcie::RegionInfo& r = t.region(i);
    if (r.size == 0) continue;
    std::string areas;
    for (const pcie::MmapArea& a : r.mmap_areas) {
      areas += " mmap[" + hex(a.offset) + "+" + hex(a.size) + (a.ptr ? "]" : " unmapped]");
    }
    info("region " + std::to_string(i) + ": flags " + hex(r.flags) + " size " + hex(r.size) + areas);
  }
  for (uint32_t i = 0; i < d.num_irqs && i < pcie::vfio::kNumPciIrqs; ++i) {
    const pcie::IrqInfo q = t.irq_info(i);
    info("irq " + std::to_string(i) + ": flags " + hex(q.flags) + " count " + std::to_string(q.count));
  }
}

}  // namespace guest

namespace {

std::string id_of(const std::string& bdf) {
  const std::string dir = "/sys/bus/pci/devices/" + bdf + "/";
  std::string vendor = guest::sysfs(dir + "vendor"), device = guest::sysfs(dir + "device");
  if (vendor.rfind("0x", 0) == 0) vendor = vendor.substr(2);
  if (device.rfind("0x", 0) == 0) device = device.substr(2);
  return vendor + ":" + device;
}

// True when another function of `bdf`'s IOMMU group is on a driver other than vfio-pci.
bool shares_group_with_a_driver(const std::string& bdf) {
  const std::string dir = "/sys/bus/pci/devices/" + bdf + "/iommu_group/devices";
  DIR* d = ::opendir(dir.c_str());
  if (!d) return false;
  bool shared = false;
  while (dirent* e = ::readdir(d)) {
    const std::string member = e->d_name;
    if (member == "." || member == ".." || member == bdf) continue;
    char target[256] = {};
    const std::string link = "/sys/bus/pci/devices/" + member + "/driver";
    ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
    if (n > 0 && std::strstr(target, "/vfio-pci") == nullptr) shared = true;
  }
  ::closedir(d);
  return shared;
}

}  // namespace

int main(int argc, char** argv) {
  std::vector<std::string> bdfs;
  bool iommu_off = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--iommu-off") == 0) {
      iommu_off = true;
    } else if (std::strcmp(argv[i], "--iommu=type1") == 0) {
      guest::set_iommu_kind(pcie::VfioIommuKind::type1);
    } else if (std::strcmp(argv[i], "--iommu=iommufd") == 0) {
      guest::set_iommu_kind(pcie::VfioIommuKind::iommufd);
    } else {
      bdfs.emplace_back(argv[i]);
    }
  }
  if (bdfs.empty()) {
    std::printf("usage: vfio_guest_test [--iommu-off | --iommu=type1|iommufd] BDF...\n");
    return 2;
  }
  std::string viable_edu;
  for (const std::string& bdf : bdfs) {
    const std::string id = id_of(bdf);
    std::printf("== %s (%s)\n", bdf.c_str(), id.c_str());
    try {
      if (iommu_off) {
        guest::iommu_off_checks(bdf);
      } else if (id == "1234:11e8" && shares_group_with_a_driver(bdf)) {
        guest::edu_in_shared_group_checks(bdf);
      } else if (id == "1234:11e8") {
        guest::edu_checks(bdf);
        viable_edu = bdf;
      } else if (id == "8086:10d3") {
        guest::e1000e_checks(bdf);
      } else if (id == "1b36:0010") {
        guest::nvme_checks(bdf);
      } else {
        guest::check(false, bdf + ": no checks for " + id);
      }
    } catch (const std::exception& e) {
      guest::check(false, bdf + ": " + e.what());
    }
  }
  if (!iommu_off) {
    std::printf("== errors\n");
    guest::address_checks();
  }
  if (!viable_edu.empty()) {
    guest::memlock_checks(viable_edu);
    guest::missing_interface_checks(viable_edu);
  }
  std::printf("vfio_guest_test: %d check(s) failed\n", guest::failures());
  return guest::failures() == 0 ? 0 : 1;
}
