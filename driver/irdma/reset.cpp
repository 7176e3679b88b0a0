// The device given up (irdma_request_reset): a CQP command timed out, the function
// reported an uncorrectable PCIe error, or it was reset under the driver, so nothing the
// device does from here on can be trusted.
#include <algorithm>
#include <vector>

#include "driver/irdma/irdma_device.h"

namespace irdma {

// Linux has the LAN driver reset the function. Here the function stops mastering the bus
// (pci_clear_master), so that nothing it still holds is written into memory freed after
// this; every QP's outstanding work completes in software as flushed, as later posts do;
// and ib-core's client is told (IB_EVENT_DEVICE_FATAL). The CQP refuses commands from now
// on (irdma_cqp::exec), so destroys go on without the device, once the function masters the
// bus no more: until then a command's caller may not free what it named. Once only.
void irdma_device::request_reset(reset_cause cause) {
  if (given_up_.exchange(true)) return;
  given_up_ns_.store(std::max<uint64_t>(hw_.exec.now_ns(), 1));
  cqp_.give_up();
  bump(events_.resets_requested);
  bump(cause == reset_cause::cqp_timeout ? events_.resets_on_cqp_timeout
       : cause == reset_cause::pci_error ? events_.resets_on_pci_error
                                         : events_.resets_on_function_lost);
  const uint16_t cmd = hw_.config.read16(hal::PCI_COMMAND);
  // Non-posted: it completes after every write the device sent before it has landed.
  hw_.config.write(hal::PCI_COMMAND, 2, cmd & ~hal::PCI_COMMAND_MASTER);
  cqp_.quiesced();
  {
    // A QP still in the table has not reached free_qp's cancel of its flush work.
    std::lock_guard<hal::Lock> guard(*rsrc_lock_);
    for (irdma_qp_uk* uk : qp_table_) {
      if (!uk) continue;
      irdma_qp* qp = to_iwqp(uk);
      {
        std::lock_guard<hal::Lock> qp_guard(*qp->lock);
        qp->flush_issued = true;
      }
      flush_wq_.schedule(qp);
    }
  }
  // Events the device can no longer raise: every armed CQ's consumer polls what landed
  // (the flush work waits for that, run_flush_work).
  std::vector<uint64_t> cqs;
  {
    std::lock_guard<hal::Lock> guard(*rsrc_lock_);
    for (const irdma_cq* cq : cq_table_)
      if (cq) cqs.push_back(cq->ctx);
  }
  for (const uint64_t ctx : cqs)
    if (irdma_cq* cq = irdma_cq_add_ref(ctx)) {
      irdma_comp_handler(cq);
      irdma_cq_rem_ref(cq);
    }
  if (event_handler) event_handler({this, nullptr, ibcore::IB_EVENT_DEVICE_FATAL});
}

// Whether the function was reset under the driver (an FLR it did not ask for, a reset of
// the whole device) or is gone: a reset function decodes no memory until told to, and one
// gone reads all ones (pci_device_is_present's test). The driver set memory decode at probe
// and never clears it.
bool irdma_device::function_lost() {
  const uint16_t cmd = hw_.config.read16(hal::PCI_COMMAND);
  return hal::pci_possible_error(cmd) || !(cmd & hal::PCI_COMMAND_MEMORY);
}

// pci_error_handlers::error_detected: whatever the error, the function is reset.
void irdma_device::pci_error_detected() {
  bump(events_.pci_errors);
  request_reset(reset_cause::pci_error);
}

}  // namespace irdma
