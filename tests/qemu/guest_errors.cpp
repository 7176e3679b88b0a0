// The failures a bring-up engineer meets, each one line saying what is wrong and what to
// do: an address that is not one, absent, or not on vfio-pci; RLIMIT_MEMLOCK too low for a
// user without CAP_IPC_LOCK; no IOMMU at all.
#include <dirent.h>
#include <grp.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

#include "driver/backends/vfio/vfio_transport.h"
#include "tests/qemu/guest_test.h"

namespace guest {

void address_checks() {
  using pcie::VfioTransport;
  expect_error("an absent PCI function", "no such PCI function", [] { VfioTransport t("0000:00:1e.7"); });
  expect_error("not a PCI address", "not a PCI address", [] { VfioTransport t("edu"); });
  // 00:1f.0 is q35's ISA bridge, on lpc_ich or no driver: never vfio-pci.
  expect_error("a function on no driver", "bound to no driver, not vfio-pci", [] { VfioTransport t("0000:00:1f.0"); });
  // QEMU's pci-serial, where the guest has one, is on the kernel's serial driver.
  DIR* d = ::opendir("/sys/bus/pci/drivers/serial");
  std::string serial;
  while (dirent* e = d ? ::readdir(d) : nullptr)
    if (std::strchr(e->d_name, ':')) serial = e->d_name;
  if (d) ::closedir(d);
  if (!serial.empty())
    expect_error("a function on another driver", "bound to serial, not vfio-pci; `modprobe vfio-pci; echo vfio-pci >",
                 [&] { VfioTransport t(serial); });
}

// As user nobody with a 64 KiB RLIMIT_MEMLOCK (and so without CAP_IPC_LOCK), in a child
// process: the group opens (its nodes made world-accessible here), MAP_DMA of 1 MiB fails.
void memlock_checks(const std::string& edu_bdf) {
  char target[256] = {};
  const std::string link = "/sys/bus/pci/devices/" + edu_bdf + "/iommu_group";
  const ssize_t n = ::readlink(link.c_str(), target, sizeof target - 1);
  const std::string name = n > 0 ? std::string(target).substr(std::string(target).rfind('/') + 1) : "";
  // Both interfaces' nodes: the container and the group, /dev/iommu and the device's cdev.
  ::chmod("/dev/vfio/vfio", 0666);
  ::chmod(("/dev/vfio/" + name).c_str(), 0666);
  ::chmod("/dev/iommu", 0666);
  if (DIR* d = ::opendir(("/sys/bus/pci/devices/" + edu_bdf + "/vfio-dev").c_str())) {
    while (dirent* e = ::readdir(d))
      if (std::strncmp(e->d_name, "vfio", 4) == 0) ::chmod(("/dev/vfio/devices/" + std::string(e->d_name)).c_str(), 0666);
    ::closedir(d);
  }
  std::fflush(stdout);
  const int failed_before = failures();
  const pid_t child = ::fork();
  if (child == 0) {
    const rlimit limit{64 << 10, 64 << 10};
    if (::setrlimit(RLIMIT_MEMLOCK, &limit) != 0 || ::setgroups(0, nullptr) != 0 || ::setgid(65534) != 0 ||
        ::setuid(65534) != 0) {
      check(false, "dropping to user nobody with a 64 KiB RLIMIT_MEMLOCK");
      std::_Exit(1);
    }
    constexpr size_t kSize = 1 << 20;
    void* mem = ::mmap(nullptr, kSize, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
    expect_error("MAP_DMA of 1 MiB as user nobody under a 64 KiB RLIMIT_MEMLOCK", "RLIMIT_MEMLOCK is 64 KiB: raise it",
                 [&] {
                   pcie::VfioTransport t(edu_bdf, iommu_kind());
                   t.dma_map(mem, kSize, 0x100000, -1, 0);
                 });
    std::_Exit(failures() == failed_before ? 0 : 1);
  }
  int status = 0;
  ::waitpid(child, &status, 0);
  if (!WIFEXITED(status) || WEXITSTATUS(status) != 0) check(false, "the unprivileged child failed (see above)");
}

void missing_interface_checks(const std::string& edu_bdf) {
  using pcie::VfioIommuKind;
  if (::access("/dev/iommu", F_OK) != 0) {
    expect_error("iommufd asked of a kernel without it", "this kernel has no iommufd (CONFIG_IOMMUFD): use type1",
                 [&] { pcie::VfioTransport t(edu_bdf, VfioIommuKind::iommufd); });
  } else {
    pcie::VfioTransport t(edu_bdf, VfioIommuKind::automatic);
    check(std::string(t.iommu_name()) == "iommufd", std::string("a kernel with iommufd opens through it: ") + t.iommu_name());
  }
}

void iommu_off_checks(const std::string& bdf) {
  expect_error("a function without an IOMMU", "the IOMMU is off", [&] { pcie::VfioTransport t(bdf, iommu_kind()); });
}

}  // namespace guest
