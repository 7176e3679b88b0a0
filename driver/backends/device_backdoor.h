// What a test harness asks of a device beyond what silicon offers: the device's own
// counters, faults on request, interrupts on demand. The in-process simulation offers it, a
// served model may, real silicon does not. Neither the driver nor the device model sees it.
#pragma once

#include <cstdint>
#include <functional>

namespace backends {

struct DeviceCounters {
  // CQ engine
  uint64_t cqes_written = 0;     // the CCQ's included
  uint64_t ccq_cqes = 0;
  uint64_t extended_cqes = 0;
  uint64_t cqes_overflowed = 0;  // completions not written: their CQ was full or in error
  uint64_t cqes_refused = 0;     // completions whose CQE write failed (refused, or bus mastering off)
  uint64_t cq_overflows = 0;     // CQs that overflowed
  uint64_t arms_taken = 0;
  uint64_t stale_arms = 0;
  // CEQ and AEQ engines
  uint64_t ceqes = 0;
  uint64_t cqacks = 0;
  uint64_t ceqes_dropped = 0;
  uint64_t aeqes = 0;
  // QP engine
  uint64_t wqes_executed = 0;
  uint64_t messages = 0;
  uint64_t bytes_moved = 0;
  uint64_t rnr_stalls = 0;
  uint64_t ud_dropped = 0;
  uint64_t qps_in_error = 0;
  uint64_t flush_cqes = 0;
  uint64_t wqe_errors = 0;
  uint64_t bad_sq_doorbells = 0;  // for QPs that do not exist
  uint64_t wqe_fetch_errors = 0;  // SQ WQE fetches the host refused: each QP put in error
  // Control QP
  uint64_t cqp_commands = 0;
  uint64_t cqp_errors = 0;
  uint64_t cqp_hung = 0;  // 1 once the control QP wedged (config.device.cqp_hang_after_ns)
  // Registers, interrupts, DMA
  uint64_t mmio_writes = 0;
  uint64_t mmio_reads = 0;
  uint64_t bad_mmio = 0;
  uint64_t cq_arm_doorbells = 0;
  uint64_t cq_ack_doorbells = 0;  // CQACK writes, the CQ they name destroyed or not
  uint64_t interrupts_raised = 0;
  uint64_t interrupts_moderated = 0;
  uint64_t events_while_masked = 0;
  uint64_t msix_sent = 0;
  uint64_t msix_masked = 0;       // not sent when raised: the vector masked (held), or no host to take it
  uint64_t dma_errors = 0;  // DMA the host refused, the link's faults aside
  uint64_t dma_blocked = 0;  // DMA the device did not send: bus mastering off
  // What the faults of the link between the model and its host did (config.link.faults):
  // the link a simulation or a served model has; silicon has none.
  uint64_t msix_lost = 0;
  uint64_t msix_duplicated = 0;
  uint64_t msix_delayed = 0;
  uint64_t posted_writes_delayed = 0;
  uint64_t posted_writes_split = 0;
  uint64_t msix_sent_on_unmask = 0;  // held while masked, sent once unmasked (the PBA)
  uint64_t wqe_reads_failed = 0;     // SQ WQE fetches the link's faults refused
  uint64_t shadow_reads_failed = 0;  // CQ arms' shadow area reads the link's faults refused
  uint64_t cqe_writes_failed = 0;    // CQE, CEQE and AEQE writes the link's faults refused
  uint64_t ceqe_writes_failed = 0;
  uint64_t aeqe_writes_failed = 0;
  uint64_t payload_writes_poisoned = 0;  // payload writes the device poisoned, the root port dropped
  uint64_t cq_catastrophic = 0;      // CQs put in error for good by an unreadable shadow area
  // Function level resets (config.device.function_reset_at_ns, the host's FLR or DEVICE_RESET)
  // and the BAR accesses a reset function refused until the host enabled it again.
  uint64_t function_resets = 0;
  uint64_t mmio_refused_in_reset = 0;
  uint64_t first_function_reset_ps = 0;  // when the first struck, on the device's clock (0: none)
};

class DeviceBackdoor {
 public:
  virtual ~DeviceBackdoor() = default;
  virtual DeviceCounters counters() = 0;
  // Fails request `nth_request` (0-based; NOPs not counted) of QP `qp` with spec G.5's flush
  // code `flush_minor`. False when the device has no such QP or carried the request out.
  virtual bool inject_fault(uint32_t qp, uint64_t nth_request, uint16_t flush_minor) = 0;
  // Sends MSI-X `vector` now, as its table entry says: a masked entry counts, sends nothing.
  virtual void force_msix(unsigned vector) = 0;
  // An access the link's faults struck that the bench must know of to expect what follows.
  struct StruckAccess {
    enum Kind {
      wqe_fetch,         // refused: `qp` goes to error at `request` (its SQ's head, NOPs not counted)
      payload_poisoned,  // dropped: the data `qp`'s next completions report may not have landed
      cqe_refused,       // a half of a CQE of CQ `cq` never landed
    } kind;
    uint32_t qp;       // wqe_fetch, payload_poisoned
    uint64_t request;  // wqe_fetch
    uint32_t cq;       // cqe_refused
  };
  // Calls `listener` as each is struck, from the device's thread (before the completion
  // that follows from it is written). Only a device whose link is in this process can.
  virtual void on_struck_access(std::function<void(const StruckAccess&)> listener) {}
};

}  // namespace backends
