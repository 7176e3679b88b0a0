#include "model/system/run_scenario.h"

#include <chrono>
#include <csignal>
#include <filesystem>
#include <fstream>
#include <memory>

#include "model/system/completion_log.h"
#include "model/system/json_writer.h"
#include "model/system/scenario.h"
#include "model/system/scoreboard.h"
#include "model/system/simulation.h"
#include "model/system/workload.h"
#include "model/system/yaml_reader.h"

namespace irdma_sim::system {

namespace {

const char* const kStatusNames[] = {
    "IB_WC_SUCCESS", "IB_WC_LOC_LEN_ERR", "IB_WC_LOC_QP_OP_ERR", "IB_WC_LOC_EEC_OP_ERR",
    "IB_WC_LOC_PROT_ERR", "IB_WC_WR_FLUSH_ERR", "IB_WC_MW_BIND_ERR", "IB_WC_BAD_RESP_ERR",
    "IB_WC_LOC_ACCESS_ERR", "IB_WC_REM_INV_REQ_ERR", "IB_WC_REM_ACCESS_ERR", "IB_WC_REM_OP_ERR",
    "IB_WC_RETRY_EXC_ERR", "IB_WC_RNR_RETRY_EXC_ERR", "IB_WC_LOC_RDD_VIOL_ERR",
    "IB_WC_REM_INV_RD_REQ_ERR", "IB_WC_REM_ABORT_ERR", "IB_WC_INV_EECN_ERR",
    "IB_WC_INV_EEC_STATE_ERR", "IB_WC_FATAL_ERR", "IB_WC_RESP_TIMEOUT_ERR", "IB_WC_GENERAL_ERR"};

void system_checks(Simulation& sim, const WorkloadCounters& wl, Scoreboard& sb) {
  const auto& dev = sim.device();
  const auto& cq = dev.cq_engine().counters();
  const uint64_t dma_errors = sim.memory().access_errors();
  sb.record("no_dma_errors", dma_errors == 0,
            std::to_string(dma_errors) + " DMA access(es) to unmapped host memory");
  const uint64_t mmio_errors = sim.link().mmio_errors() + dev.counters().bad_mmio;
  sb.record("no_mmio_errors", mmio_errors == 0,
            std::to_string(mmio_errors) + " MMIO access(es) the device refused");
  const uint64_t left = sim.memory().mapped_bytes();
  sb.record("no_dma_memory_left_mapped", left == 0,
            std::to_string(left) + " bytes of DMA memory still mapped after teardown");
  sb.record("no_spurious_interrupts", sim.interrupts().spurious() == 0,
            std::to_string(sim.interrupts().spurious()) + " MSI-X message(s) for no handler");
  // A flush CQE may stand for many completions (GEN_2), or for none (its WQEs were
  // reported already), and software flushes have none: flushes are left out.
  const auto& qp = dev.qp_engine().counters();
  // CQEs a destroyed QP left unpolled are never reported either.
  const uint64_t cleaned = sim.driver().event_counters().cqes_cleaned;
  const uint64_t data_cqes = cq.cqes_written - cq.ccq_cqes - qp.flush_cqes - cleaned;
  const uint64_t delivered = wl.completions - wl.flushed;
  sb.record("cqes_written_equal_completions_delivered", data_cqes == delivered,
            std::to_string(data_cqes) + " CQEs written, " + std::to_string(delivered) +
                " completions delivered (flushes and " + std::to_string(cleaned) +
                " CQEs of destroyed QPs aside)");
  sb.record("every_cq_error_recovered", wl.cq_errors == cq.overflows && wl.pairs_torn_down >= (cq.overflows ? 1u : 0u),
            std::to_string(cq.overflows) + " CQ(s) overflowed, " + std::to_string(wl.cq_errors) +
                " IB_EVENT_CQ_ERR, " + std::to_string(wl.pairs_torn_down) + " pair(s) torn down");
  sb.record("no_device_wqe_errors", qp.wqe_errors == 0 && qp.bad_doorbells == 0,
            std::to_string(qp.wqe_errors) + " WQE error(s), " + std::to_string(qp.bad_doorbells) +
                " doorbell(s) for unknown QPs");
  // Completion events: a CEQE needs an arm, and the driver consumed and acknowledged each.
  const auto& ceq = dev.ceq_engine().counters();
  const auto& ev = sim.driver().event_counters();
  sb.record("ceqes_not_above_arms", ceq.ceqes <= cq.arms,
            std::to_string(ceq.ceqes) + " CEQEs for " + std::to_string(cq.arms) + " arms taken");
  sb.record("every_ceqe_consumed_and_acknowledged",
            ev.ceqes + ev.ceqes_left == ceq.ceqes && ceq.cqacks == ev.ceqes - ev.stale_ceqes,
            std::to_string(ceq.ceqes) + " CEQEs written, " + std::to_string(ev.ceqes) + " consumed (" +
                std::to_string(ev.stale_ceqes) + " for no CQ), " + std::to_string(ev.ceqes_left) +
                " left in CEQs destroyed under them, " + std::to_string(ceq.cqacks) + " CQACKs; " +
                std::to_string(ev.interrupts) + " interrupts handled");
  const uint64_t cqp_errors = dev.cqp_engine().counters().errors;
  sb.record("no_control_command_errors", cqp_errors == 0,
            std::to_string(dev.cqp_engine().counters().commands) + " CQP commands, " +
                std::to_string(cqp_errors) + " failed");
}

const char* signal_name(int sig) { return sig == SIGINT ? "SIGINT" : sig == SIGTERM ? "SIGTERM" : "a signal"; }

// SIGINT and SIGTERM, caught for the length of a run: the first is noted, and the run
// stops cleanly. A second SIGINT (Ctrl-C again) takes its default action; SIGTERM may come
// more than once (a parent's death signal comes as each of its threads exits).
class StopSignals {
 public:
  StopSignals() {
    caught_ = 0;
    struct sigaction sa {};
    sa.sa_handler = [](int sig) {
      if (!caught_) caught_ = sig;
    };
    sigemptyset(&sa.sa_mask);
    sigaction(SIGTERM, &sa, &old_term_);
    sa.sa_flags = SA_RESETHAND;
    sigaction(SIGINT, &sa, &old_int_);
  }
  ~StopSignals() {
    sigaction(SIGINT, &old_int_, nullptr);
    sigaction(SIGTERM, &old_term_, nullptr);
  }
  StopSignals(const StopSignals&) = delete;
  StopSignals& operator=(const StopSignals&) = delete;
  int caught() const { return caught_; }

 private:
  static volatile std::sig_atomic_t caught_;
  struct sigaction old_int_ {}, old_term_ {};
};

volatile std::sig_atomic_t StopSignals::caught_ = 0;

std::string report_json(const Scenario& sc, Simulation& sim, const WorkloadCounters& wl,
                        const std::vector<Check>& checks, const std::vector<std::string>& warnings,
                        bool passed, int interrupted_by, uint64_t interrupted_at_ps, double wall_s) {
  const auto& dev = sim.device();
  const auto& cq = dev.cq_engine().counters();
  const auto& qp = dev.qp_engine().counters();
  const ibcore::ib_poll_counters polls = sim.driver().poll_workers ? sim.driver().poll_workers->counters()
                                                                   : ibcore::ib_poll_counters{};
  JsonWriter j;
  j.begin_object()
      .str("scenario", sc.name)
      .str("file", sc.file)
      .num("seed", sc.seed)
      .boolean("passed", passed)
      .num("sim_time_ps", sim.now_ps())
      .real("wall_time_s", wall_s);
  if (interrupted_by)
    j.begin_object("interrupted").str("signal", signal_name(interrupted_by)).num("sim_time_ps", interrupted_at_ps).end_object();
  else
    j.null("interrupted");
  j.begin_object("counts")
      .num("cqes_written", cq.cqes_written - cq.ccq_cqes)
      .num("extended_cqes", cq.extended_cqes)
      .num("ccq_cqes", cq.ccq_cqes)
      .num("completions_delivered", wl.completions)
      .num("flushed_completions", wl.flushed)
      .num("flush_cqes", qp.flush_cqes)
      .num("qps_in_error", qp.qps_in_error)
      .num("cq_resizes", wl.cq_resizes)
      .num("retired_ring_completions", wl.retired_ring_completions)
      .num("cqes_overflowed", cq.cqes_overflowed)
      .num("cq_errors", wl.cq_errors)
      .num("pairs_torn_down", wl.pairs_torn_down)
      .num("cqes_cleaned", sim.driver().event_counters().cqes_cleaned)
      .num("ceqes_left", sim.driver().event_counters().ceqes_left)
      .num("aeqes", dev.aeq_engine().counters().aeqes)
      .num("corrupt_cqes", wl.corrupt_cqes)
      .num("ud_dropped", qp.ud_dropped)
      .num("ceqes_dropped", dev.ceq_engine().counters().ceqes_dropped)
      .num("sends_posted", wl.sends_posted)
      .num("recvs_posted", wl.recvs_posted)
      .num("send_doorbells", wl.doorbells)
      .num("device_wqes_executed", qp.wqes_executed)
      .num("bytes_moved", qp.bytes_moved)
      .num("rnr_stalls", qp.rnr_stalls)
      .num("cqp_commands", dev.cqp_engine().counters().commands)
      .num("mmio_writes", dev.counters().mmio_writes)
      .num("mmio_reads", dev.counters().mmio_reads)
      .num("cq_arms", dev.counters().cq_arms)
      .num("arms_taken", cq.arms)
      .num("stale_arms", cq.stale_arms)
      .num("ceqes", dev.ceq_engine().counters().ceqes)
      .num("cqacks", dev.ceq_engine().counters().cqacks)
      .num("interrupts_raised", dev.vectors().counters().interrupts)
      .num("interrupts_moderated", dev.vectors().counters().moderated)
      .num("events_while_masked", dev.vectors().counters().events_while_masked)
      .num("ceqes_consumed", sim.driver().event_counters().ceqes)
      .num("stale_ceqes", sim.driver().event_counters().stale_ceqes)
      .num("comp_events", sim.driver().event_counters().comp_events)
      .num("poller_runs", polls.runs)
      .num("poller_rearms", polls.rearms)
      .num("poller_missed_events", polls.missed)
      .num("poller_budget_spent", polls.budget_spent)
      .num("msix_delivered", sim.interrupts().delivered())
      .num("trace_events", sim.trace().events_written())
      .num("idle_polls", wl.idle_polls)
      .num("pool_cqs", wl.pool_cqs)
      .num("cqs_with_completions", wl.cqs_with_completions)
      .num("cqs_overflowed", cq.overflows);
  j.begin_array("by_status");
  for (size_t s = 0; s < wl.by_status.size(); s++)
    if (wl.by_status[s])
      j.begin_object().num("status", s).str("name", kStatusNames[s]).num("count", wl.by_status[s]).end_object();
  j.end_array();
  j.begin_array("by_opcode");
  for (const auto& [op, n] : wl.by_opcode) j.begin_object().num("opcode", op).num("count", n).end_object();
  j.end_array();
  j.end_object();
  j.begin_array("warnings");
  for (const std::string& w : warnings) j.str(nullptr, w);
  j.end_array();
  j.begin_array("faults");
  for (const InjectedFault& f : wl.faults)
    j.begin_object().num("qp", f.qp_num).num("request", f.request).str("code", kFlushCodeNames[f.flush_code]).end_object();
  j.end_array();
  j.begin_array("checks");
  for (const Check& c : checks)
    j.begin_object().str("name", c.name).boolean("passed", c.passed).str("detail", c.detail).end_object();
  j.end_array();
  j.end_object();
  return j.text() + "\n";
}

}  // namespace

RunResult run_scenario(const std::string& scenario_path, const std::string& out_dir,
                       const RunOptions& options) {
  const auto start = std::chrono::steady_clock::now();
  // From the start: a signal while the system is built stops the traffic before it begins.
  const StopSignals signals;
  Scenario sc = load_scenario(scenario_path);
  if (options.seed) sc.seed = *options.seed;
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
  if (!options.trace) std::filesystem::remove(out / "trace.jsonl");

  std::unique_ptr<Simulation> made;
  try {
    made = std::make_unique<Simulation>(sc.config, options.trace ? (out / "trace.jsonl").string() : "");
  } catch (const ScenarioError& e) {
    throw ScenarioError(sc.file + ": " + e.what());
  }
  Simulation& sim = *made;
  CompletionLog completions;
  completions.open((out / "completions.jsonl").string());
  Scoreboard sb(2 * sc.pairs.size());
  Workload wl(sim, sc, sb, completions);
  wl.set_control({[&] { return signals.caught() != 0; }, options.progress});
  sim.run_on_host([&] { wl.run(); });
  if (!wl.limit_error().empty()) throw ScenarioError(sc.file + ": " + wl.limit_error());
  const int interrupted_by = wl.interrupted() ? signals.caught() : 0;
  system_checks(sim, wl.counters(), sb);
  completions.close();
  sim.close_trace();
  if (sim.trace().late_events())
    sb.record("trace_in_time_order", false,
              std::to_string(sim.trace().late_events()) + " event(s) were logged after later ones were written");
  const double wall =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  if (interrupted_by)
    sb.record("interrupted", false,
              std::string("stopped by ") + signal_name(interrupted_by) + " after " +
                  std::to_string(wl.interrupted_at_ps() / 1000) +
                  " ns of simulated time; the traffic was cut short and torn down");

  const std::vector<Check> checks = sb.checks();
  bool passed = true;
  for (const Check& c : checks) passed = passed && c.passed;
  RunResult result{passed, interrupted_by, (out / "report.json").string()};
  // Written whole or not at all: a reader never finds half a report.
  const std::string tmp = result.report_path + ".tmp";
  {
    std::ofstream report(tmp);
    report << report_json(sc, sim, wl.counters(), checks, wl.warnings(), passed, interrupted_by,
                          wl.interrupted_at_ps(), wall);
    if (!report.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, result.report_path);
  return result;
}

}  // namespace irdma_sim::system
