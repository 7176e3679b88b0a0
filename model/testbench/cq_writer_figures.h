// What a run's report says of an RTL CQ writer in the loop (report.json's "cq_writer"):
// how its time was charged, the requests the lock-step scoreboard compared, the timing
// correlation of its cycles against the model's stage costs per kind of request, and
// Verilator's line and toggle coverage of the block (written beside the report as
// rtl_coverage.dat). Absent for the TLM writer, whose runs' reports stay as they were.
#pragma once

#include <cstdint>
#include <string>

#include "model/device/cq_lockstep.h"
#include "model/device/device_config.h"
#include "model/testbench/json_writer.h"

namespace irdma_sim::testbench {

struct CqWriterFigures {
  device::CqWriterTiming timing = device::CqWriterTiming::rtl;
  uint64_t requests = 0;
  device::CqCorrelation correlation;
  uint64_t line_hit = 0, line_total = 0, toggle_hit = 0, toggle_total = 0;
  std::string coverage_file;   // the .dat, by its name in the run's directory ("": none)
  std::string coverage_error;  // why it could not be written
};

void write_cq_writer(JsonWriter& j, const CqWriterFigures& f);

}  // namespace irdma_sim::testbench
