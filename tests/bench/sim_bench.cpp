// Figures that elaborate SystemC, one elaboration per process:
//   irdma-sim-bench e2e approximate|loose [SENDS_PER_QP] [MAX_BYTES] [CEQ_ITR_US]
//     the smoke scenario's topology with tracing off: completions per wall-clock second
//     (device writes, driver polls, scoreboard checks, payloads compared). Messages are
//     1..MAX_BYTES (default 64): the figure is about completions, not bytes. CEQ_ITR_US
//     (default 0) moderates interrupts, as a NIC under steady load is run.
//   irdma-sim-bench model approximate|loose [CQES]
//     the device's CQ engine alone writing CQEs (a quarter extended) into host memory
//     through the PCIe link: CQEs per wall-clock second.
#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>

#include <systemc>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/device/cq_engine.h"
#include "model/platform/host_memory.h"
#include "model/platform/pcie_link.h"
#include "model/sc_compat.h"
#include "model/system/completion_log.h"
#include "model/system/scenario.h"
#include "model/system/scoreboard.h"
#include "model/system/simulation.h"
#include "model/system/workload.h"

using namespace irdma_sim;

namespace {

double seconds_since(std::chrono::steady_clock::time_point t) {
  return std::chrono::duration<double>(std::chrono::steady_clock::now() - t).count();
}

int e2e(bool loose, uint32_t sends, uint32_t max_bytes, uint32_t itr_us) {
  system::Scenario sc = system::load_scenario(IRDMA_SIM_SOURCE_DIR "/scenarios/smoke.yaml");
  sc.config.sync = loose ? system::SyncMode::loose : system::SyncMode::approximate;
  sc.traffic.sends_per_qp = sends;
  sc.traffic.max_bytes = max_bytes;
  sc.traffic.min_bytes = std::min(sc.traffic.min_bytes, max_bytes);
  sc.config.device.ceq_itr_us = itr_us;

  system::Simulation sim(sc.config);
  system::CompletionLog no_log;
  system::Scoreboard sb(2 * sc.pairs.size());
  system::Workload wl(sim, sc, sb, no_log);
  const auto start = std::chrono::steady_clock::now();
  sim.run_on_host([&] { wl.run(); });
  const double wall = seconds_since(start);
  bool passed = true;
  for (const system::Check& c : sb.checks()) passed = passed && c.passed;
  const uint64_t n = wl.counters().completions;
  // Completions arrive by interrupt: how many, and how many completions each brought.
  const uint64_t irqs = sim.driver().event_counters().interrupts;
  const double sim_s = sim.now_ps() / 1e12;
  std::printf("e2e %-11s itr_us=%u completions=%llu wall_s=%.3f completions_per_second=%.0f sim_us=%.1f "
              "interrupts=%llu interrupts_per_sim_second=%.0f interrupts_per_wall_second=%.0f "
              "completions_per_interrupt=%.2f idle_waits=%llu doorbells=%llu checks=%s\n",
              loose ? "loose" : "approximate", itr_us, (unsigned long long)n, wall, double(n) / wall,
              sim.now_ps() / 1e6, (unsigned long long)irqs, double(irqs) / sim_s, double(irqs) / wall,
              irqs ? double(n) / double(irqs) : 0.0, (unsigned long long)wl.counters().idle_polls,
              (unsigned long long)wl.counters().doorbells, passed ? "passed" : "FAILED");
  return passed ? 0 : 1;
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
  device::CqEngine engine{cfg, port, time, events, async, no_trace, std::make_unique<device::TlmCqeFormatter>()};
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
  const bool e2e_mode = argc >= 3 && std::strcmp(argv[1], "e2e") == 0;
  const bool model_mode = argc >= 3 && std::strcmp(argv[1], "model") == 0;
  if (!e2e_mode && !model_mode) {
    std::fprintf(stderr,
                 "usage: irdma-sim-bench e2e approximate|loose [SENDS_PER_QP] [MAX_BYTES] [CEQ_ITR_US]\n"
                 "       irdma-sim-bench model approximate|loose [CQES]\n");
    return 2;
  }
  sc_core::sc_report_handler::set_actions("/OSCI/SystemC", sc_core::SC_INFO, sc_core::SC_DO_NOTHING);
  const bool loose = std::strcmp(argv[2], "loose") == 0;
  const auto arg = [&](int i, uint64_t def) { return argc > i ? std::strtoull(argv[i], nullptr, 0) : def; };
  if (e2e_mode) return e2e(loose, uint32_t(arg(3, 200000)), uint32_t(arg(4, 64)), uint32_t(arg(5, 0)));
  return model(loose, arg(3, 4'000'000));
}
