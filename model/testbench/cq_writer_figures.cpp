#include "model/testbench/cq_writer_figures.h"

namespace irdma_sim::testbench {

using device::CqCorrelation;
using device::CqCycleStats;

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

}  // namespace irdma_sim::testbench
