// The host memory cache (HMC) as the CQP sets it up (spec: irdma's FPM and SD commands):
// what the function may have of each object (QUERY_FPM_VAL), the counts the driver
// commits and where each object then sits in the function's HMC space (COMMIT_FPM_VAL),
// the segment descriptors that back that space with host pages (UPDATE_PE_SDS), and the
// device's own reads through them. The model keeps QP, CQ and MR contexts on chip, so only
// the page-list (PBLE) object is read from host memory; the others are committed and
// bounded but need no backing. SDs are paged (a page of 512 page addresses each); direct
// SDs, whose 2 MiB the driver would have to find contiguous, are refused.
//
// Layouts this model chose where Linux's are unconfirmed are in model/device/README.md,
// "Bring-up": the CEQ count's width (10:0), the FTN_FLAGS bits beyond atomics, the max-CQE
// feature, SD command bits, overflow SD buffers (refused).
#pragma once

#include <array>
#include <cstdint>

#include "model/device/device_config.h"
#include "model/device/dma_port.h"

namespace irdma_sim::device {

class Hmc {
 public:
  // irdma's HMC object indexes; the ones this device offers.
  enum Object : unsigned { QP = 0, CQ = 1, MR = 6, XFFL = 8, Q1FL = 10, PBLE = 14, kObjects = 21 };
  static constexpr uint32_t kFpmBufBytes = 176;
  static constexpr uint32_t kMaxSds = 4096;        // 2 MiB each: room for every object at its most
  static constexpr uint32_t kMaxPbles = 1u << 16;  // 8-byte page addresses
  static constexpr uint64_t kSdBytes = 2ull << 20;
  static constexpr uint64_t kPageBytes = 4096;

  Hmc(const DeviceConfig& cfg, DmaPort& dma) : cfg_(cfg), dma_(dma) {}

  // The commands; each returns 0 or a CQP minor error code.
  uint16_t query_fpm(uint64_t buf);
  uint16_t commit_fpm(uint64_t buf, uint32_t len);
  uint16_t update_sds(const uint64_t* wqe);
  uint16_t query_features(uint64_t buf, uint32_t len);

  // What the driver committed of `o` (0 before COMMIT_FPM_VAL).
  uint32_t committed(Object o) const { return count_[o]; }
  // Reads page-list entries [first, first + n) through the SDs; false when they are not
  // committed, not backed, or the host refused a read.
  bool read_pbles(uint64_t first, uint64_t n, uint64_t* out);
  // Function level reset: nothing committed, no SD.
  void reset() {
    count_ = {};
    base_ = {};
    sd_ = {};
  }

 private:
  uint32_t max_count(Object o) const;
  static unsigned log2_size(Object o);
  // The host address of HMC byte `fpm`, or 0 when no valid SD (and page) backs it.
  uint64_t host_addr(uint64_t fpm);

  const DeviceConfig& cfg_;
  DmaPort& dma_;
  std::array<uint32_t, kObjects> count_{};
  std::array<uint64_t, kObjects> base_{};  // bytes into the HMC space
  std::array<uint64_t, kMaxSds> sd_{};     // SD data words as UPDATE_PE_SDS gave them
};

}  // namespace irdma_sim::device
