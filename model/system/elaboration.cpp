#include "model/system/elaboration.h"

#include <cstdlib>
#include <stdexcept>
#include <string>

#include <systemc>

#include "model/device/rtl_blocks.h"

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
  return device::make_rtl_formatter(d);
}

device::CqWriterFactory make_cq_writer(const device::DeviceConfig& d, FormatterFactory formatter) {
  if (d.cq_writer == device::CqWriterKind::tlm) {
    if (!formatter) formatter = [d] { return make_formatter(d); };
    return [cycles = d.cycles, formatter, main_first = d.cqe_main_half_first](device::CqWriterPort& port) {
      return std::make_unique<device::TlmCqWriter>(port, cycles, formatter(), main_first);
    };
  }
  if (formatter) throw std::invalid_argument("device.cq_writer: rtl formats with its own RTL formatter");
  return device::make_rtl_cq_writer(d);
}

}  // namespace irdma_sim::system
