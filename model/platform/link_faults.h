// Misbehaviour the PCIe link and the host's interrupt path may show, drawn per TLP from a
// seeded generator (the same scenario and seed draw the same faults):
//  - a posted write held in the link; every later posted write and MSI waits behind it,
//    as PCIe ordering requires (posted requests do not pass posted requests);
//  - a write of more than 8 bytes split into 8-byte TLPs that land apart, in address order
//    (or, `split_reversed`, in the other order: a contract violation the checks must catch);
//  - an MSI-X message the host loses, delivers twice, or delivers late;
//  - a vector the host masks in the MSI-X table as its interrupt comes in, for a while (as
//    an OS moving an interrupt does): what the device raises meanwhile must wait in the PBA;
//  - a device read the host completes with Completer Abort (the IOMMU or the memory
//    refused it), for the reads of one purpose (device/dma_purpose.h): an SQ WQE fetch, or
//    a CQ's shadow area read for its arm;
//  - a CQE, CEQE or AEQE write the host refuses (Unsupported Request: an IOMMU fault):
//    posted, so the device is not told; the root port reports it to the host (AER);
//  - a payload write the device poisons (EP set: its copy of the data went bad inside it,
//    a parity or ECC error it forwards). This host's root port forwards no poison into
//    memory: it drops the write and reports Poisoned TLP Received (AER). The device goes
//    on and completes the work as if the data had landed.
#pragma once

#include <cstdint>
#include <random>

#include "model/device/dma_purpose.h"
#include "model/platform/link_config.h"

namespace irdma_sim::platform {

struct LinkFaultCounters {
  uint64_t writes_delayed = 0;
  uint64_t writes_split = 0;
  uint64_t msix_lost = 0;
  uint64_t msix_duplicated = 0;
  uint64_t msix_delayed = 0;
  uint64_t msix_masked = 0;  // vectors the host masked for a while
  uint64_t wqe_reads_failed = 0;
  uint64_t shadow_reads_failed = 0;
  uint64_t cqe_writes_failed = 0;
  uint64_t ceqe_writes_failed = 0;
  uint64_t aeqe_writes_failed = 0;
  uint64_t payload_writes_poisoned = 0;
};

class LinkFaults {
 public:
  // Where the faults are drawn: each place its own stream, so one's draws leave another's be.
  static constexpr uint64_t kLinkStream = 0x6c696e6b'6661756cull;  // "linkfaul"
  static constexpr uint64_t kHostStream = 0x686f7374'6d61736bull;  // "hostmask"
  explicit LinkFaults(const LinkFaultConfig& cfg, uint64_t stream = kLinkStream) : cfg_(cfg), rng_(cfg.seed ^ stream) {}

  const LinkFaultConfig& config() const { return cfg_; }
  const LinkFaultCounters& counters() const { return counters_; }

  // Each returns what to do with one TLP; a kind whose rate is 0 draws nothing, so adding
  // one kind leaves the draws of the others as they were.
  uint64_t posted_delay_ps();          // 0: not held
  uint64_t split_gap_ps(uint32_t len);  // 0: lands whole
  enum class Msix { deliver, lose, duplicate };
  Msix msix_fate();
  uint64_t msix_delay_ps();            // 0: on time
  uint64_t msix_mask_ps();             // 0: left unmasked
  bool read_fails(const device::DmaPurpose& purpose);  // completed with Completer Abort
  enum class Write { lands, refused, poisoned };  // refused: Unsupported Request
  Write write_fate(const device::DmaPurpose& purpose);

 private:
  bool draw(double rate);
  bool strikes(double rate, uint64_t& count);  // draws; counts a strike
  uint64_t up_to_ps(double max_ns);

  LinkFaultConfig cfg_;
  std::mt19937_64 rng_;
  LinkFaultCounters counters_;
};

}  // namespace irdma_sim::platform
