#include "driver/backends/vfio/vfio_util.h"

#include <dirent.h>
#include <limits.h>
#include <sys/resource.h>
#include <unistd.h>

#include <cerrno>

namespace pcie::vfio_util {

std::string link_basename(const std::string& path) {
  char buf[PATH_MAX];
  ssize_t n = ::readlink(path.c_str(), buf, sizeof buf - 1);
  if (n < 0) return "";
  buf[n] = '\0';
  const char* slash = std::strrchr(buf, '/');
  return slash ? slash + 1 : buf;
}

std::vector<std::string> list_dir(const std::string& path) {
  std::vector<std::string> names;
  if (DIR* d = ::opendir(path.c_str())) {
    while (dirent* e = ::readdir(d)) {
      if (e->d_name[0] != '.') names.emplace_back(e->d_name);
    }
    ::closedir(d);
  }
  return names;
}

std::string group_members_on_other_drivers(const std::string& group) {
  std::string others;
  for (const std::string& member : list_dir("/sys/kernel/iommu_groups/" + group + "/devices")) {
    const std::string drv = link_basename("/sys/bus/pci/devices/" + member + "/driver");
    if (drv != "vfio-pci" && !drv.empty()) others += " " + member + " (" + drv + ")";
  }
  return others;
}

std::string not_viable(const std::string& where, const std::string& group) {
  const std::string others = group_members_on_other_drivers(group);
  return where + ": IOMMU group " + group + " is not viable: every function in it must be on vfio-pci or driverless; rebind" +
         (others.empty() ? std::string(" the others") : others);
}

std::string map_error(const std::string& where, uint64_t size, uint64_t iova, int e,
                      const std::vector<IovaRange>& ranges) {
  std::string what = where + ": MAP_DMA of " + hex(size) + " bytes at IOVA " + hex(iova) + ": " + errno_text(e);
  if (e == ENOMEM) {
    rlimit limit{};
    ::getrlimit(RLIMIT_MEMLOCK, &limit);
    what += limit.rlim_cur == RLIM_INFINITY
                ? "; out of memory"
                : "; RLIMIT_MEMLOCK is " + std::to_string(limit.rlim_cur / 1024) +
                      " KiB: raise it (`ulimit -l`, limits.conf) or run with CAP_IPC_LOCK";
  } else if (e == EEXIST || e == EADDRINUSE) {
    what += "; it overlaps an IOVA already mapped";
  } else if (e == EINVAL || e == ENOENT) {
    what += "; the IOVA and size must be page aligned and inside the IOMMU's ranges:";
    for (const IovaRange& r : ranges) what += " [" + hex(r.start) + ", " + hex(r.last) + "]";
  } else if (e == ENOSPC) {
    what += "; the IOMMU takes no more mappings: map larger blocks";
  } else if (e == EFAULT) {
    what += "; the CPU address is not mapped memory of this process";
  }
  return what;
}

}  // namespace pcie::vfio_util
