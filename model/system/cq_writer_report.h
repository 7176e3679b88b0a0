// The figures of the RTL CQ writer in the loop (cq_writer_figures.h), read off the device's
// CQ writer at the end of a run.
#pragma once

#include <optional>
#include <string>

#include "model/device/cq_writer.h"
#include "model/device/device_config.h"
#include "model/testbench/cq_writer_figures.h"

namespace irdma_sim::system {

// The figures of `writer` when it is the RTL in lock-step, its coverage written to
// `out_dir`/rtl_coverage.dat; nullopt for any other writer.
std::optional<testbench::CqWriterFigures> cq_writer_figures(device::CqWriter& writer, device::CqWriterTiming timing,
                                                 const std::string& out_dir);

}  // namespace irdma_sim::system
