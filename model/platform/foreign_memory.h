// Memory the host lends the device without holding it itself: another process's pages,
// which an application registered for the device (ib_umem_get in the device host). Host
// memory maps a range of it at IOVAs of its own; the device's accesses there become
// copies to and from its owner.
#pragma once

#include <cstddef>
#include <cstdint>

namespace irdma_sim::platform {

class ForeignMemory {
 public:
  virtual ~ForeignMemory() = default;
  // False when the owner's memory does not take the access (gone, unmapped, or the owner
  // itself gone).
  virtual bool read(uint64_t addr, void* dst, size_t len) = 0;
  // `len` > 8: the last 8 bytes land after the others, as a device's write of a descriptor
  // whose valid qword ends it must be seen.
  virtual bool write(uint64_t addr, const void* src, size_t len) = 0;
};

}  // namespace irdma_sim::platform
