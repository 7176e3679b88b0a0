// The device given up (irdma_request_reset): a CQP command timed out, so nothing the device
// does from here on can be trusted.
#include "driver/irdma/irdma_device.h"

namespace irdma {

// Linux has the LAN driver reset the function. Here the function stops mastering the bus
// (pci_clear_master), so that nothing it still holds is written into memory freed after
// this; every QP's outstanding work completes in software as flushed, as later posts do;
// and ib-core's client is told (IB_EVENT_DEVICE_FATAL). The CQP refuses commands from now
// on (irdma_cqp::exec), so destroys go on without the device.
void irdma_device::request_reset() {
  bump(events_.resets_requested);
  const uint16_t cmd = hw_.config.read16(hal::PCI_COMMAND);
  hw_.config.write(hal::PCI_COMMAND, 2, cmd & ~hal::PCI_COMMAND_MASTER);
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
      schedule_flush(qp);
    }
  }
  if (event_handler) event_handler({this, nullptr, ibcore::IB_EVENT_DEVICE_FATAL});
}

}  // namespace irdma
