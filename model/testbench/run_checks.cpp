#include "model/testbench/run_checks.h"

#include <algorithm>
#include <cstdio>
#include <exception>

#include "driver/backends/pci_transport.h"
#include "model/testbench/yaml_reader.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::testbench {

SystemCounters read_system_counters(Host& host, ServerProcess* server) {
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

}  // namespace irdma_sim::testbench
