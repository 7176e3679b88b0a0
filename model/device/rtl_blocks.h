// The model's blocks that also exist as Verilog RTL (rtl_bridge/), as the model asks for
// them: rtl_bridge/rtl_blocks.cpp defines these where the build has the RTL, and
// model/device/no_rtl_blocks.cpp, which refuses, where it does not. The build links one of
// the two (IRDMA_SIM_RTL), so the model never includes what sits above it.
#pragma once

#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "model/device/cq_writer.h"
#include "model/device/cqe_format.h"
#include "model/device/device_config.h"

namespace irdma_sim::device {

// The Verilated CQE formatter, dumping a VCD where the configuration names one. Throws
// std::invalid_argument in a build without the RTL.
std::unique_ptr<CqeFormatter> make_rtl_formatter(const DeviceConfig& d);

// The Verilated CQ writer in lock-step with a TLM twin (LockstepCqWriter). Throws
// std::invalid_argument in a build without the RTL, or for a device with more CQs than the
// RTL has contexts.
CqWriterFactory make_rtl_cq_writer(const DeviceConfig& d);

struct RtlCoverage {
  uint64_t line_hit = 0, line_total = 0;
  uint64_t toggle_hit = 0, toggle_total = 0;
};

// When `writer` is the Verilated CQ writer: writes its Verilator coverage to `path` and
// returns the totals (std::runtime_error when the file cannot be written); nullopt for any
// other writer.
std::optional<RtlCoverage> write_rtl_coverage(CqWriter& writer, const std::string& path);

}  // namespace irdma_sim::device
