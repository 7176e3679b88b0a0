// What the kernel VFIO files share: sysfs lookups, capability chains and the one-line
// explanations of the errors both IOMMU interfaces give. Internal to driver/backends/vfio.
#pragma once

#include <linux/vfio.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "driver/backends/hex.h"
#include "driver/backends/pci_transport.h"

namespace pcie::vfio_util {

using backends::hex;
inline std::string errno_text(int e) { return std::strerror(e); }

// The last component of a sysfs symlink's target ("vfio-pci", "3"), or "" where none.
std::string link_basename(const std::string& path);
std::vector<std::string> list_dir(const std::string& path);  // without . and ..

// The group's functions on drivers other than vfio-pci, " 0000:3b:00.1 (ice)" each.
std::string group_members_on_other_drivers(const std::string& group);
// The message for a group with such functions.
std::string not_viable(const std::string& where, const std::string& group);

// MAP_DMA's (or IOAS_MAP's) failure `e`, said with what to do about it.
std::string map_error(const std::string& where, uint64_t size, uint64_t iova, int e,
                      const std::vector<IovaRange>& ranges);

// Walks a VFIO capability chain inside `buf` (offsets from its start), calling
// visit(id, version, offset) for each; stops on an offset that leaves the buffer.
template <typename Visit>
void walk_caps(const std::vector<uint8_t>& buf, uint32_t first, Visit visit) {
  uint32_t at = first;
  for (int guard = 0; at != 0 && guard < 64; ++guard) {
    if (at < sizeof(uint32_t) || at + sizeof(vfio_info_cap_header) > buf.size()) return;
    vfio_info_cap_header h;
    std::memcpy(&h, buf.data() + at, sizeof h);
    visit(h.id, h.version, at);
    at = h.next;
  }
}

template <typename T>
bool load_at(const std::vector<uint8_t>& buf, size_t at, T& out) {
  if (at + sizeof(T) > buf.size()) return false;
  std::memcpy(&out, buf.data() + at, sizeof(T));
  return true;
}

}  // namespace pcie::vfio_util
