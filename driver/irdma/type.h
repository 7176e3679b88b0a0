// The function as the shared code sees it (Linux's irdma_sc_dev, type.h): its registers and
// DMA, the control QP, the HMC, and what the device reported of itself. ctrl.cpp and
// hmc.cpp work on it; it knows nothing of verbs, ids or consumers.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "driver/hal/platform.h"
#include "driver/irdma/cqp.h"
#include "driver/irdma/defs.h"

namespace irdma {

// What the device offers, as the driver reads it from the device at probe: the generation
// from its PCI id, object counts from the HMC it commits, CEQs from the FPM query and the
// MSI-X vectors it gets, features from QUERY_RDMA_FEATURES.
struct irdma_device_caps {
  irdma_vers hw_rev = IRDMA_GEN_2;
  uint16_t vendor_id = 0, device_id = 0;
  uint8_t revision = 0;
  uint64_t mac = 0;            // the port's, from the Device Serial Number (0: none offered)
  uint64_t db_addr_offset = 0;  // BAR0 offset of the doorbell page user contexts map
  uint32_t fw_version = 0;     // major 31:16, minor 15:0
  uint32_t max_cq = 0;         // CQ ids 0 .. max_cq - 1 (0-2 reserved)
  uint32_t max_qp = 0;         // QP ids 0 .. max_qp - 1 (0-1 reserved)
  uint32_t num_ceqs = 0;       // completion vectors
  int max_cqe = IRDMA_MAX_CQ_SIZE - 1;  // as reported to ib-core
  bool cqe_64byte = false;     // IRDMA_FEATURE_64_BYTE_CQE
  bool atomics = false;        // IRDMA_FEATURE_ATOMIC_OPS
  bool cq_resize = false;      // IRDMA_FEATURE_CQ_RESIZE
  uint32_t max_stags = 0;      // STag indexes 1 .. max_stags - 1
  uint32_t pble_entries = 0;   // page-list entries the MRs share
};

// The HMC as the driver set it up (irdma_hmc_info): where each object sits in the
// function's HMC space, and the host pages backing the page-list object, one 4 KiB page per
// PD entry of paged SDs.
struct irdma_hmc {
  uint64_t base[IRDMA_HMC_IW_MAX] = {};  // bytes
  uint32_t count[IRDMA_HMC_IW_MAX] = {};
  uint32_t max_sds = 0;
  uint32_t max_ceqs = 0;
  hal::DmaBuffer pble;                // the PBLE object's pages, contiguous for the CPU
  std::vector<hal::DmaBuffer> pd_pages;  // one per SD the PBLE object spans
  uint32_t first_sd = 0;
};

struct irdma_sc_dev {
  irdma_sc_dev(hal::Platform& hw, uint64_t cqp_timeout_ns) : hw(hw), cqp(hw, cqp_timeout_ns) {}
  // Frees the HMC's memory only: the device may already be gone.
  ~irdma_sc_dev();
  irdma_sc_dev(const irdma_sc_dev&) = delete;
  irdma_sc_dev& operator=(const irdma_sc_dev&) = delete;

  // Bring-up steps; each returns 0 or a negative errno, noting in init_error what failed.
  // irdma_wait_pe_ready, then the doorbell BAR check of irdma_sc_dev_init (ctrl.cpp).
  int wait_pe_ready();
  // QUERY_FPM_VAL, then COMMIT_FPM_VAL of every QP, CQ and MR the function may have and at
  // most `max_pbles` page-list entries (hmc.cpp); sets the object counts in caps.
  int hmc_setup(uint32_t max_pbles);
  // The page-list object's pages, handed to the device through paged SDs (hmc.cpp).
  int hmc_back_pbles();
  void hmc_teardown();
  // QUERY_RDMA_FEATURES (irdma_get_rdma_features, ctrl.cpp).
  int query_features();
  // Page-list entry `index`, as the CPU sees it.
  uint64_t* pble_list(uint32_t index) const;
  // Notes why bring-up stopped (the first failure only) and returns `err`.
  int fail(int err, const std::string& what);

  hal::Platform& hw;
  irdma_device_caps caps;
  irdma_cqp cqp;
  irdma_hmc hmc;
  std::string init_error;

 private:
  // UPDATE_PE_SDS with the SDs in the WQE itself, three at a time.
  int update_sds(uint32_t first_sd, const std::vector<uint64_t>& sd_data);
};

}  // namespace irdma
