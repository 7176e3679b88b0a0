// irdma-sim-run SCENARIO --out DIR [--seed N] [--no-trace] [--trace-format bin|jsonl] [--record] [--backend sim|vfio-user|vfio-user:SOCKET|vfio:BDF]
//               [--cq-writer tlm|rtl|rtl:model]
// irdma-sim-run --replay RUN_DIR [--formatter tlm|rtl] [--cq-writer tlm|rtl|rtl:model] [--flip-cqe-bit N]
// Runs one scenario from this process and writes its outputs. Exit status: 0 every check
// passed, 1 a check failed, 2 bad usage or a malformed scenario, 3 the simulation failed,
// 128 + the signal when SIGINT or SIGTERM cut the run short (its outputs are whole).
// A replay (replay.h) exits 0 when the device's writes are the recording's, 1 when they
// differ (the first difference on stderr), 2 when RUN_DIR cannot be replayed.
#include <cstdlib>
#include <iostream>
#include <string>

#include <systemc>

#include "model/system/replay.h"
#include "model/system/run_scenario.h"
#include "model/testbench/run_command.h"
#include "model/testbench/yaml_reader.h"

namespace {

constexpr const char* kUsage =
    "usage: irdma-sim-run SCENARIO --out DIR [--seed N] [--no-trace] [--trace-format bin|jsonl] [--record] [--backend sim|vfio-user|vfio-user:SOCKET|vfio:DDDD:BB:DD.F] [--cq-writer tlm|rtl|rtl:model] [--progress] [--version]\n"
    "       irdma-sim-run --replay RUN_DIR [--formatter tlm|rtl] [--cq-writer tlm|rtl|rtl:model] [--flip-cqe-bit N]";

int replay(const std::string& run_dir, const irdma_sim::system::ReplayOptions& options) {
  try {
    const irdma_sim::system::ReplayResult r = irdma_sim::system::replay_run(run_dir, options);
    const std::string counts = std::to_string(r.mmio) + " host accesses driven, " + std::to_string(r.reads) +
                               " reads answered, " + std::to_string(r.writes) + " writes and " + std::to_string(r.msix) +
                               " MSI-X compared";
    if (r.identical) {
      std::cout << "IDENTICAL " << run_dir << ": " << counts;
      if (r.cut_at_line)
        std::cout << " (the recording was cut short at line " << r.cut_at_line << ": nothing after it compared)";
      std::cout << "\n";
      return 0;
    }
    std::cout << "DIFFERS " << run_dir << ": " << r.difference << " (" << counts << " before)\n";
    return 1;
  } catch (const irdma_sim::testbench::ScenarioError& e) {
    std::cerr << "irdma-sim-run --replay: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "irdma-sim-run --replay: " << e.what() << "\n";
    return 2;
  }
}

}  // namespace

int sc_main(int argc, char** argv) {
  using namespace irdma_sim;
  using namespace irdma_sim::system;
  const auto usage = [](const std::string& what) { return testbench::usage_error("irdma-sim-run", kUsage, what); };
  testbench::RunCommand cmd;
  std::string replay_dir, error;
  ReplayOptions replay_options;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--version") {
      std::cout << "irdma-sim-run " IRDMA_SIM_VERSION "\n";
      return 0;
    } else if (a == "--help" || a == "-h") {
      std::cout << kUsage << "\n";
      return 0;
    } else if (a == "--replay") {
      if (!has_value) return usage("--replay needs a run's output directory");
      replay_dir = argv[++i];
    } else if (a == "--formatter") {
      const std::string f = has_value ? argv[++i] : "";
      if (f != "tlm" && f != "rtl") return usage("--formatter is tlm or rtl");
      replay_options.formatter = f == "tlm" ? irdma_sim::device::FormatterKind::tlm : irdma_sim::device::FormatterKind::rtl;
    } else if (a == "--flip-cqe-bit") {
      const char* s = has_value ? argv[++i] : "";
      char* end = nullptr;
      const long bit = std::strtol(s, &end, 10);
      if (!*s || *end || bit < 0 || bit > 255) return usage("--flip-cqe-bit takes a bit of a CQE half, 0 to 255");
      replay_options.flip_cqe_bit = int(bit);
    } else if (!testbench::take_run_argument(argc, argv, i, cmd, error)) {
      return usage("unexpected argument '" + a + "'");
    } else if (!error.empty()) {
      return usage(error);
    }
  }
  const testbench::RunOptions& options = cmd.options;
  if (!replay_dir.empty()) {
    if (!cmd.scenario.empty() || !cmd.out.empty()) return usage("--replay takes a run's directory, no scenario or --out");
    if (options.seed || options.backend != "sim" || !options.trace || options.record ||
        options.trace_format != trace::TraceLog::Format::binary)
      return usage("--seed, --backend, --no-trace, --trace-format and --record go with a run, not --replay");
    replay_options.cq_writer = options.cq_writer;
    replay_options.cq_writer_timing = options.cq_writer_timing;
    return replay(replay_dir, replay_options);
  }
  if (replay_options.formatter || replay_options.flip_cqe_bit >= 0)
    return usage("--formatter and --flip-cqe-bit go with --replay");
  return testbench::run_command("irdma-sim-run", kUsage, cmd, make_backend);
}
