#include "driver/backends/region_backdoor.h"

#include <cerrno>

#include "driver/backends/vfio_user/protocol.h"

namespace backends {

bool RegionBackdoor::has_backdoor_region(pcie::PciTransport& transport) {
  return transport.device_info().num_regions > kBackdoorRegionIndex &&
         transport.region(kBackdoorRegionIndex).size >= kBackdoorRegionSize;
}

DeviceCounters RegionBackdoor::counters() {
  DeviceCounters c;
  transport_.region_read(kBackdoorRegionIndex, kBackdoorCounters, &c, sizeof c);
  return c;
}

bool RegionBackdoor::inject_fault(uint32_t qp, uint64_t nth_request, uint16_t flush_minor) {
  const BackdoorFault f{qp, flush_minor, 0, nth_request};
  try {
    transport_.region_write(kBackdoorRegionIndex, kBackdoorFault, &f, sizeof f);
  } catch (const pcie::vfio_user::VfioUserError& e) {
    if (e.error_no() != EINVAL) throw;
    return false;  // the device refused it
  }
  return true;
}

void RegionBackdoor::force_msix(unsigned vector) {
  const uint32_t v = vector;
  transport_.region_write(kBackdoorRegionIndex, kBackdoorForceMsix, &v, sizeof v);
}

}  // namespace backends
