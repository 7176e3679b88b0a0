#include "model/system/run_scenario.h"

#include "model/system/coverage_report.h"

#include <algorithm>
#include <chrono>
#include <csignal>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <optional>

#include "model/system/completion_log.h"
#include "model/system/cq_writer_report.h"
#include "model/system/coverage_report.h"
#include "driver/backends/vfio/vfio_transport.h"
#include "driver/backends/vfio_user/client.h"
#include "model/system/json_writer.h"
#include "model/system/pcie_system.h"
#include "model/system/scenario.h"
#include "model/system/scoreboard.h"
#include "model/system/served_device.h"
#include "model/system/server_child.h"
#include "model/system/stop_signals.h"
#include "model/system/simulation.h"
#include "model/trace/trace_log.h"
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

// The system's counters after teardown, taken once: the checks and the report read them,
// and a backend in another process may be gone by the time the report is written.
struct SystemCounters {
  uint64_t now_ps = 0;
  HostCounters host;
  std::optional<backends::DeviceCounters> device;  // where the backend has a backdoor
  irdma::irdma_event_counters events;
  ibcore::ib_poll_counters polls;
  uint64_t trace_events = 0;
  uint64_t late_trace_events = 0;
  uint32_t eq_watchdog_us = 0;  // the driver's watchdog period, for the checks
};

// `server`: the child serving the device, if any; when it has gone, the error says how.
SystemCounters counters_of(Host& host, ServerChild* server) {
  SystemCounters c;
  c.now_ps = host.now_ps();
  c.host = host.host_counters();
  try {
    if (host.backdoor()) c.device = host.backdoor()->counters();
  } catch (const pcie::PciTransportError& e) {
    if (!server) throw;
    const std::exception_ptr transport_error = std::current_exception();
    std::string how;
    try {
      how = server->wait(1000);
    } catch (const std::runtime_error&) {
      std::rethrow_exception(transport_error);  // the server still runs: the transport's error says what is wrong
    }
    throw std::runtime_error("the device server ended during the run (" + (how.empty() ? "exit status 0" : how) +
                             "): " + e.what());
  }
  c.events = host.driver().event_counters();
  c.eq_watchdog_us = host.driver().params().eq_watchdog_us;
  if (host.driver().poll_workers) c.polls = host.driver().poll_workers->counters();
  if (host.trace()) {
    c.trace_events = host.trace()->events_written();
    c.late_trace_events = host.trace()->late_events();
  }
  return c;
}

// What holds of the whole system after teardown: the host's view always, the device's own
// counters where the backend offers a backdoor to read them.
void system_checks(const SystemCounters& sys, const WorkloadCounters& wl, Scoreboard& sb) {
  const HostCounters& h = sys.host;
  const std::optional<backends::DeviceCounters>& dev = sys.device;
  // The host sees a refused DMA where its memory is simulated; a host in another process
  // does not, and the device's own count (the same accesses, from its side) says it.
  const uint64_t dma_errors = std::max(h.dma_errors, dev ? dev->dma_errors : 0);
  sb.record("no_dma_errors", dma_errors == 0,
            std::to_string(dma_errors) + " DMA access(es) to unmapped host memory");
  // A function in reset refuses BAR accesses, as silicon does, until the driver has seen
  // the reset: those the device counts apart, and the host counted too.
  const uint64_t in_reset = dev ? dev->mmio_refused_in_reset : 0;
  const uint64_t mmio_errors = h.mmio_errors - std::min(h.mmio_errors, in_reset) + (dev ? dev->bad_mmio : 0);
  sb.record("no_mmio_errors", mmio_errors == 0,
            std::to_string(mmio_errors) + " MMIO access(es) the device refused" +
                (in_reset ? " (and " + std::to_string(in_reset) + " it refused while reset)" : "") +
                (h.last_mmio_error.empty() ? "" : "; the last: " + h.last_mmio_error));
  sb.record("no_dma_memory_left_mapped", h.dma_bytes_mapped == 0,
            std::to_string(h.dma_bytes_mapped) + " bytes of DMA memory still mapped after teardown");
  sb.record("no_spurious_interrupts", h.spurious_interrupts == 0,
            std::to_string(h.spurious_interrupts) + " MSI-X message(s) for no handler");
  if (!dev) return;
  if (dev->msix_lost)
    sb.record("lost_interrupts_recovered", sys.events.missed_interrupts > 0,
              std::to_string(dev->msix_lost) + " MSI-X message(s) lost, " +
                  std::to_string(sys.events.missed_interrupts) + " handler run(s) the driver's watchdog made for them");
  // A flush CQE may stand for many completions (GEN_2), or for none (its WQEs were
  // reported already), and software flushes have none: flushes are left out.
  // CQEs a destroyed QP left unpolled are never reported either: those destroy cleaned out
  // of the rings, those written after the clean that the poll path dropped, and those a CQ
  // freed after its QPs took with it.
  const uint64_t cleaned = sys.events.cqes_cleaned + wl.destroyed_qp_cqes + sys.events.cqes_left;
  const uint64_t data_cqes = dev->cqes_written - dev->ccq_cqes - dev->flush_cqes - cleaned;
  const uint64_t delivered = wl.completions - wl.flushed;
  // Once the driver gave the device up, CQEs and CEQEs behind one the host refused are
  // never consumed (their work completes in software, as flushed): fewer may be.
  const auto& ev = sys.events;
  const bool given_up = ev.resets_requested > 0;
  const char* const given_up_note = given_up ? "; the device was given up: what lies behind a refused entry is never consumed" : "";
  sb.record("cqes_written_equal_completions_delivered", given_up ? data_cqes >= delivered : data_cqes == delivered,
            std::to_string(data_cqes) + " CQEs written, " + std::to_string(delivered) +
                " completions delivered (flushes and " + std::to_string(cleaned) +
                " CQEs of destroyed QPs aside)" + given_up_note);
  // Once the device was given up, an AEQE the host refused (and those behind it) reports
  // nothing: fewer CQ errors may reach the workload. An error for a CQ the workload freed
  // before the driver read it (the pair's other CQ, when interrupts run late) reaches no one.
  const uint64_t cqs_in_error = dev->cq_overflows + dev->cq_catastrophic;
  const uint64_t cq_errors_read = wl.cq_errors + ev.stale_cq_errors;
  sb.record("every_cq_error_recovered",
            (given_up ? cq_errors_read <= cqs_in_error : cq_errors_read == cqs_in_error) &&
                wl.pairs_torn_down >= (wl.cq_errors ? 1u : 0u),
            std::to_string(dev->cq_overflows) + " CQ(s) overflowed, " + std::to_string(dev->cq_catastrophic) +
                " lost to an unreadable shadow area, " + std::to_string(wl.cq_errors) + " IB_EVENT_CQ_ERR, " +
                std::to_string(ev.stale_cq_errors) + " for a CQ already freed, " +
                std::to_string(wl.pairs_torn_down) + " pair(s) torn down" + given_up_note);
  if (dev->wqe_reads_failed || dev->shadow_reads_failed)
    sb.record("every_refused_read_reported",
              dev->wqe_fetch_errors == dev->wqe_reads_failed && dev->cq_catastrophic == dev->shadow_reads_failed,
              std::to_string(dev->wqe_reads_failed) + " WQE fetch(es) refused, " + std::to_string(dev->wqe_fetch_errors) +
                  " QP(s) put in error for them; " + std::to_string(dev->shadow_reads_failed) +
                  " shadow area read(s) refused, " + std::to_string(dev->cq_catastrophic) +
                  " CQ(s) lost to them with LCE_CQ_CATASTROPHIC");
  sb.record("no_device_wqe_errors", dev->wqe_errors == 0 && dev->bad_sq_doorbells == 0,
            std::to_string(dev->wqe_errors) + " WQE error(s), " + std::to_string(dev->bad_sq_doorbells) +
                " doorbell(s) for unknown QPs");
  // Completion events: a CEQE needs an arm, and the driver consumed and acknowledged each.
  sb.record("ceqes_not_above_arms", dev->ceqes <= dev->arms_taken,
            std::to_string(dev->ceqes) + " CEQEs for " + std::to_string(dev->arms_taken) + " arms taken");
  // An acknowledgement may race the destruction of its CQ (the driver's threads do not
  // order them): what must hold is that the driver wrote one, not that the CQ still took it.
  sb.record("every_ceqe_consumed_and_acknowledged",
            (given_up ? ev.ceqes + ev.ceqes_left <= dev->ceqes : ev.ceqes + ev.ceqes_left == dev->ceqes) &&
                (dev->function_resets ? dev->cq_ack_doorbells <= ev.ceqes - ev.stale_ceqes
                                      : dev->cq_ack_doorbells == ev.ceqes - ev.stale_ceqes),
            std::to_string(dev->ceqes) + " CEQEs written, " + std::to_string(ev.ceqes) + " consumed (" +
                std::to_string(ev.stale_ceqes) + " for no CQ), " + std::to_string(ev.ceqes_left) +
                " left in CEQs destroyed under them, " + std::to_string(dev->cq_ack_doorbells) + " CQACKs; " +
                std::to_string(ev.interrupts) + " interrupts handled" + given_up_note);
  // Every write the root port dropped is an error it reported, on which the driver gave the
  // device up once. A poisoned message's data may be reported done before that: at both
  // ends for an RDMA WRITE with immediate, at most.
  const uint64_t writes_refused = dev->cqe_writes_failed + dev->ceqe_writes_failed + dev->aeqe_writes_failed;
  const uint64_t poisoned = dev->payload_writes_poisoned;
  const bool dropped_reported = ev.pci_errors == writes_refused + poisoned && ev.resets_requested == 1 &&
                                wl.device_fatal == 1;
  const std::string reported = std::to_string(ev.pci_errors) + " PCIe error(s) reported to the driver, " +
                               std::to_string(ev.resets_requested) + " reset(s) requested, " +
                               std::to_string(wl.device_fatal) + " IB_EVENT_DEVICE_FATAL";
  // A refused extended half of a 64-byte CQE may be read stale with its main half: once.
  if (writes_refused)
    sb.record("every_refused_write_reported",
              dropped_reported && wl.stale_extended_delivered <= dev->cqe_writes_failed,
              std::to_string(dev->cqe_writes_failed) + " CQE, " + std::to_string(dev->ceqe_writes_failed) +
                  " CEQE and " + std::to_string(dev->aeqe_writes_failed) + " AEQE write(s) refused; " + reported +
                  "; " + std::to_string(wl.stale_extended_delivered) +
                  " completion(s) read with a stale extended half");
  if (poisoned)
    sb.record("every_poisoned_write_reported", dropped_reported && wl.poisoned_payloads_delivered <= 2 * poisoned,
              std::to_string(poisoned) + " payload write(s) poisoned; " + reported + "; " +
                  std::to_string(wl.poisoned_payloads_delivered) +
                  " completion(s) reported work done whose data never landed");
  if (dev->cqp_hung)
    sb.record("device_given_up_after_cqp_hang", ev.resets_requested == 1 && wl.device_fatal == 1,
              "the control QP wedged; " + std::to_string(ev.resets_requested) +
                  " reset(s) requested by the driver on its CQP timeout, " + std::to_string(wl.device_fatal) +
                  " IB_EVENT_DEVICE_FATAL; " + std::to_string(dev->dma_blocked) +
                  " DMA access(es) the quiesced device did not send");
  // The watchdog looks for a reset only while the device is the driver's: it may be given
  // up for another fault before the reset, or before the watchdog's look after it (which
  // other work on its CPU may hold back for up to a period).
  const uint64_t watchdog_ps = 2 * uint64_t(sys.eq_watchdog_us) * 1'000'000;
  const bool given_up_first = !ev.resets_on_function_lost && ev.given_up_ns &&
                              ev.given_up_ns * 1000 <= dev->first_function_reset_ps + watchdog_ps;
  if (dev->function_resets)
    sb.record("device_given_up_after_function_reset",
              dev->function_resets == 1 && (ev.resets_on_function_lost == 1 || given_up_first) &&
                  ev.resets_requested == 1 && wl.device_fatal == 1,
              std::to_string(dev->function_resets) + " reset(s) of the function, " +
                  std::to_string(ev.resets_on_function_lost) + " found by the driver's watchdog, " +
                  std::to_string(ev.resets_requested) + " reset(s) requested, " + std::to_string(wl.device_fatal) +
                  " IB_EVENT_DEVICE_FATAL; " + std::to_string(dev->mmio_refused_in_reset) +
                  " BAR access(es) refused in between" +
                  (given_up_first ? "; the device was given up for another fault first" : ""));
  sb.record("no_control_command_errors", dev->cqp_errors == 0,
            std::to_string(dev->cqp_commands) + " CQP commands, " + std::to_string(dev->cqp_errors) + " failed");
}

// A fault the scenario asks for that never struck tested nothing: said, as a request
// fault's rate that drew no request is.
void warn_of_idle_faults(const SimConfig& cfg, const backends::DeviceCounters& c, const HostCounters& h,
                         std::vector<std::string>& warnings) {
  const platform::LinkFaultConfig& f = cfg.link.faults;
  const struct {
    const char* key;
    double rate;
    uint64_t struck;
  } kinds[] = {{"posted_delay_rate", f.posted_delay_rate, c.posted_writes_delayed},
               {"split_rate", f.split_rate, c.posted_writes_split},
               {"msix_lost_rate", f.msix_lost_rate, c.msix_lost},
               {"msix_duplicated_rate", f.msix_duplicated_rate, c.msix_duplicated},
               {"msix_delayed_rate", f.msix_delayed_rate, c.msix_delayed},
               {"msix_mask_rate", f.msix_mask_rate, h.msix_masked_by_host},
               {"wqe_read_error_rate", f.wqe_read_error_rate, c.wqe_reads_failed},
               {"shadow_read_error_rate", f.shadow_read_error_rate, c.shadow_reads_failed},
               {"cqe_write_error_rate", f.cqe_write_error_rate, c.cqe_writes_failed},
               {"ceqe_write_error_rate", f.ceqe_write_error_rate, c.ceqe_writes_failed},
               {"aeqe_write_error_rate", f.aeqe_write_error_rate, c.aeqe_writes_failed},
               {"payload_write_poison_rate", f.payload_write_poison_rate, c.payload_writes_poisoned}};
  for (const auto& k : kinds)
    if (k.rate > 0 && k.struck == 0) {
      char rate[32];
      std::snprintf(rate, sizeof rate, "%g", k.rate);
      warnings.push_back(std::string("config.link.faults.") + k.key + " = " + rate + " struck nothing in this run");
    }
  if (cfg.device.function_reset_at_ns && !c.function_resets)
    warnings.push_back("config.device.function_reset_at_ns = " + std::to_string(*cfg.device.function_reset_at_ns) +
                       " struck nothing in this run: it ended before, or came before the driver enabled the function");
  if (cfg.device.cqp_hang_after_ns && !c.cqp_hung)
    warnings.push_back("config.device.cqp_hang_after_ns = " + std::to_string(*cfg.device.cqp_hang_after_ns) +
                       " struck nothing in this run: the control QP took no command after it");
}

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

// What the scenario asks of the device that the device, as the driver found it at probe,
// does not offer: warnings, and a ScenarioError where the scenario cannot mean anything
// there (another generation: its CQE layout, opcodes and atomics are another device's).
// `elsewhere`: the device was not built from this scenario (a served model, silicon).
std::vector<std::string> device_mismatches(const Scenario& sc, const irdma::irdma_device& dev, bool elsewhere) {
  const irdma::irdma_device_caps& caps = dev.caps();
  const device::DeviceConfig& want = sc.config.device;
  std::vector<std::string> warnings;
  if (elsewhere) {
    if (unsigned(caps.hw_rev) != want.generation)
      throw ScenarioError(sc.file + ": config.device.generation is " + std::to_string(want.generation) +
                          " but the device is GEN_" + std::to_string(unsigned(caps.hw_rev)) +
                          ": the scenario cannot mean the same there");
    if (caps.num_ceqs != want.num_ceqs)
      warnings.push_back("config.device.num_ceqs is " + std::to_string(want.num_ceqs) + " but the device has " +
                         std::to_string(caps.num_ceqs) + " completion vectors: the run used the device's");
    if (caps.max_cqe != int(want.max_cqe))
      warnings.push_back("config.device.max_cqe is " + std::to_string(want.max_cqe) + " but the device reports " +
                         std::to_string(caps.max_cqe) + ": the run used the device's");
  }
  // ib_cq_pool_get takes its hint modulo the vectors it spreads over (no more than the
  // CPUs); a CQ of its own asks the driver, which gives a vector it lacks CEQ 0.
  const unsigned pool_vectors = std::max(1u, std::min(dev.num_comp_vectors, dev.num_online_cpus));
  for (const QpPairSpec& p : sc.pairs)
    for (int side = 0; side < 2; side++) {
      if (p.vector_of(side) < 0 || (side == 1 && p.peer_cq_vector == p.cq_vector)) continue;
      const unsigned hint = unsigned(p.vector_of(side));
      const std::string key = "qp_pairs " + p.name + ": " + (side ? "peer_cq_vector " : "cq_vector ");
      if (!p.own_cqs && hint >= pool_vectors)
        warnings.push_back(key + std::to_string(hint) + " folded onto vector " + std::to_string(hint % pool_vectors) +
                           " (the pool spreads over " + std::to_string(pool_vectors) + ": the device's " +
                           std::to_string(caps.num_ceqs) + " completion vectors, at most one per CPU)");
      else if (p.own_cqs && hint >= caps.num_ceqs)
        warnings.push_back(key + std::to_string(hint) + " is beyond the device's " + std::to_string(caps.num_ceqs) +
                           " completion vectors: its CQ went to vector 0");
    }
  return warnings;
}

// The system `backend` names (RunOptions::backend), with the server child it needs.
std::unique_ptr<Host> make_host(const SimConfig& cfg, const std::string& backend, const std::string& trace_path,
                                const std::string& stimulus_path, std::unique_ptr<ServerChild>& server) {
  if (backend == "sim") return std::make_unique<Simulation>(cfg, trace_path, stimulus_path);
  std::string socket;
  if (backend == "vfio-user") {
    ServeOptions serve;
    serve.trace_path = trace_path;
    server = std::make_unique<ServerChild>(cfg, serve);
    socket = server->socket_path();
  } else if (backend.rfind("vfio-user:", 0) == 0 && backend.size() > 10) {
    socket = backend.substr(10);
  } else if (backend.rfind("vfio:", 0) == 0 && backend.size() > 5) {
    // Silicon: whatever a device-specific region may be, it is no backdoor of ours.
    return std::make_unique<PcieSystem>(std::make_unique<pcie::VfioTransport>(backend.substr(5)), driver_params(cfg),
                                        PcieSystem::kNoBackdoor);
  } else {
    throw std::invalid_argument("unknown backend '" + backend + "' (sim, vfio-user, vfio-user:SOCKET or vfio:DDDD:BB:DD.F)");
  }
  return std::make_unique<PcieSystem>(std::make_unique<pcie::vfio_user::VfioUserClient>(socket), driver_params(cfg));
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

}  // namespace

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

RunResult run_scenario(const std::string& scenario_path, const std::string& out_dir,
                       const RunOptions& options) {
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
  if (!trace) std::filesystem::remove(out / "trace.jsonl");

  const std::string trace_path = trace ? (out / "trace.jsonl").string() : "";
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
  std::unique_ptr<ServerChild> server;
  std::unique_ptr<Host> made;
  try {
    made = make_host(sc.config, options.backend, trace_path, stimulus_path, server);
  } catch (const ScenarioError& e) {
    throw ScenarioError(sc.file + ": " + e.what());
  }
  Host& host = *made;
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
  std::optional<CqWriterFigures> cq_writer;
  if (device::CqWriter* w = host.cq_writer()) cq_writer = cq_writer_figures(*w, sc.config.device.cq_writer_timing.value_or(device::CqWriterTiming::rtl), out);
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
    warnings.push_back("no trace.jsonl: backend " + options.backend +
                       " has no transaction log here (a served device's server keeps its own; silicon none)");
  completions.close();
  host.close_trace();
  const SystemCounters sys = counters_of(host, server.get());
  cover_driver_paths(coverage, sys, counts);
  system_checks(sys, counts, sb);
  if (sys.device) warn_of_idle_faults(sc.config, *sys.device, sys.host, warnings);
  if (sys.late_trace_events)
    sb.record("trace_in_time_order", false,
              std::to_string(sys.late_trace_events) + " event(s) were logged after later ones were written");
  // What the workload kept of the driver's goes before the driver does.
  wl.reset();
  if (server) {
    // The driver lets go of the device; the server, done with its one client, ends.
    made.reset();
    const std::string how = server->wait(10'000);
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

}  // namespace irdma_sim::system
