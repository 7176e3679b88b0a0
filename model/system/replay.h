// Replay: a recorded run's host side (stimulus.jsonl: its MMIO at the times it was issued,
// the bytes host memory gave the device's reads) re-driven into the device alone, behind
// the same link; every write and MSI-X the device makes is checked against the recording's,
// in order, and the first difference stops the replay. What RTL or model changes are
// checked with against a golden run, without the driver.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "model/device/device_config.h"

namespace irdma_sim::system {

struct ReplayOptions {
  // In place of the recorded run's.
  std::optional<device::FormatterKind> formatter;
  std::optional<device::CqWriterKind> cq_writer;
  std::optional<device::CqWriterTiming> cq_writer_timing;
  int flip_cqe_bit = -1;  // 0-255: a deliberately changed device, every CQE's main half with this bit flipped
};

struct ReplayResult {
  bool identical = true;
  std::string difference;  // the first, said in full; empty when identical
  uint64_t mmio = 0, reads = 0, writes = 0, msix = 0;  // what the replay drove and compared
  // A recording a killed run left: the line it stopped in. Compared up to there, and what
  // the device does past it is not held against it.
  uint64_t cut_at_line = 0;
};

// Throws ScenarioError (RUN_DIR lacks what replay needs, or its scenario no longer loads)
// and std::runtime_error (a malformed stimulus.jsonl, naming its line).
ReplayResult replay_run(const std::string& run_dir, const ReplayOptions& options);

}  // namespace irdma_sim::system
