// The device's DMA master: reads and writes host memory through its initiator socket,
// annotated with the engine's local time, while the host lets the function master the bus
// (PCI COMMAND's Bus Master Enable); otherwise nothing leaves and the access fails.
//
// Where the path to memory grants DMI on DmiTerms, an access to a granted region is a copy
// plus the terms' bookkeeping instead of a transaction through every socket on the way:
// the same simulated time and the same trace, a fraction of the host's instructions.
#pragma once

#include <cstdint>
#include <vector>

#include <tlm>

#include "model/device/dma_purpose.h"
#include "model/device/dmi_terms.h"
#include "model/device/engine_time.h"
#include "model/device/pci_config.h"

namespace irdma_sim::device {

class DmaPort {
 public:
  DmaPort(tlm::tlm_initiator_socket<>& socket, EngineTime& time, const PciConfigSpace& config);

  // False when the host answered with an error (nothing read).
  bool read(uint64_t addr, void* dst, uint32_t len, const DmaPurpose& purpose = {});
  // Posted: false only when the link refused it outright.
  bool write(uint64_t addr, const void* src, uint32_t len, const DmaPurpose& purpose = {});
  // Posted at the kernel's time, not the engine's: for a block with a process of its own.
  bool write_now(uint64_t addr, const void* src, uint32_t len);
  uint64_t errors() const { return errors_; }  // refused by the host
  uint64_t blocked() const { return blocked_; }  // not sent: bus mastering off
  bool mastering() const { return config_.bus_master(); }
  uint64_t aborted_reads() const { return aborted_; }  // of errors: completed with Completer Abort
  uint64_t direct_accesses() const { return direct_; }  // through DMI

  // The target took back direct access to [start, end] (the memory was unmapped).
  void invalidate_dmi(uint64_t start, uint64_t end);

 private:
  struct Grant {
    uint64_t start = 1, end = 0;  // inclusive; empty as it starts
    uint8_t* ptr = nullptr;
    DmiTerms* terms = nullptr;
    bool read = false, write = false;
  };
  // Direct-mapped by page: each queue has a few hot regions, so thousands of queues need
  // thousands of entries, and a miss costs only a transported access and a DMI request.
  static constexpr unsigned kGrantBits = 12;

  bool transact(tlm::tlm_generic_payload& trans, tlm::tlm_command cmd, uint64_t addr, void* data, uint32_t len,
                sc_core::sc_time& delay);
  bool direct(tlm::tlm_command cmd, uint64_t addr, void* data, uint32_t len, sc_core::sc_time& delay);
  void request_dmi(tlm::tlm_command cmd, uint64_t addr);
  static uint32_t slot_of(uint64_t addr) { return uint32_t(addr >> 12) & ((1u << kGrantBits) - 1); }
  Grant& grant_for(uint64_t addr) { return grants_[slot_of(addr)]; }

  tlm::tlm_initiator_socket<>& socket_;
  EngineTime& time_;
  const PciConfigSpace& config_;
  // The engine's accesses, and write_now's: an engine may be suspended inside the link (out
  // of posted credits) with its access half done when a process of another block posts.
  tlm::tlm_generic_payload trans_;
  tlm::tlm_generic_payload now_trans_;
  tlm::tlm_generic_payload dmi_request_;  // owns its DmiTermsExtension
  std::vector<Grant> grants_;
  // The slots of grants_ holding a grant, each once: an unmap visits those alone (a driver's
  // probe and remove free dozens of buffers; every one scanning all slots cost more than
  // the commands did).
  std::vector<uint32_t> granted_;
  DmaPurposeExtension* purpose_;  // trans_'s: set for the access in hand, cleared after
  uint64_t errors_ = 0;
  uint64_t blocked_ = 0;
  uint64_t aborted_ = 0;
  uint64_t direct_ = 0;
};

}  // namespace irdma_sim::device
