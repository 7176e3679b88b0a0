// The DeviceBackdoor as a device-specific PCI region (VFIO region index 9 and up), the way a
// served model offers its test hooks to a driver in another process. Layout (this project's):
//   0x000  DeviceCounters, read-only: its uint64_t fields in declaration order
//   0x800  fault: write one BackdoorFault; a refusal is the write's error (EINVAL)
//   0x900  force MSI-X: write the vector as a uint32_t
#pragma once

#include <cstdint>

#include "driver/backends/device_backdoor.h"

namespace backends {

inline constexpr uint32_t kBackdoorRegionIndex = 9;
inline constexpr uint64_t kBackdoorRegionSize = 4096;
inline constexpr uint64_t kBackdoorCounters = 0x000;
inline constexpr uint64_t kBackdoorFault = 0x800;
inline constexpr uint64_t kBackdoorForceMsix = 0x900;

struct BackdoorFault {
  uint32_t qp;
  uint16_t flush_minor;
  uint16_t reserved;
  uint64_t nth_request;
};
static_assert(sizeof(BackdoorFault) == 16);
static_assert(sizeof(DeviceCounters) % 8 == 0 && sizeof(DeviceCounters) <= kBackdoorFault);

}  // namespace backends
