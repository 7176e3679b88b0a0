#include "model/testbench/coverage_report.h"

#include <cmath>

#include "model/testbench/json_writer.h"

namespace irdma_sim::testbench {
namespace {

double percent(size_t covered, size_t reachable) {
  return reachable ? std::round(1000.0 * double(covered) / double(reachable)) / 10.0 : 100.0;
}

JsonWriter& bin_values(JsonWriter& j, const trace::CoverGroup& g, size_t index) {
  j.begin_array("bin");
  const std::vector<unsigned> at = g.values_of(index);
  for (size_t a = 0; a < at.size(); a++) j.str(nullptr, g.axes[a].values[at[a]]);
  return j.end_array();
}

}  // namespace

std::string coverage_json(const trace::Coverage& coverage, bool device_seen) {
  JsonWriter j;
  j.begin_object().begin_array("groups");
  size_t all_covered = 0, all_reachable = 0;
  for (size_t gi = 0; gi < trace::kCoverGroups; gi++) {
    const trace::CoverGroup& g = trace::cover_groups()[gi];
    const std::vector<uint64_t>& hits = coverage.hits(trace::Cover(gi));
    const bool observed = device_seen || !g.device;
    j.begin_object().str("name", g.name).str("description", g.what).boolean("observed", observed);
    j.begin_array("axes");
    for (const trace::CoverAxis& a : g.axes) {
      j.begin_object().str("name", a.name).begin_array("values");
      for (const char* v : a.values) j.str(nullptr, v);
      j.end_array().end_object();
    }
    j.end_array().begin_array("bins");
    size_t covered = 0, reachable = 0;
    for (size_t b = 0; b < hits.size(); b++) {
      j.begin_object();
      bin_values(j, g, b);
      if (const char* why = g.unreachable_because(b)) {
        j.str("unreachable", why);
      } else {
        j.num("hits", hits[b]);
        reachable++;
        covered += hits[b] != 0;
      }
      j.end_object();
    }
    j.end_array();
    if (observed) {
      j.num("covered", covered).num("reachable", reachable).real("percent", percent(covered, reachable));
      all_covered += covered;
      all_reachable += reachable;
    }
    j.end_object();
  }
  j.end_array();
  j.num("covered", all_covered).num("reachable", all_reachable).real("percent", percent(all_covered, all_reachable));
  j.end_object();
  return j.text();
}

}  // namespace irdma_sim::testbench
