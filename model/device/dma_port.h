// The device's DMA master: reads and writes host memory through its initiator socket,
// annotated with the engine's local time, while the host lets the function master the bus
// (PCI COMMAND's Bus Master Enable); otherwise nothing leaves and the access fails.
#pragma once

#include <cstdint>

#include <tlm>

#include "model/device/engine_time.h"
#include "model/device/pci_config.h"

namespace irdma_sim::device {

class DmaPort {
 public:
  DmaPort(tlm::tlm_initiator_socket<>& socket, EngineTime& time, const PciConfigSpace& config)
      : socket_(socket), time_(time), config_(config) {}

  // False when the host answered with an error (nothing read).
  bool read(uint64_t addr, void* dst, uint32_t len);
  // Posted: false only when the link refused it outright.
  bool write(uint64_t addr, const void* src, uint32_t len);
  // Posted at the kernel's time, not the engine's: for a block with a process of its own.
  bool write_now(uint64_t addr, const void* src, uint32_t len);
  uint64_t errors() const { return errors_; }  // refused by the host, or not sent

 private:
  bool transact(tlm::tlm_command cmd, uint64_t addr, void* data, uint32_t len,
                sc_core::sc_time& delay);

  tlm::tlm_initiator_socket<>& socket_;
  EngineTime& time_;
  const PciConfigSpace& config_;
  tlm::tlm_generic_payload trans_;
  uint64_t errors_ = 0;
};

}  // namespace irdma_sim::device
