// model/device/rtl_blocks.h: the Verilated blocks standing in for the model's.
#include "model/device/rtl_blocks.h"

#include <stdexcept>

#include "model/device/cq_lockstep.h"
#include "rtl_bridge/rtl_cq_writer.h"
#include "rtl_bridge/rtl_cqe_formatter.h"

namespace irdma_sim::device {

namespace {
uint64_t clock_period_ps(const DeviceConfig& d) { return uint64_t(1e6 / d.clock_mhz + 0.5); }
}  // namespace

std::unique_ptr<CqeFormatter> make_rtl_formatter(const DeviceConfig& d) {
  auto rtl = std::make_unique<rtl::RtlCqeFormatter>();
  if (!d.rtl_vcd.empty()) rtl->enable_vcd(d.rtl_vcd, clock_period_ps(d));
  return rtl;
}

CqWriterFactory make_rtl_cq_writer(const DeviceConfig& d) {
  if (d.max_cq > rtl::RtlCqWriter::kMaxCqs)
    throw std::invalid_argument("device.cq_writer: rtl holds " + std::to_string(rtl::RtlCqWriter::kMaxCqs) +
                                " CQ contexts; this device has " + std::to_string(d.max_cq));
  const auto timing = d.cq_writer_timing == CqWriterTiming::model ? rtl::RtlCqWriter::Timing::model
                                                                  : rtl::RtlCqWriter::Timing::rtl;
  return [d, timing](CqWriterPort& port) {
    const auto make_rtl = [&](CqWriterPort& dut_port) {
      auto rtl = std::make_unique<rtl::RtlCqWriter>(dut_port, timing, d.cycles, d.rtl_toggle_coverage);
      if (!d.rtl_vcd.empty()) rtl->enable_vcd(d.rtl_vcd, clock_period_ps(d));
      return rtl;
    };
    return std::make_unique<LockstepCqWriter>(port, make_rtl, d.cycles, "RTL");
  };
}

std::optional<RtlCoverage> write_rtl_coverage(CqWriter& writer, const std::string& path) {
  auto* rtl = dynamic_cast<rtl::RtlCqWriter*>(&writer);
  if (!rtl) return std::nullopt;
  const rtl::RtlCqWriter::Coverage c = rtl->write_coverage(path);
  return RtlCoverage{c.line_hit, c.line_total, c.toggle_hit, c.toggle_total};
}

}  // namespace irdma_sim::device
