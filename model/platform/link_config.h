// The simulated PCIe link's configuration (config.link), its faults included: plain data,
// so what reads and writes scenarios needs no SystemC.
#pragma once

#include <cstdint>

namespace irdma_sim::platform {

// What the link and the host's interrupt path get wrong (link_faults.h says what each
// fault does), each a rate per TLP of its kind; none by default.
struct LinkFaultConfig {
  double posted_delay_rate = 0;     // of posted writes
  double posted_delay_max_ns = 2000;
  double split_rate = 0;            // of posted writes over 8 bytes
  double split_gap_ns = 500;        // between one piece's arrival and the next
  bool split_reversed = false;      // the last qword first: breaks the ordering rules
  double msix_lost_rate = 0;        // of MSI-X messages
  double msix_duplicated_rate = 0;
  double msix_delayed_rate = 0;
  double msix_delay_max_ns = 20000;
  double msix_mask_rate = 0;        // of MSI-X messages delivered
  double msix_mask_max_ns = 20000;
  double wqe_read_error_rate = 0;     // of SQ WQE fetches
  double shadow_read_error_rate = 0;  // of CQ arms' shadow area reads
  double cqe_write_error_rate = 0;    // of CQE writes (each half one)
  double ceqe_write_error_rate = 0;
  double aeqe_write_error_rate = 0;
  double payload_write_poison_rate = 0;  // of payload writes (each TLP one)
  uint64_t seed = 1;

  bool writes() const { return posted_delay_rate > 0 || split_rate > 0; }
  bool reads() const { return wqe_read_error_rate > 0 || shadow_read_error_rate > 0; }
  // Writes the root port drops (refused or poisoned) and reports.
  bool dropped_writes() const {
    return cqe_write_error_rate > 0 || ceqe_write_error_rate > 0 || aeqe_write_error_rate > 0 ||
           payload_write_poison_rate > 0;
  }
  bool any() const {
    return writes() || reads() || dropped_writes() || msix_lost_rate > 0 || msix_duplicated_rate > 0 || msix_delayed_rate > 0 ||
           msix_mask_rate > 0;
  }
};

struct LinkConfig {
  double mmio_latency_ns = 400;    // one way, host to device register
  double dma_latency_ns = 300;     // one way, device to host memory
  double bandwidth_gbytes = 15.75; // per direction (Gen3 x16 after encoding)
  uint32_t max_payload_bytes = 256;
  uint32_t max_read_request_bytes = 512;
  uint32_t tlp_overhead_bytes = 24; // header, sequence number, LCRC, framing
  LinkFaultConfig faults;           // none by default
};

}  // namespace irdma_sim::platform
