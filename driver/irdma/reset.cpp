#include "driver/irdma/reset.h"

#include <algorithm>

namespace irdma {

// Linux has the LAN driver reset the function. Here the function stops mastering the bus,
// and commands already posted may return once it has: until then a command's caller may
// not free what it named (irdma_cqp::exec).
void irdma_reset::request(cause why) {
  if (requested_.exchange(true)) return;
  requested_ns_.store(std::max<uint64_t>(hw_.exec.now_ns(), 1));
  cqp_.give_up();
  stats_.requests.fetch_add(1, std::memory_order_relaxed);
  (why == cause::cqp_timeout ? stats_.on_cqp_timeout
   : why == cause::pci_error ? stats_.on_pci_error
                             : stats_.on_function_lost)
      .fetch_add(1, std::memory_order_relaxed);
  const uint16_t cmd = hw_.config.read16(hal::PCI_COMMAND);
  // Non-posted: it completes after every write the device sent before it has landed.
  hw_.config.write(hal::PCI_COMMAND, 2, cmd & ~hal::PCI_COMMAND_MASTER);
  cqp_.quiesced();
  if (recover) recover();
}

// A reset function decodes no memory until told to, and one gone reads all ones
// (pci_device_is_present's test). The driver set memory decode at probe and never clears it.
bool irdma_reset::function_lost() const {
  const uint16_t cmd = hw_.config.read16(hal::PCI_COMMAND);
  return hal::pci_possible_error(cmd) || !(cmd & hal::PCI_COMMAND_MEMORY);
}

void irdma_reset::pci_error_detected() {
  stats_.pci_errors.fetch_add(1, std::memory_order_relaxed);
  request(cause::pci_error);
}

}  // namespace irdma
