// coverage.json: a run's functional coverage, group by group, every bin with its hits or
// the reason it cannot be reached, the holes listed and a percentage of what can be.
#pragma once

#include <string>

#include "model/trace/coverage.h"

namespace irdma_sim::testbench {

// `device_seen`: the device's groups were observed (the device ran in this process); when
// not, they are reported as unobserved and left out of the totals.
std::string coverage_json(const trace::Coverage& coverage, bool device_seen);

}  // namespace irdma_sim::testbench
