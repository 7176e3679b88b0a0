// A run's report.json and coverage.json: what the run was, what it counted and what held.
// The format is a documented contract (model/testbench/README.md): extend it, never break it.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "model/testbench/cq_writer_figures.h"
#include "model/testbench/run_checks.h"
#include "model/trace/coverage.h"

namespace irdma_sim::testbench {

std::string report_json(const Scenario& sc, const SystemCounters& sys, const WorkloadCounters& wl,
                        const std::vector<Check>& checks, const std::vector<std::string>& warnings,
                        bool passed, int interrupted_by, uint64_t interrupted_at_ps, double wall_s,
                        const std::optional<CqWriterFigures>& cq_writer);

// driver_path's bins, from the driver's counts of the paths it took.
void cover_driver_paths(trace::Coverage& coverage, const SystemCounters& sys, const WorkloadCounters& wl);

// Written whole or not at all: a reader never finds half a file.
void write_whole(const std::string& path, const std::string& text);

}  // namespace irdma_sim::testbench
