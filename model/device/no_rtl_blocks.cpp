// rtl_blocks.h in a build without the RTL (IRDMA_SIM_RTL=OFF).
#include <stdexcept>

#include "model/device/rtl_blocks.h"

namespace irdma_sim::device {

std::unique_ptr<CqeFormatter> make_rtl_formatter(const DeviceConfig&) {
  throw std::invalid_argument("device.formatter: rtl needs a build with IRDMA_SIM_RTL=ON");
}

CqWriterFactory make_rtl_cq_writer(const DeviceConfig&) {
  throw std::invalid_argument("device.cq_writer: rtl needs a build with IRDMA_SIM_RTL=ON");
}

std::optional<RtlCoverage> write_rtl_coverage(CqWriter&, const std::string&) { return std::nullopt; }

}  // namespace irdma_sim::device
