#include "model/system/sim_backdoor.h"

namespace irdma_sim::system {

backends::DeviceCounters SimBackdoor::counters() {
  const auto& cq = dev_.cq_engine().counters();
  const auto& ceq = dev_.ceq_engine().counters();
  const auto& qp = dev_.qp_engine().counters();
  const auto& cqp = dev_.cqp_engine().counters();
  const auto& vec = dev_.vectors().counters();
  const auto& d = dev_.counters();
  backends::DeviceCounters c;
  c.cqes_written = cq.cqes_written;
  c.ccq_cqes = cq.ccq_cqes;
  c.extended_cqes = cq.extended_cqes;
  c.cqes_overflowed = cq.cqes_overflowed;
  c.cqes_refused = cq.cqes_refused;
  c.cq_overflows = cq.overflows;
  c.arms_taken = cq.arms;
  c.stale_arms = cq.stale_arms;
  c.ceqes = ceq.ceqes;
  c.cqacks = ceq.cqacks;
  c.ceqes_dropped = ceq.ceqes_dropped;
  c.aeqes = dev_.aeq_engine().counters().aeqes;
  c.wqes_executed = qp.wqes_executed;
  c.messages = qp.messages;
  c.bytes_moved = qp.bytes_moved;
  c.rnr_stalls = qp.rnr_stalls;
  c.ud_dropped = qp.ud_dropped;
  c.qps_in_error = qp.qps_in_error;
  c.flush_cqes = qp.flush_cqes;
  c.wqe_errors = qp.wqe_errors;
  c.bad_sq_doorbells = qp.bad_doorbells;
  c.wqe_fetch_errors = qp.wqe_fetch_errors;
  c.cq_catastrophic = cq.catastrophic;
  c.cqp_commands = cqp.commands;
  c.cqp_errors = cqp.errors;
  c.cqp_hung = cqp.hung;
  c.mmio_writes = d.mmio_writes;
  c.mmio_reads = d.mmio_reads;
  c.bad_mmio = d.bad_mmio;
  c.function_resets = d.function_resets;
  c.mmio_refused_in_reset = d.mmio_refused_in_reset;
  c.first_function_reset_ps = d.first_function_reset_ps;
  c.cq_arm_doorbells = d.cq_arms;
  c.cq_ack_doorbells = d.cq_acks;
  c.interrupts_raised = vec.interrupts;
  c.interrupts_moderated = vec.moderated;
  c.events_while_masked = vec.events_while_masked;
  c.msix_sent = d.msix_sent;
  c.msix_masked = d.msix_masked;
  c.msix_sent_on_unmask = d.msix_sent_on_unmask;
  c.dma_errors = dev_.dma_errors() - dev_.dma_reads_aborted();  // only the link's faults abort
  c.dma_blocked = dev_.dma_blocked();
  if (const platform::LinkFaultCounters* f = link_.fault_counters()) {
    c.msix_lost = f->msix_lost;
    c.msix_duplicated = f->msix_duplicated;
    c.msix_delayed = f->msix_delayed;
    c.posted_writes_delayed = f->writes_delayed;
    c.posted_writes_split = f->writes_split;
    c.wqe_reads_failed = f->wqe_reads_failed;
    c.shadow_reads_failed = f->shadow_reads_failed;
    c.cqe_writes_failed = f->cqe_writes_failed;
    c.ceqe_writes_failed = f->ceqe_writes_failed;
    c.aeqe_writes_failed = f->aeqe_writes_failed;
    c.payload_writes_poisoned = f->payload_writes_poisoned;
  }
  return c;
}

void SimBackdoor::on_struck_access(std::function<void(const StruckAccess&)> listener) {
  if (!listener) {
    link_.on_struck_access = nullptr;
    return;
  }
  link_.on_struck_access = [listener = std::move(listener)](const device::DmaPurpose& p) {
    if (p.kind == device::DmaPurpose::wqe_fetch) listener({StruckAccess::wqe_fetch, p.object, p.request, 0});
    if (p.kind == device::DmaPurpose::payload_write) listener({StruckAccess::payload_poisoned, p.object, 0, 0});
    if (p.kind == device::DmaPurpose::cqe_write) listener({StruckAccess::cqe_refused, 0, 0, p.object});
  };
}

}  // namespace irdma_sim::system
