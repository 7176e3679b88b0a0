// irdma-sim-run SCENARIO --out DIR [--seed N] [--no-trace] [--record] [--backend sim|vfio-user|vfio-user:SOCKET|vfio:BDF]
//               [--cq-writer tlm|rtl|rtl:model]
// irdma-sim-run --replay RUN_DIR [--formatter tlm|rtl] [--cq-writer tlm|rtl|rtl:model] [--flip-cqe-bit N]
// Runs one scenario from this process and writes its outputs. Exit status: 0 every check
// passed, 1 a check failed, 2 bad usage or a malformed scenario, 3 the simulation failed,
// 128 + the signal when SIGINT or SIGTERM cut the run short (its outputs are whole).
// A replay (replay.h) exits 0 when the device's writes are the recording's, 1 when they
// differ (the first difference on stderr), 2 when RUN_DIR cannot be replayed.
#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

#include <systemc>

#include "model/system/replay.h"
#include "model/system/run_scenario.h"
#include "model/system/yaml_reader.h"

namespace {

constexpr const char* kUsage =
    "usage: irdma-sim-run SCENARIO --out DIR [--seed N] [--no-trace] [--record] [--backend sim|vfio-user|vfio-user:SOCKET|vfio:DDDD:BB:DD.F] [--cq-writer tlm|rtl|rtl:model] [--version]\n"
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
  } catch (const irdma_sim::system::ScenarioError& e) {
    std::cerr << "irdma-sim-run --replay: " << e.what() << "\n";
    return 2;
  } catch (const std::exception& e) {
    std::cerr << "irdma-sim-run --replay: " << e.what() << "\n";
    return 2;
  }
}

int usage_error(const std::string& what) {
  std::cerr << "irdma-sim-run: " << what << "\n" << kUsage << "\n";
  return 2;
}

}  // namespace

int sc_main(int argc, char** argv) {
  std::string scenario, out, replay_dir;
  irdma_sim::system::RunOptions options;
  irdma_sim::system::ReplayOptions replay_options;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    const bool has_value = i + 1 < argc;
    if (a == "--version") {
      std::cout << "irdma-sim-run " IRDMA_SIM_VERSION "\n";
      return 0;
    } else if (a == "--out") {
      if (!has_value) return usage_error("--out needs a directory");
      out = argv[++i];
    } else if (a == "--seed") {
      if (!has_value) return usage_error("--seed needs a number");
      const char* s = argv[++i];
      char* end = nullptr;
      errno = 0;
      const unsigned long long seed = std::strtoull(s, &end, 0);
      if (!*s || *end || *s == '-' || errno)
        return usage_error(std::string("--seed must be a number in [0, 2^64), got '") + s + "'");
      options.seed = seed;
    } else if (a == "--backend") {
      if (!has_value) return usage_error("--backend needs sim, vfio-user, vfio-user:SOCKET or vfio:DDDD:BB:DD.F");
      options.backend = argv[++i];
    } else if (a == "--no-trace") {
      options.trace = false;
    } else if (a == "--record") {
      options.record = true;
    } else if (a == "--replay") {
      if (!has_value) return usage_error("--replay needs a run's output directory");
      replay_dir = argv[++i];
    } else if (a == "--formatter") {
      const std::string f = has_value ? argv[++i] : "";
      if (f != "tlm" && f != "rtl") return usage_error("--formatter is tlm or rtl");
      replay_options.formatter = f == "tlm" ? irdma_sim::device::FormatterKind::tlm : irdma_sim::device::FormatterKind::rtl;
    } else if (a == "--cq-writer") {
      try {
        irdma_sim::system::choose_cq_writer(has_value ? argv[++i] : "", options.cq_writer, options.cq_writer_timing);
      } catch (const std::invalid_argument& e) {
        return usage_error(std::string("--cq-writer: ") + e.what());
      }
      replay_options.cq_writer = options.cq_writer;
      replay_options.cq_writer_timing = options.cq_writer_timing;
    } else if (a == "--flip-cqe-bit") {
      const char* s = has_value ? argv[++i] : "";
      char* end = nullptr;
      const long bit = std::strtol(s, &end, 10);
      if (!*s || *end || bit < 0 || bit > 255) return usage_error("--flip-cqe-bit takes a bit of a CQE half, 0 to 255");
      replay_options.flip_cqe_bit = int(bit);
    } else if (scenario.empty() && !a.empty() && a[0] != '-') {
      scenario = a;
    } else {
      return usage_error("unexpected argument '" + a + "'");
    }
  }
  if (!replay_dir.empty()) {
    if (!scenario.empty() || !out.empty()) return usage_error("--replay takes a run's directory, no scenario or --out");
    if (options.seed || options.backend != "sim" || !options.trace || options.record)
      return usage_error("--seed, --backend, --no-trace and --record go with a run, not --replay");
    return replay(replay_dir, replay_options);
  }
  if (replay_options.formatter || replay_options.flip_cqe_bit >= 0)
    return usage_error("--formatter and --flip-cqe-bit go with --replay");
  if (scenario.empty()) return usage_error("no scenario given");
  if (out.empty()) return usage_error("no output directory given (--out DIR)");
  const bool tty = isatty(STDERR_FILENO);
  if (tty)
    options.progress = [](const irdma_sim::system::RunProgress& p) { std::cerr << "\r\033[K" << p.line() << std::flush; };
  try {
    const auto r = irdma_sim::system::run_scenario(scenario, out, options);
    if (tty) std::cerr << "\r\033[K" << std::flush;
    std::cout << (r.interrupted_by ? "INTERRUPTED " : r.passed ? "PASSED " : "FAILED ") << r.report_path << "\n";
    // A failure in a log (CTest's, CI's) says what failed, not only where the report is.
    for (const auto& c : r.failed) std::cerr << "irdma-sim-run: check " << c.name << " failed: " << c.detail << "\n";
    return r.interrupted_by ? 128 + r.interrupted_by : r.passed ? 0 : 1;
  } catch (const irdma_sim::system::ScenarioError& e) {
    std::cerr << "irdma-sim-run: " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    return usage_error(e.what());
  } catch (const std::exception& e) {
    std::cerr << "irdma-sim-run: " << e.what() << "\n";
    return 3;
  }
}
