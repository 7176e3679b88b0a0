#include "model/system/cq_writer_report.h"

#include <filesystem>

#ifdef IRDMA_SIM_HAVE_RTL
#include "rtl_bridge/rtl_cq_writer.h"
#endif

namespace irdma_sim::system {

using device::CqCorrelation;
using device::CqCycleStats;

std::optional<CqWriterFigures> cq_writer_figures(device::CqWriter& writer, device::CqWriterTiming timing,
                                                 const std::string& out_dir) {
  auto* lockstep = dynamic_cast<device::LockstepCqWriter*>(&writer);
  if (!lockstep) return std::nullopt;
  CqWriterFigures f;
  f.timing = timing;
  f.requests = lockstep->requests();
  f.correlation = lockstep->correlation();
#ifdef IRDMA_SIM_HAVE_RTL
  if (auto* rtl = dynamic_cast<rtl::RtlCqWriter*>(&lockstep->dut())) {
    try {
      const auto c = rtl->write_coverage((std::filesystem::path(out_dir) / "rtl_coverage.dat").string());
      f.coverage_file = "rtl_coverage.dat";
      f.line_hit = c.line_hit;
      f.line_total = c.line_total;
      f.toggle_hit = c.toggle_hit;
      f.toggle_total = c.toggle_total;
    } catch (const std::runtime_error& e) {
      f.coverage_error = e.what();
    }
  }
#endif
  return f;
}

namespace {
double mean(uint64_t sum, uint64_t n) { return n ? double(sum) / double(n) : 0.0; }
}  // namespace

void write_cq_writer(JsonWriter& j, const CqWriterFigures& f) {
  j.begin_object("cq_writer")
      .str("kind", "rtl")
      .str("timing", f.timing == device::CqWriterTiming::rtl ? "rtl" : "model")
      .num("lockstep_requests", f.requests);
  j.begin_array("correlation");
  for (unsigned k = 0; k < CqCorrelation::kKinds; k++) {
    const CqCycleStats& s = f.correlation.kinds[k];
    if (!s.requests) continue;
    j.begin_object()
        .str("request", CqCorrelation::name(CqCorrelation::Kind(k)))
        .num("count", s.requests)
        .real("rtl_cycles_mean", mean(s.dut_cycles, s.requests))
        .num("rtl_cycles_p50", s.dut_quantile(0.5))
        .num("rtl_cycles_p99", s.dut_quantile(0.99))
        .num("rtl_cycles_max", s.dut_max)
        .real("model_cycles_mean", mean(s.model_cycles, s.requests))
        .end_object();
  }
  j.end_array();
  j.begin_object("rtl_coverage")
      .str("file", f.coverage_file)
      .str("error", f.coverage_error)
      .num("line_hit", f.line_hit)
      .num("line_total", f.line_total)
      .num("toggle_hit", f.toggle_hit)
      .num("toggle_total", f.toggle_total)
      .end_object();
  j.end_object();
}

}  // namespace irdma_sim::system
