#include "model/system/cq_writer_report.h"

#include <filesystem>

#include "model/device/cq_lockstep.h"
#include "model/device/rtl_blocks.h"

namespace irdma_sim::system {

std::optional<testbench::CqWriterFigures> cq_writer_figures(device::CqWriter& writer, device::CqWriterTiming timing,
                                                 const std::string& out_dir) {
  auto* lockstep = dynamic_cast<device::LockstepCqWriter*>(&writer);
  if (!lockstep) return std::nullopt;
  testbench::CqWriterFigures f;
  f.timing = timing;
  f.requests = lockstep->requests();
  f.correlation = lockstep->correlation();
  try {
    if (const auto c = device::write_rtl_coverage(lockstep->dut(),
                                                  (std::filesystem::path(out_dir) / "rtl_coverage.dat").string())) {
      f.coverage_file = "rtl_coverage.dat";
      f.line_hit = c->line_hit;
      f.line_total = c->line_total;
      f.toggle_hit = c->toggle_hit;
      f.toggle_total = c->toggle_total;
    }
  } catch (const std::runtime_error& e) {
    f.coverage_error = e.what();
  }
  return f;
}

}  // namespace irdma_sim::system
