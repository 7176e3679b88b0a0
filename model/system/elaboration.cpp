#include "model/system/elaboration.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <systemc>

#ifdef IRDMA_SIM_HAVE_RTL
#include "model/device/cq_lockstep.h"
#include "rtl_bridge/rtl_cq_writer.h"
#include "rtl_bridge/rtl_cqe_formatter.h"
#endif

namespace irdma_sim::system {

#ifdef IRDMA_SIM_HAVE_RTL
namespace {
uint64_t clock_period_ps(const device::DeviceConfig& d) { return uint64_t(1e6 / d.clock_mhz + 0.5); }
}  // namespace
#endif

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
  if (!d.rtl_vcd.empty()) rtl->enable_vcd(d.rtl_vcd, clock_period_ps(d));
  return rtl;
#else
  throw std::invalid_argument("device.formatter: rtl needs a build with IRDMA_SIM_RTL=ON");
#endif
}

device::CqWriterFactory make_cq_writer(const device::DeviceConfig& d, FormatterFactory formatter) {
  if (d.cq_writer == device::CqWriterKind::tlm) {
    if (!formatter) formatter = [d] { return make_formatter(d); };
    return [cycles = d.cycles, formatter, main_first = d.cqe_main_half_first](device::CqWriterPort& port) {
      return std::make_unique<device::TlmCqWriter>(port, cycles, formatter(), main_first);
    };
  }
#ifdef IRDMA_SIM_HAVE_RTL
  if (d.max_cq > rtl::RtlCqWriter::kMaxCqs)
    throw std::invalid_argument("device.cq_writer: rtl holds " + std::to_string(rtl::RtlCqWriter::kMaxCqs) +
                                " CQ contexts; this device has " + std::to_string(d.max_cq));
  if (formatter) throw std::invalid_argument("device.cq_writer: rtl formats with its own RTL formatter");
  const auto timing = d.cq_writer_timing == device::CqWriterTiming::model ? rtl::RtlCqWriter::Timing::model
                                                                          : rtl::RtlCqWriter::Timing::rtl;
  return [d, timing](device::CqWriterPort& port) {
    const auto make_rtl = [&](device::CqWriterPort& dut_port) {
      auto rtl = std::make_unique<rtl::RtlCqWriter>(dut_port, timing, d.cycles, d.rtl_toggle_coverage);
      if (!d.rtl_vcd.empty()) rtl->enable_vcd(d.rtl_vcd, clock_period_ps(d));
      return rtl;
    };
    return std::make_unique<device::LockstepCqWriter>(port, make_rtl, d.cycles, "RTL");
  };
#else
  throw std::invalid_argument("device.cq_writer: rtl needs a build with IRDMA_SIM_RTL=ON");
#endif
}

}  // namespace irdma_sim::system
