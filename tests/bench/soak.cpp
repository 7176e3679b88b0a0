// The soak: many completions over many CQs while every kind of fault strikes at random, the
// whole run checked as any scenario run is, the process's memory watched as it goes.
//   irdma-sim-soak [COMPLETIONS] [PAIRS] [OUT] [SEED]   (bad arguments: usage, exit 2)
// COMPLETIONS (default 10^7) over PAIRS loopback RC pairs (default 500), each QP with a CQ
// of its own (1000 CQs) on four vectors, consumed through interrupts. Faults: the link's
// (posted writes held and split, so extended CQEs' main halves, written first, land before
// their extended halves; MSI-X lost, duplicated and late: the driver's watchdog
// recovers; vectors masked by the host: the device holds their messages; WQE fetches and
// arm reads refused: a QP in error, a CQ lost and its pair torn down), failed requests
// on a tenth of the pairs (a code each, drawn at a rate that strikes mid-run) and a CQ too
// small for its traffic on a few more (overflow, CQ error, the pair torn down). OUT (default /tmp/irdma-sim-soak) gets soak.yaml, report.json and
// completions.jsonl. Prints the resident set at every progress report and its growth from a
// quarter of the run to the end; exits 0 when every check held and it grew under 10 %.
#include <sys/resource.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include <systemc>

#include "model/system/run_scenario.h"
#include "model/testbench/scenario.h"

namespace {

using namespace irdma_sim::system;
using namespace irdma_sim::testbench;

constexpr uint64_t kSmallPairs = 4;  // CQs too small for their traffic

// Under AddressSanitizer the resident set is its quarantine of freed memory filling up, not
// the run's: reported, not judged.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kRssIsTheSanitizers = true;
#else
constexpr bool kRssIsTheSanitizers = false;
#endif

long resident_kb() {
  std::ifstream statm("/proc/self/statm");
  long size = 0, resident = 0;
  statm >> size >> resident;
  return resident * (sysconf(_SC_PAGESIZE) / 1024);
}

std::string soak_scenario(uint64_t completions, uint64_t pairs) {
  // A message is a send and a receive completion, both ways round a pair; 5 % more for the
  // pairs torn down on the way.
  const uint64_t sends = std::max<uint64_t>(1, completions * 21 / (80 * pairs));
  const uint64_t faulted = std::max<uint64_t>(1, pairs / 10);
  const uint64_t queues = 2 * (pairs + kSmallPairs) + 16;
  const char* const codes[] = {"general_err", "prot_err", "rem_access_err", "loc_qp_op_err", "rem_op_err",
                               "loc_len_err", "fatal_err", "retry_exc_err"};
  std::string s = "name: soak\nseed: 1\nconfig:\n"
                  "  device: {max_qp: " + std::to_string(queues) + ", max_cq: " + std::to_string(queues) +
                  ", num_ceqs: 4, cqe_main_half_first: true}\n"
                  "  driver: {eq_watchdog_us: 50}\n"
                  "  host: {cpus: 4, memory_mb: " + std::to_string(std::max<uint64_t>(1024, pairs * 4)) + "}\n"
                  "  link:\n    faults: {posted_delay_rate: 0.001, posted_delay_max_ns: 3000, split_rate: 0.01,\n"
                  "             msix_lost_rate: 0.002, msix_duplicated_rate: 0.002, msix_delayed_rate: 0.002,\n"
                  "             msix_mask_rate: 0.002, wqe_read_error_rate: 0.00003, shadow_read_error_rate: 0.000005}\n"
                  "qp_pairs:\n"
                  "  - {name: p, count: " + std::to_string(pairs) + ", cq: own, cq_vector: -1, sq_depth: 16, rq_depth: 16}\n"
                  "  - {name: small, count: " + std::to_string(kSmallPairs) + ", cq: own, cq_entries: 8, sq_depth: 16, rq_depth: 16}\n"
                  "traffic: {sends_per_qp: " + std::to_string(sends) +
                  ", min_bytes: 1, max_bytes: 64, batch: 4, imm_every: 3, solicited_every: 4}\nfaults:\n";
  for (uint64_t i = 0; i < faulted; i++)
    s += "  - {pair: p" + std::to_string(i * (pairs / faulted)) + ", side: " + (i % 2 ? "b" : "a") + ", rate: " +
         std::to_string(std::min(1.0, 2.0 / double(sends))) + ", code: " + codes[i % std::size(codes)] + "}\n";
  return s;
}

}  // namespace

int sc_main(int argc, char** argv) {
  const char* const usage_text = "usage: irdma-sim-soak [COMPLETIONS >= 1000] [PAIRS >= 10] [OUT] [SEED]\n";
  bool bad = argc > 5;
  const auto arg = [&](int i, uint64_t def, uint64_t min) {
    if (argc <= i) return def;
    char* end = nullptr;
    errno = 0;
    const unsigned long long v = std::strtoull(argv[i], &end, 0);
    if (errno || end == argv[i] || *end || argv[i][0] == '-' || v < min) bad = true;
    return uint64_t(v);
  };
  const uint64_t completions = arg(1, 10'000'000, 1000), pairs = arg(2, 500, 10);
  const std::string out = argc > 3 ? argv[3] : "/tmp/irdma-sim-soak";
  RunOptions options;
  if (argc > 4) options.seed = arg(4, 1, 0);
  if (bad) {
    std::fputs(usage_text, stderr);
    return 2;
  }
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  const std::string path = out + "/soak.yaml";
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  std::ofstream(path) << soak_scenario(completions, pairs);
  if (ec || !std::ifstream(path)) {
    std::fprintf(stderr, "irdma-sim-soak: cannot write %s%s%s\n", path.c_str(), ec ? ": " : "",
                 ec ? ec.message().c_str() : "");
    return 2;
  }

  struct Sample {
    uint64_t completions;
    long rss_kb;
  };
  std::vector<Sample> samples;
  options.trace = false;
  options.progress = [&](const RunProgress& p) {
    samples.push_back({p.completions, resident_kb()});
    std::printf("%s rss_mb=%.0f\n", p.line().c_str(), double(samples.back().rss_kb) / 1024);
    std::fflush(stdout);
  };
  RunResult r;
  try {
    r = run_scenario(path, out, options);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "irdma-sim-soak: %s\n", e.what());
    return 2;
  }
  // From a quarter of the way (setup's allocations done, the rings all touched) to the last
  // report while the traffic ran.
  long quarter_kb = 0, last_kb = 0;
  for (const Sample& s : samples) {
    if (!quarter_kb && s.completions * 4 >= completions) quarter_kb = s.rss_kb;
    last_kb = s.rss_kb;
  }
  const double growth = quarter_kb ? double(last_kb - quarter_kb) / double(quarter_kb) : 0;
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::printf("soak pairs=%llu cqs=%llu report=%s checks=%s rss_quarter_mb=%.0f rss_last_mb=%.0f growth=%.1f%% "
              "peak_rss_mb=%.0f%s\n",
              (unsigned long long)pairs, (unsigned long long)(2 * (pairs + kSmallPairs)), r.report_path.c_str(),
              r.passed ? "passed" : "FAILED", double(quarter_kb) / 1024, double(last_kb) / 1024, growth * 100,
              double(usage.ru_maxrss) / 1024,
              kRssIsTheSanitizers ? " (not judged: AddressSanitizer's quarantine)"
              : quarter_kb        ? ""
                                  : " (too short to watch: no report past a quarter)");
  for (const auto& c : r.failed) std::fprintf(stderr, "irdma-sim-soak: check %s failed: %s\n", c.name.c_str(), c.detail.c_str());
  return r.passed && (growth < 0.10 || kRssIsTheSanitizers) ? 0 : 1;
}
