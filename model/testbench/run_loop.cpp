#include "model/testbench/run_loop.h"

#include <chrono>
#include <filesystem>
#include <memory>

#include "model/testbench/completion_log.h"
#include "model/testbench/coverage_report.h"
#include "model/testbench/run_checks.h"
#include "model/testbench/run_report.h"
#include "model/testbench/scenario.h"
#include "model/testbench/stop_signals.h"
#include "model/testbench/workload.h"
#include "model/testbench/yaml_reader.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::testbench {

void choose_cq_writer(const std::string& choice, std::optional<device::CqWriterKind>& kind,
                      std::optional<device::CqWriterTiming>& timing) {
  if (choice != "tlm" && choice != "rtl" && choice != "rtl:model")
    throw std::invalid_argument("the CQ writer is tlm, rtl or rtl:model, not '" + choice + "'");
  kind = choice == "tlm" ? device::CqWriterKind::tlm : device::CqWriterKind::rtl;
  timing.reset();
  if (choice != "tlm") timing = choice == "rtl" ? device::CqWriterTiming::rtl : device::CqWriterTiming::model;
}

void override_cq_writer(device::DeviceConfig& d, std::optional<device::CqWriterKind> kind,
                        std::optional<device::CqWriterTiming> timing, const std::string& file) {
  if (kind) d.cq_writer = *kind;
  if (timing) d.cq_writer_timing = timing;
  if (const std::string unused = device::unused_rtl_setting(d); !unused.empty())
    throw ScenarioError(file + ": " + unused + " (the CQ writer being the command line's choice)");
}

RunResult run_scenario(const std::string& scenario_path, const std::string& out_dir, const RunOptions& options,
                       const BackendFactory& make_backend) {
  const auto start = std::chrono::steady_clock::now();
  // From the start: a signal while the system is built stops the traffic before it begins.
  const StopSignals signals;
  Scenario sc = load_scenario(scenario_path);
  if (options.seed) sc.seed = *options.seed;
  sc.config.link.faults.seed = sc.seed;
  override_cq_writer(sc.config.device, options.cq_writer, options.cq_writer_timing, sc.file);
  const std::filesystem::path out(out_dir);
  std::error_code ec;
  std::filesystem::create_directories(out, ec);
  if (ec || !std::filesystem::is_directory(out))
    throw std::runtime_error("cannot make the output directory " + out_dir + ": " +
                             (ec ? ec.message() : "a file of that name is in the way"));
  std::string& vcd = sc.config.device.rtl_vcd;
  if (!vcd.empty() && std::filesystem::path(vcd).is_relative()) vcd = (out / vcd).string();
  // Outputs an earlier run left in this directory would pass for this run's.
  std::filesystem::remove(out / "report.json");
  std::filesystem::remove(out / "coverage.json");
  std::filesystem::remove(out / "rtl_coverage.dat");
  // Only a device this run simulates or serves has a log for it: an attached device's server
  // keeps its own, if any, and silicon none.
  const bool trace = options.trace && (options.backend == "sim" || options.backend == "vfio-user");
  // A log an earlier run left in the other format would pass for this run's.
  std::filesystem::remove(out / "trace.bin");
  std::filesystem::remove(out / "trace.jsonl");
  const char* trace_name = options.trace_format == trace::TraceLog::Format::jsonl ? "trace.jsonl" : "trace.bin";
  const std::string trace_path = trace ? (out / trace_name).string() : "";
  // Replay's files are this run's or none (unless the scenario run is that very file).
  std::error_code same_ec;
  const bool scenario_is_the_copy = std::filesystem::equivalent(scenario_path, out / "scenario.yaml", same_ec);
  std::filesystem::remove(out / "stimulus.jsonl");
  if (!scenario_is_the_copy) std::filesystem::remove(out / "scenario.yaml");
  const std::string stimulus_path = options.record ? (out / "stimulus.jsonl").string() : "";
  if (options.record && sc.config.sync != SyncMode::approximate)
    throw ScenarioError(sc.file + ": --record needs sync.mode approximate: a loosely timed device's order of work "
                        "depends on where its quantum falls against the host's accesses, which a replay cannot "
                        "reproduce");
  if (options.record && sc.config.link.faults.any())
    throw ScenarioError(sc.file + ": --record with link.faults: a replay drives the device from the host's side, "
                        "where what the faulty link lost, split or held back cannot be told from the device's doing");
  // Silicon's link is real; a served model's posted writes land, and its interrupts go, as
  // they are issued.
  if (sc.config.link.faults.any() && options.backend.rfind("vfio:", 0) == 0)
    throw ScenarioError(sc.file + ": link.faults need a simulated link: backend " + options.backend +
                        " is silicon");
  if (options.backend != "sim") {
    try {
      check_servable(sc.config);
    } catch (const ScenarioError& e) {
      throw ScenarioError(sc.file + ": " + e.what());
    }
  }
  if (options.record && options.backend != "sim")
    throw ScenarioError(sc.file + ": --record needs the sim backend (the device in this process)");
  if (options.record && options.cq_writer)
    throw ScenarioError(sc.file + ": --record keeps the scenario as it is, not a --cq-writer choice; set "
                        "device.cq_writer in the scenario, or replay with --cq-writer");
  if (options.record && !scenario_is_the_copy)  // what replay builds the device from, whatever becomes of the file
    std::filesystem::copy_file(scenario_path, out / "scenario.yaml", std::filesystem::copy_options::overwrite_existing);
  Backend backend;
  try {
    backend = make_backend(sc.config, options.backend, trace_path, stimulus_path);
  } catch (const ScenarioError& e) {
    throw ScenarioError(sc.file + ": " + e.what());
  }
  Host& host = *backend.host;
  const std::vector<std::string> mismatches = device_mismatches(sc, host.driver(), options.backend != "sim");
  if (!sc.faults.empty() && !host.backdoor())
    throw ScenarioError(sc.file + ": key 'faults': faults on request need a device with a backdoor, and this backend has none");
  CompletionLog completions;
  completions.open((out / "completions.jsonl").string());
  Scoreboard sb(2 * sc.pairs.size());
  auto wl = std::make_unique<Workload>(host, sc, sb, completions);
  wl->set_control({[&] { return signals.caught() != 0; }, options.progress});
  host.run_on_host([&] { wl->run(); });
  if (!wl->limit_error().empty()) throw ScenarioError(sc.file + ": " + wl->limit_error());
  const int interrupted_by = wl->interrupted() ? signals.caught() : 0;
  const uint64_t interrupted_at_ps = wl->interrupted_at_ps();
  const WorkloadCounters counts = wl->counters();
  trace::Coverage coverage = wl->coverage();
  const bool device_seen = host.trace() != nullptr;  // the device ran here: its coverage is ours
  if (device_seen) coverage.add(host.trace()->coverage());
  std::vector<std::string> warnings = mismatches;
  const std::vector<std::string> workload_warnings = wl->warnings();
  warnings.insert(warnings.end(), workload_warnings.begin(), workload_warnings.end());
  const std::optional<CqWriterFigures> cq_writer = host.cq_writer_figures(out.string());
  if (cq_writer && !cq_writer->coverage_error.empty())
    warnings.push_back("no rtl_coverage.dat: " + cq_writer->coverage_error);
  if (sc.config.device.cq_writer == device::CqWriterKind::rtl && !cq_writer)
    warnings.push_back(options.backend.rfind("vfio:", 0) == 0 ? "device.cq_writer: rtl has no effect on silicon (backend " +
                                                                   options.backend + ")"
                       : options.backend == "vfio-user"
                           ? "device.cq_writer: rtl ran in the served device's process (backend vfio-user): its "
                             "lock-step figures and RTL coverage are not in this report"
                           : "device.cq_writer: the device served at " + options.backend.substr(10) +
                                 " writes CQs as its own configuration says; this run's device.cq_writer has no "
                                 "effect there");
  if (sc.config.link.faults.any() && options.backend.rfind("vfio-user:", 0) == 0)
    warnings.push_back("config.link.faults: the device served at " + options.backend.substr(10) +
                       " draws its faults from its own configuration and seed, not this run's");
  if (options.trace && !trace)
    warnings.push_back(std::string("no ") + trace_name + ": backend " + options.backend +
                       " has no transaction log here (a served device's server keeps its own; silicon none)");
  completions.close();
  host.close_trace();
  const SystemCounters sys = read_system_counters(host, backend.server.get());
  cover_driver_paths(coverage, sys, counts);
  system_checks(sys, counts, sb);
  if (sys.device) warn_of_idle_faults(sc.config, *sys.device, sys.host, warnings);
  if (sys.late_trace_events)
    sb.record("trace_in_time_order", false,
              std::to_string(sys.late_trace_events) + " event(s) were logged after later ones were written");
  // What the workload kept of the driver's goes before the driver does.
  wl.reset();
  if (backend.server) {
    // The driver lets go of the device; the server, done with its one client, ends.
    backend.host.reset();
    const std::string how = backend.server->wait(10'000);
    if (!how.empty()) sb.record("device_server_ended_cleanly", false, "the device server ended with " + how);
  }
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (interrupted_by)
    sb.record("interrupted", false,
              std::string("stopped by ") + signal_name(interrupted_by) + " after " +
                  std::to_string(interrupted_at_ps / 1000) +
                  " ns of simulated time; the traffic was cut short and torn down");

  const std::vector<Check> checks = sb.checks();
  RunResult result{true, interrupted_by, (out / "report.json").string(), {}};
  for (const Check& c : checks)
    if (!c.passed) result.failed.push_back(c);
  const bool passed = result.passed = result.failed.empty();
  write_whole((out / "coverage.json").string(), coverage_json(coverage, device_seen) + "\n");
  write_whole(result.report_path,
              report_json(sc, sys, counts, checks, warnings, passed, interrupted_by, interrupted_at_ps, wall,
                          cq_writer));
  return result;
}

}  // namespace irdma_sim::testbench
