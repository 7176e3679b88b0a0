#include "model/testbench/run_report.h"

#include <filesystem>
#include <fstream>
#include <iterator>
#include <stdexcept>

#include "model/testbench/json_writer.h"
#include "model/testbench/stop_signals.h"

namespace irdma_sim::testbench {

namespace {

const char* const kStatusNames[] = {
    "IB_WC_SUCCESS", "IB_WC_LOC_LEN_ERR", "IB_WC_LOC_QP_OP_ERR", "IB_WC_LOC_EEC_OP_ERR",
    "IB_WC_LOC_PROT_ERR", "IB_WC_WR_FLUSH_ERR", "IB_WC_MW_BIND_ERR", "IB_WC_BAD_RESP_ERR",
    "IB_WC_LOC_ACCESS_ERR", "IB_WC_REM_INV_REQ_ERR", "IB_WC_REM_ACCESS_ERR", "IB_WC_REM_OP_ERR",
    "IB_WC_RETRY_EXC_ERR", "IB_WC_RNR_RETRY_EXC_ERR", "IB_WC_LOC_RDD_VIOL_ERR",
    "IB_WC_REM_INV_RD_REQ_ERR", "IB_WC_REM_ABORT_ERR", "IB_WC_INV_EECN_ERR",
    "IB_WC_INV_EEC_STATE_ERR", "IB_WC_FATAL_ERR", "IB_WC_RESP_TIMEOUT_ERR", "IB_WC_GENERAL_ERR"};

}  // namespace

std::string report_json(const Scenario& sc, const SystemCounters& sys, const WorkloadCounters& wl,
                        const std::vector<Check>& checks, const std::vector<std::string>& warnings,
                        bool passed, int interrupted_by, uint64_t interrupted_at_ps, double wall_s,
                        const std::optional<CqWriterFigures>& cq_writer) {
  const HostCounters& h = sys.host;
  // Without a backdoor the device's own counts are unknown: they read as 0.
  const backends::DeviceCounters dev = sys.device.value_or(backends::DeviceCounters{});
  const irdma::irdma_event_counters& ev = sys.events;
  const ibcore::ib_poll_counters& polls = sys.polls;
  JsonWriter j;
  j.begin_object()
      .str("scenario", sc.name)
      .str("file", sc.file)
      .num("seed", sc.seed)
      .boolean("passed", passed)
      .num("sim_time_ps", sys.now_ps)
      .real("wall_time_s", wall_s);
  if (interrupted_by)
    j.begin_object("interrupted").str("signal", signal_name(interrupted_by)).num("sim_time_ps", interrupted_at_ps).end_object();
  else
    j.null("interrupted");
  j.begin_object("counts")
      .num("cqes_written", dev.cqes_written - dev.ccq_cqes)
      .num("extended_cqes", dev.extended_cqes)
      .num("ccq_cqes", dev.ccq_cqes)
      .num("completions_delivered", wl.completions)
      .num("flushed_completions", wl.flushed)
      .num("flush_cqes", dev.flush_cqes)
      .num("qps_in_error", dev.qps_in_error)
      .num("cq_resizes", wl.cq_resizes)
      .num("retired_ring_completions", wl.retired_ring_completions)
      .num("cqes_overflowed", dev.cqes_overflowed)
      .num("cq_errors", wl.cq_errors)
      .num("pairs_torn_down", wl.pairs_torn_down)
      .num("cqes_cleaned", ev.cqes_cleaned)
      .num("ceqes_left", ev.ceqes_left)
      .num("cqes_left", ev.cqes_left)
      .num("aeqes", dev.aeqes)
      .num("corrupt_cqes", wl.corrupt_cqes)
      .num("ext_half_waits", wl.ext_half_waits)
      .num("ud_dropped", dev.ud_dropped)
      .num("ceqes_dropped", dev.ceqes_dropped)
      .num("sends_posted", wl.sends_posted)
      .num("recvs_posted", wl.recvs_posted)
      .num("send_doorbells", wl.doorbells)
      .num("device_wqes_executed", dev.wqes_executed)
      .num("bytes_moved", dev.bytes_moved)
      .num("rnr_stalls", dev.rnr_stalls)
      .num("cqp_commands", dev.cqp_commands)
      .num("mmio_writes", dev.mmio_writes)
      .num("mmio_reads", dev.mmio_reads)
      .num("cq_arms", dev.cq_arm_doorbells)
      .num("arms_taken", dev.arms_taken)
      .num("stale_arms", dev.stale_arms)
      .num("ceqes", dev.ceqes)
      .num("cqacks", dev.cqacks)
      .num("interrupts_raised", dev.interrupts_raised)
      .num("interrupts_moderated", dev.interrupts_moderated)
      .num("events_while_masked", dev.events_while_masked)
      .num("ceqes_consumed", ev.ceqes)
      .num("stale_ceqes", ev.stale_ceqes)
      .num("stale_cq_errors", ev.stale_cq_errors)
      .num("qp_errors", ev.qp_errors)
      .num("stale_qp_errors", ev.stale_qp_errors)
      .num("comp_events", ev.comp_events)
      .num("poller_runs", polls.runs)
      .num("poller_rearms", polls.rearms)
      .num("poller_missed_events", polls.missed)
      .num("poller_budget_spent", polls.budget_spent)
      .num("poller_cancels_waited", polls.cancels_waited)
      .num("msix_delivered", h.msix_delivered)
      .num("msix_lost", dev.msix_lost)
      .num("msix_duplicated", dev.msix_duplicated)
      .num("msix_delayed", dev.msix_delayed)
      .num("missed_interrupts_recovered", ev.missed_interrupts)
      .num("posted_writes_delayed", dev.posted_writes_delayed)
      .num("posted_writes_split", dev.posted_writes_split)
      .num("msix_masked_by_host", h.msix_masked_by_host)
      .num("msix_sent_on_unmask", dev.msix_sent_on_unmask)
      .num("wqe_reads_failed", dev.wqe_reads_failed)
      .num("shadow_reads_failed", dev.shadow_reads_failed)
      .num("cqe_writes_failed", dev.cqe_writes_failed)
      .num("ceqe_writes_failed", dev.ceqe_writes_failed)
      .num("aeqe_writes_failed", dev.aeqe_writes_failed)
      .num("payload_writes_poisoned", dev.payload_writes_poisoned)
      .num("poisoned_payloads_delivered", wl.poisoned_payloads_delivered)
      .num("stale_extended_delivered", wl.stale_extended_delivered)
      .num("pci_errors", ev.pci_errors)
      .num("wqe_fetch_errors", dev.wqe_fetch_errors)
      .num("cqs_catastrophic", dev.cq_catastrophic)
      .num("cqp_hung", dev.cqp_hung)
      .num("function_resets", dev.function_resets)
      .num("function_resets_found", ev.resets_on_function_lost)
      .num("mmio_refused_in_reset", dev.mmio_refused_in_reset)
      .num("device_resets_requested", ev.resets_requested)
      .num("device_resets_on_cqp_timeout", ev.resets_on_cqp_timeout)
      .num("device_resets_on_pci_error", ev.resets_on_pci_error)
      .num("device_fatal_events", wl.device_fatal)
      .num("dma_blocked", dev.dma_blocked)
      .num("cqes_refused", dev.cqes_refused)
      .num("trace_events", sys.trace_events)
      .num("idle_polls", wl.idle_polls)
      .num("pool_cqs", wl.pool_cqs)
      .num("cqs_with_completions", wl.cqs_with_completions)
      .num("cqs_overflowed", dev.cq_overflows);
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
  if (cq_writer) write_cq_writer(j, *cq_writer);
  j.end_object();
  return j.text() + "\n";
}

// driver_path's bins, from the driver's counts of the paths it took.
void cover_driver_paths(trace::Coverage& coverage, const SystemCounters& sys, const WorkloadCounters& wl) {
  const uint64_t taken[] = {sys.polls.missed, wl.retired_ring_completions, wl.flushed, wl.cq_errors,
                            sys.events.cqes_cleaned};
  for (unsigned path = 0; path < std::size(taken); path++)
    if (taken[path]) coverage.hit(trace::Cover::driver_path, {path}, taken[path]);
}

// Written whole or not at all: a reader never finds half a file.
void write_whole(const std::string& path, const std::string& text) {
  const std::string tmp = path + ".tmp";
  {
    std::ofstream file(tmp);
    file << text;
    if (!file.flush()) throw std::runtime_error("cannot write " + tmp);
  }
  std::filesystem::rename(tmp, path);
}

}  // namespace irdma_sim::testbench
