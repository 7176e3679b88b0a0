#include "model/testbench/run_command.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <iostream>
#include <stdexcept>

#include "model/testbench/yaml_reader.h"

namespace irdma_sim::testbench {

bool take_run_argument(int argc, char** argv, int& i, RunCommand& cmd, std::string& error) {
  const std::string a = argv[i];
  const bool has_value = i + 1 < argc;
  if (a == "--out") {
    if (!has_value) error = "--out needs a directory";
    else cmd.out = argv[++i];
  } else if (a == "--seed") {
    if (!has_value) {
      error = "--seed needs a number";
      return true;
    }
    const char* s = argv[++i];
    char* end = nullptr;
    errno = 0;
    const unsigned long long seed = std::strtoull(s, &end, 0);
    if (!*s || *end || *s == '-' || errno) error = std::string("--seed must be a number in [0, 2^64), got '") + s + "'";
    else cmd.options.seed = seed;
  } else if (a == "--backend") {
    if (!has_value) error = "--backend needs sim, vfio-user, vfio-user:SOCKET or vfio:DDDD:BB:DD.F";
    else cmd.options.backend = argv[++i];
  } else if (a == "--no-trace") {
    cmd.options.trace = false;
  } else if (a == "--trace-format") {
    const std::string f = has_value ? argv[++i] : "";
    if (f == "bin") cmd.options.trace_format = trace::TraceLog::Format::binary;
    else if (f == "jsonl") cmd.options.trace_format = trace::TraceLog::Format::jsonl;
    else error = "--trace-format must be bin (trace.bin) or jsonl (trace.jsonl), got '" + f + "'";
  } else if (a == "--record") {
    cmd.options.record = true;
  } else if (a == "--progress") {
    cmd.progress_lines = true;
  } else if (a == "--cq-writer") {
    try {
      choose_cq_writer(has_value ? argv[++i] : "", cmd.options.cq_writer, cmd.options.cq_writer_timing);
    } catch (const std::invalid_argument& e) {
      error = std::string("--cq-writer: ") + e.what();
    }
  } else if (cmd.scenario.empty() && !a.empty() && a[0] != '-') {
    cmd.scenario = a;
  } else {
    return false;
  }
  return true;
}

int usage_error(const char* program, const char* usage, const std::string& what) {
  std::cerr << program << ": " << what << "\n" << usage << "\n";
  return 2;
}

int run_command(const char* program, const char* usage, RunCommand cmd, const BackendFactory& make_backend) {
  if (cmd.scenario.empty()) return usage_error(program, usage, "no scenario given");
  if (cmd.out.empty()) return usage_error(program, usage, "no output directory given (--out DIR)");
  const bool tty = !cmd.progress_lines && isatty(STDERR_FILENO);
  if (cmd.progress_lines)
    cmd.options.progress = [](const RunProgress& p) { std::cout << "progress " << p.line() << std::endl; };
  else if (tty)
    cmd.options.progress = [](const RunProgress& p) { std::cerr << "\r\033[K" << p.line() << std::flush; };
  try {
    const RunResult r = run_scenario(cmd.scenario, cmd.out, cmd.options, make_backend);
    if (tty) std::cerr << "\r\033[K" << std::flush;
    std::cout << (r.interrupted_by ? "INTERRUPTED " : r.passed ? "PASSED " : "FAILED ") << r.report_path << "\n";
    // A failure in a log (CTest's, CI's) says what failed, not only where the report is.
    for (const Check& c : r.failed) std::cerr << program << ": check " << c.name << " failed: " << c.detail << "\n";
    return r.interrupted_by ? 128 + r.interrupted_by : r.passed ? 0 : 1;
  } catch (const ScenarioError& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 2;
  } catch (const std::invalid_argument& e) {
    return usage_error(program, usage, e.what());
  } catch (const std::exception& e) {
    std::cerr << program << ": " << e.what() << "\n";
    return 3;
  }
}

}  // namespace irdma_sim::testbench
