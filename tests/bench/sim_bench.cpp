// Figures that elaborate SystemC, one elaboration per process:
//   irdma-sim-bench e2e approximate|loose [SENDS_PER_QP] [MAX_BYTES] [FIGURE|all]
//     the smoke scenario's topology: completions per wall-clock second, four named figures
//     side by side (all, the default), each in a process of its own:
//       checked    device writes, driver polls, every completion matched against its work
//                  request, payloads generated and every byte compared (a regression run);
//       engine     the same without payloads (none generated, none compared): what the
//                  simulator costs;
//       moderated  checked, with the CEQ's interrupt moderated as a driver tuned for
//                  throughput sets it (kModeratedItrUs);
//       traced     checked, writing the transaction log (trace.bin) as a run does; the
//                  log is read back after, every event it says it wrote.
//     Messages are 1..MAX_BYTES (default 64): the figures are about completions, not bytes.
//   irdma-sim-bench e2e vfio-user [SENDS_PER_QP] [MAX_BYTES] [CEQ_ITR_US]
//     checked, the model served by a child process, the driver and workload here on OS
//     threads.
//   irdma-sim-bench doorbell-msix [ROUNDS]
//     through vfio-user: a doorbell (a signaled NOP on an armed CQ) to the completion
//     handler on the interrupt thread, in microseconds.
//   irdma-sim-bench scale approximate|loose PAIRS [COMPLETIONS] [CQ_ENTRIES] [CEQS]
//     the same number of completions (default 819200) spread over PAIRS loopback RC pairs,
//     each QP with a CQ of its own (CQ_ENTRIES, default 256) on CEQS vectors (default 2),
//     64-byte messages: wall time per completion, and of the traffic alone (setup and
//     teardown, which cost per queue, apart), and the process's peak RSS beside it.
//   irdma-sim-bench model approximate|loose [CQES]
//     the device's CQ engine alone writing CQEs (a quarter extended) into host memory
//     through the PCIe link: CQEs per wall-clock second.
#include <algorithm>
#include <atomic>
#include <vector>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <stdexcept>
#include <string>

#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/device/cq_engine.h"
#include "model/platform/host_memory.h"
#include "model/platform/pcie_link.h"
#include "model/sc_compat.h"
#include "model/testbench/completion_log.h"
#include "model/testbench/scenario.h"
#include "model/testbench/scoreboard.h"
#include "model/testbench/pcie_system.h"
#include "model/system/server_child.h"
#include "model/system/simulation.h"
#include "model/testbench/buffered_qp.h"
#include "driver/backends/vfio_user/client.h"
#include "driver/core/cq.h"
#include "model/testbench/workload.h"
#include "model/testbench/yaml_reader.h"
#include "model/trace/trace_reader.h"
#include "tests/bench/thread_switches.h"

using namespace irdma_sim;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

testbench::Scenario e2e_scenario(uint32_t sends, uint32_t max_bytes, uint32_t itr_us) {
  testbench::Scenario sc = testbench::load_scenario(IRDMA_SIM_SOURCE_DIR "/scenarios/smoke.yaml");
  sc.traffic.sends_per_qp = sends;
  sc.traffic.max_bytes = max_bytes;
  sc.traffic.min_bytes = std::min(sc.traffic.min_bytes, max_bytes);
  sc.config.device.ceq_itr_us = itr_us;
  return sc;
}

// A workload run on a host, timed (wall clock, setup apart), its checks' verdict.
struct TimedRun {
  double wall_s = 0, setup_s = 0, teardown_s = 0;
  bool passed = true;
  testbench::WorkloadCounters counts;
};

TimedRun run_timed(testbench::Host& host, const testbench::Scenario& sc) {
  testbench::CompletionLog no_log;
  testbench::Scoreboard sb(2 * sc.pairs.size());
  testbench::Workload wl(host, sc, sb, no_log);
  const auto start = std::chrono::steady_clock::now();
  host.run_on_host([&] { wl.run(); });
  TimedRun r;
  r.wall_s = seconds_since(start);
  r.setup_s = std::chrono::duration<double>(wl.traffic_started() - start).count();
  r.teardown_s = std::chrono::duration<double>(start - wl.teardown_started()).count() + r.wall_s;
  for (const testbench::Check& c : sb.checks()) {
    if (!c.passed) std::fprintf(stderr, "check %s failed: %s\n", c.name.c_str(), c.detail.c_str());
    r.passed = r.passed && c.passed;
  }
  r.counts = wl.counters();
  return r;
}

// The workload on `host`, timed: one line of figures, exit status 0 when every check held.
// `in_process`: the SystemC kernel runs here, so its thread switches are this process's to
// count (a served model's are its server's: the figure reads n/a). `completions`, if given,
// is told how many there were.
int e2e_on(testbench::Host& host, const testbench::Scenario& sc, const char* mode, const char* figure,
           bool in_process, uint64_t* completions = nullptr) {
  const uint64_t switches_before = bench::thread_switches();
  const TimedRun r = run_timed(host, sc);
  const uint64_t switches = bench::thread_switches() - switches_before;
  const double wall = r.wall_s;
  const bool passed = r.passed;
  const uint64_t n = r.counts.completions;
  if (completions) *completions = n;
  char switches_per_completion[32] = "n/a";
  if (in_process)
    std::snprintf(switches_per_completion, sizeof switches_per_completion, "%.2f",
                  n ? double(switches) / double(n) : 0.0);
  // Completions arrive by interrupt: how many, and how many completions each brought.
  const uint64_t irqs = host.driver().event_counters().interrupts;
  const double host_s = host.now_ps() / 1e12;
  std::printf("e2e %-11s %-9s itr_us=%u completions=%llu wall_s=%.3f completions_per_second=%.0f host_us=%.1f "
              "interrupts=%llu interrupts_per_host_second=%.0f interrupts_per_wall_second=%.0f "
              "completions_per_interrupt=%.2f idle_waits=%llu doorbells=%llu thread_switches_per_completion=%s "
              "checks=%s\n",
              mode, figure, sc.config.device.ceq_itr_us, (unsigned long long)n, wall, double(n) / wall,
              host.now_ps() / 1e6, (unsigned long long)irqs, double(irqs) / host_s, double(irqs) / wall,
              irqs ? double(n) / double(irqs) : 0.0, (unsigned long long)r.counts.idle_polls,
              (unsigned long long)r.counts.doorbells,
              switches_per_completion,
              passed ? "passed" : "FAILED");
  return passed ? 0 : 1;
}

// ice's default receive ITR (50 us, 20 k interrupts a second): the setting of a NIC driver
// tuned for throughput rather than latency.
constexpr uint32_t kModeratedItrUs = 50;

enum class Figure { checked, engine, moderated, traced };
constexpr const char* kFigureNames[] = {"checked", "engine", "moderated", "traced"};

// The traced figure's log, read back whole: as many events as the log wrote, none late.
int check_trace(system::Simulation& sim, const std::string& path, uint64_t completions) {
  sim.close_trace();
  const uint64_t written = sim.trace()->events_written();
  uint64_t read = 0;
  std::string line;
  try {
    trace::TraceReader in(path);
    while (in.next(line)) read++;
  } catch (const std::runtime_error& e) {
    std::fprintf(stderr, "reading the trace back failed: %s\n", e.what());
  }
  std::error_code ec;
  const uint64_t bytes = std::filesystem::file_size(path, ec);
  std::filesystem::remove(path, ec);
  const bool ok = read == written && written > completions && sim.trace()->late_events() == 0;
  std::printf("trace       events=%llu bytes=%llu bytes_per_completion=%.1f read_back=%llu checks=%s\n",
              (unsigned long long)written, (unsigned long long)bytes, completions ? double(bytes) / completions : 0.0,
              (unsigned long long)read, ok ? "passed" : "FAILED");
  return ok ? 0 : 1;
}

int e2e_figure(bool loose, Figure figure, uint32_t sends, uint32_t max_bytes) {
  testbench::Scenario sc = e2e_scenario(sends, max_bytes, figure == Figure::moderated ? kModeratedItrUs : 0);
  sc.traffic.check_payload = figure != Figure::engine;
  sc.config.sync = loose ? testbench::SyncMode::loose : testbench::SyncMode::approximate;
  const std::string trace_path =
      figure == Figure::traced ? (std::filesystem::temp_directory_path() /
                                  ("irdma-sim-bench-" + std::to_string(::getpid()) + ".trace.bin")).string()
                               : "";
  system::Simulation sim(sc.config, trace_path);
  uint64_t completions = 0;
  const int status = e2e_on(sim, sc, loose ? "loose" : "approximate", kFigureNames[int(figure)], true, &completions);
  if (figure != Figure::traced) return status;
  return status | check_trace(sim, trace_path, completions);
}

// Every figure in a process of its own, exec'd afresh (one elaboration per process; and a
// forked child inherits the allocator's and the page cache's state of the one before).
int e2e_all(char** argv) {
  int failed = 0;
  for (const char* figure : kFigureNames) {
    std::fflush(stdout);
    const pid_t child = ::fork();
    if (child < 0) return 1;
    if (child == 0) {
      char* args[] = {argv[0], argv[1], argv[2], argv[3], argv[4], const_cast<char*>(figure), nullptr};
      ::execv("/proc/self/exe", args);
      std::perror("exec /proc/self/exe");
      ::_exit(127);
    }
    int status = 0;
    failed |= ::waitpid(child, &status, 0) != child || !WIFEXITED(status) || WEXITSTATUS(status) != 0;
  }
  return failed;
}

int scale(bool loose, uint64_t pairs, uint64_t completions, uint64_t cq_entries, uint64_t ceqs) {
  const uint64_t sends = std::max<uint64_t>(1, completions / (4 * pairs));  // a send and a receive completion per message, both ways
  const uint64_t queues = 2 * pairs + 16;
  char doc[1024];
  std::snprintf(doc, sizeof doc,
                "name: scale\nseed: 1\n"
                "config: {device: {max_qp: %llu, max_cq: %llu, max_cqe: %llu, num_ceqs: %llu}, host: {memory_mb: %llu}}\n"
                "qp_pairs: [{name: p, count: %llu, cq: own, sq_depth: 16, rq_depth: 16, cq_entries: %llu}]\n"
                "traffic: {sends_per_qp: %llu, min_bytes: 1, max_bytes: 64, batch: 4}\n",
                (unsigned long long)queues, (unsigned long long)queues, (unsigned long long)cq_entries,
                (unsigned long long)ceqs, (unsigned long long)std::max<uint64_t>(1024, pairs * 4),
                (unsigned long long)pairs, (unsigned long long)cq_entries, (unsigned long long)sends);
  const std::string path = "/tmp/irdma-sim-bench-scale-" + std::to_string(::getpid()) + ".yaml";
  {
    std::FILE* f = std::fopen(path.c_str(), "w");
    if (!f) return 2;
    std::fputs(doc, f);
    std::fclose(f);
  }
  testbench::Scenario sc;
  try {
    sc = testbench::load_scenario(path);
  } catch (const testbench::ScenarioError& e) {
    std::remove(path.c_str());
    std::fprintf(stderr, "irdma-sim-bench scale: %llu pairs cannot run: %s\n", (unsigned long long)pairs, e.what());
    return 2;
  }
  std::remove(path.c_str());
  sc.config.sync = loose ? testbench::SyncMode::loose : testbench::SyncMode::approximate;
  system::Simulation sim(sc.config);
  const TimedRun r = run_timed(sim, sc);
  const double wall = r.wall_s, setup = r.setup_s, teardown = r.teardown_s;
  const uint64_t n = r.counts.completions;
  rusage usage{};
  ::getrusage(RUSAGE_SELF, &usage);
  std::printf("scale %-11s pairs=%llu cq_entries=%llu ceqs=%llu completions=%llu wall_s=%.3f ns_per_completion=%.0f "
              "setup_s=%.3f teardown_s=%.3f traffic_ns_per_completion=%.0f peak_rss_mb=%.0f checks=%s\n",
              loose ? "loose" : "approximate", (unsigned long long)pairs, (unsigned long long)cq_entries,
              (unsigned long long)ceqs, (unsigned long long)n, wall, wall * 1e9 / double(n), setup, teardown,
              (wall - setup - teardown) * 1e9 / double(n), double(usage.ru_maxrss) / 1024.0,
              r.passed ? "passed" : "FAILED");
  return r.passed ? 0 : 1;
}

// The model served by a child process, the driver and the workload here on OS threads.
std::unique_ptr<testbench::PcieSystem> served(system::ServerChild& server, const testbench::SimConfig& cfg) {
  pcie::vfio_user::VfioUserClientOptions options;
  options.posted_writes = true;
  return std::make_unique<testbench::PcieSystem>(
      std::make_unique<pcie::vfio_user::VfioUserClient>(server.socket_path(), options), testbench::driver_params(cfg));
}

int e2e_vfio_user(uint32_t sends, uint32_t max_bytes, uint32_t itr_us) {
  const testbench::Scenario sc = e2e_scenario(sends, max_bytes, itr_us);
  system::ServerChild server(sc.config, {});
  return e2e_on(*served(server, sc.config), sc, "vfio-user", "checked", false);
}

// Doorbell to MSI-X through vfio-user: a signaled NOP posted on a QP whose CQ is armed
// (the WQEALLOC doorbell) until the CQ's completion handler runs on the interrupt thread.
int doorbell_to_msix(uint32_t rounds) {
  system::ServerChild server(testbench::SimConfig{}, {});
  auto host = served(server, testbench::SimConfig{});
  irdma::irdma_device& dev = host->driver();
  auto got = ibcore::ib_alloc_cq(&dev, nullptr, 64, 0, ibcore::IB_POLL_DIRECT);
  if (got.is_err()) return 1;
  ibcore::ib_cq* cq = got.get();
  const auto now_ns = [] {
    return uint64_t(std::chrono::duration_cast<std::chrono::nanoseconds>(
                        std::chrono::steady_clock::now().time_since_epoch()).count());
  };
  std::atomic<uint64_t> fired_ns{0};
  cq->comp_handler = [&](ibcore::ib_cq*) { fired_ns = now_ns(); };
  int err = 0;
  std::unique_ptr<testbench::BufferedQp> a(testbench::BufferedQp::create(dev, cq, 8, 8, 64, err));
  std::unique_ptr<testbench::BufferedQp> b(err ? nullptr : testbench::BufferedQp::create(dev, cq, 8, 8, 64, err));
  if (err || dev.connect_qp(a->qp(), b->qp_num()) || dev.connect_qp(b->qp(), a->qp_num())) return 1;
  std::vector<double> us;
  for (uint32_t i = 0; i < rounds; i++) {
    fired_ns = 0;
    ibcore::ib_req_notify_cq(cq, ibcore::IB_CQ_NEXT_COMP);
    const uint64_t t0 = now_ns();
    dev.post_nop(a->qp(), i, true);
    while (!fired_ns && now_ns() - t0 < 1'000'000'000) {
    }
    if (!fired_ns) return 1;
    us.push_back(double(fired_ns - t0) / 1000);
    ibcore::ib_wc wc;
    while (ibcore::ib_poll_cq(cq, 1, &wc) == 0) {
    }
  }
  std::sort(us.begin(), us.end());
  double sum = 0;
  for (double v : us) sum += v;
  std::printf("vfio-user doorbell_to_msix rounds=%u min_us=%.1f p50_us=%.1f mean_us=%.1f p99_us=%.1f\n", rounds,
              us.front(), us[us.size() / 2], sum / double(us.size()), us[us.size() * 99 / 100]);
  const bool clean = !a->destroy() && !b->destroy() && !ibcore::ib_free_cq(cq);
  dev.remove();
  return clean ? 0 : 1;
}

// The CQ engine with nothing in front of it: completions straight into CqEngine::post.
struct CqeSource : sc_core::sc_module {
  IRDMA_SC_HAS_PROCESS(CqeSource);
  tlm_utils::simple_initiator_socket<CqeSource> dma{"dma"};
  tlm_utils::simple_initiator_socket<CqeSource> mmio{"mmio"};  // unused link ports
  tlm_utils::simple_target_socket<CqeSource> bar{"bar"};
  device::DeviceConfig cfg;
  trace::TraceLog no_trace;
  device::EngineTime time;
  device::PciConfigSpace config{{}, {}, {1, 0, 0, 0}};
  device::DmaPort port{dma, time, config};
  // Never armed, never checked for overflow: no events.
  device::MsixVectors vectors{time, 1, [](unsigned, uint64_t) {}, [](unsigned) { return false; }};
  device::CeqEngine events{cfg, port, time, no_trace, vectors};
  device::AeqEngine async{port, time, no_trace, vectors};
  device::CqEngine engine{port, time, events, async, no_trace, [&](device::CqWriterPort& p) {
                            return std::make_unique<device::TlmCqWriter>(p, cfg.cycles,
                                                                         std::make_unique<device::TlmCqeFormatter>());
                          }};
  uint64_t count;
  uint64_t ring;
  double wall = 0;

  CqeSource(sc_core::sc_module_name n, sc_core::sc_time quantum, uint64_t cqes, uint64_t ring_iova)
      : sc_module(n), time(cfg.clock_mhz, quantum), count(cqes), ring(ring_iova) {
    config.write(device::pci::COMMAND, 2, device::pci::COMMAND_MASTER);
    SC_THREAD(run);
  }
  void run() {
    device::CqContext cq;
    cq.id = 3;
    cq.size = 8194;
    cq.base = ring;
    engine.add(cq);
    device::CqeFields f;
    f.qp_ctx = 0x100000005ull;
    f.qp_id = 5;
    f.op = 4;
    const auto start = std::chrono::steady_clock::now();
    for (uint64_t i = 0; i < count; i++) {
      f.wqe_idx = uint16_t(i);
      f.payload_len = uint32_t(i);
      f.extended = f.imm_valid = i % 4 == 0;
      engine.post(3, f);
    }
    time.sync();
    wall = seconds_since(start);
    sc_core::sc_stop();
  }
};

int model(bool loose, uint64_t cqes) {
  platform::LinkConfig link_cfg;
  trace::TraceLog no_trace;
  platform::HostMemory memory("host_memory", 1ull << 30);
  platform::PcieLink link("pcie_link", link_cfg, !loose, no_trace);
  const auto ring = memory.alloc(8194 * 32, 256);
  const sc_core::sc_time quantum = loose ? sc_core::sc_time(1, sc_core::SC_US) : sc_core::SC_ZERO_TIME;
  CqeSource source("source", quantum, cqes, ring.iova);
  source.dma.bind(link.dev_dma);
  link.host_mem.bind(memory.socket);
  source.mmio.bind(link.host_mmio);
  link.dev_bar.bind(source.bar);
  sc_core::sc_start();
  const uint64_t written = source.engine.counters().cqes_written;
  std::printf("model %-11s cqes=%llu wall_s=%.3f cqes_per_second=%.0f sim_us=%.1f dma_errors=%llu\n",
              loose ? "loose" : "approximate", (unsigned long long)written, source.wall,
              double(written) / source.wall, sc_core::sc_time_stamp().to_seconds() * 1e6,
              (unsigned long long)link.dma_errors());
  return written == cqes && link.dma_errors() == 0 ? 0 : 1;
}

}  // namespace

int sc_main(int argc, char** argv) {
  const std::string what = argc >= 2 ? argv[1] : "";
  const std::string mode = argc >= 3 ? argv[2] : "";
  const bool sim_mode = mode == "approximate" || mode == "loose";
  const auto arg = [&](int i, uint64_t def) { return argc > i ? std::strtoull(argv[i], nullptr, 0) : def; };
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  if (what == "e2e" && sim_mode) {
    const std::string figure = argc > 5 ? argv[5] : "all";
    const auto named = std::find(std::begin(kFigureNames), std::end(kFigureNames), figure);
    if (figure == "all") {
      std::string sends = std::to_string(arg(3, 200000)), bytes = std::to_string(arg(4, 64));
      char* args[] = {argv[0], argv[1], argv[2], sends.data(), bytes.data()};
      return e2e_all(args);
    }
    if (named != std::end(kFigureNames))
      return e2e_figure(mode == "loose", Figure(named - std::begin(kFigureNames)), uint32_t(arg(3, 200000)),
                        uint32_t(arg(4, 64)));
  }
  if (what == "e2e" && mode == "vfio-user") return e2e_vfio_user(uint32_t(arg(3, 20000)), uint32_t(arg(4, 64)), uint32_t(arg(5, 0)));
  if (what == "model" && sim_mode) return model(mode == "loose", arg(3, 4'000'000));
  if (what == "scale" && sim_mode && argc >= 4)
    return scale(mode == "loose", std::max<uint64_t>(1, arg(3, 8)), arg(4, 819200), arg(5, 256), arg(6, 2));
  if (what == "doorbell-msix") return doorbell_to_msix(uint32_t(arg(2, 2000)));
  std::fprintf(stderr,
               "usage: irdma-sim-bench e2e approximate|loose [SENDS_PER_QP] [MAX_BYTES] [checked|engine|moderated|traced|all]\n"
               "       irdma-sim-bench e2e vfio-user [SENDS_PER_QP] [MAX_BYTES] [CEQ_ITR_US]\n"
               "       irdma-sim-bench scale approximate|loose PAIRS [COMPLETIONS] [CQ_ENTRIES] [CEQS]\n"
               "       irdma-sim-bench model approximate|loose [CQES]\n"
               "       irdma-sim-bench doorbell-msix [ROUNDS]\n");
  return 2;
}
