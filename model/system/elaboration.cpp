#include "model/system/elaboration.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <systemc>

#ifdef IRDMA_SIM_HAVE_RTL
#include "rtl_bridge/rtl_cqe_formatter.h"
#endif

namespace irdma_sim::system {

void begin_elaboration(const char* what) {
  static bool elaborated = false;
  if (elaborated)
    throw std::logic_error(std::string(what) + ": this process already built a SystemC world (SystemC elaborates once)");
  elaborated = true;
  setenv("SYSTEMC_DISABLE_COPYRIGHT_MESSAGE", "1", 0);
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
}

std::unique_ptr<device::CqeFormatter> make_formatter(const device::DeviceConfig& d) {
  if (d.formatter == device::FormatterKind::tlm) return std::make_unique<device::TlmCqeFormatter>();
#ifdef IRDMA_SIM_HAVE_RTL
  auto rtl = std::make_unique<rtl::RtlCqeFormatter>();
  if (!d.rtl_vcd.empty()) rtl->enable_vcd(d.rtl_vcd, uint64_t(1e6 / d.clock_mhz + 0.5));
  return rtl;
#else
  throw std::invalid_argument("device.formatter: rtl needs a build with IRDMA_SIM_RTL=ON");
#endif
}

}  // namespace irdma_sim::system
