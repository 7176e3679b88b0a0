// The HMC (Linux's hmc.c): where the function keeps its objects' contexts in host memory,
// sized by QUERY_FPM_VAL and COMMIT_FPM_VAL, and the page-list object backed by host pages
// through paged SDs.
#include <algorithm>
#include <cerrno>

#include "driver/irdma/type.h"

namespace irdma {
namespace {

// Where each object's qword sits in QUERY_FPM_VAL's and COMMIT_FPM_VAL's buffers.
struct fpm_slot {
  irdma_hmc_rsrc_type obj;
  unsigned query_offset;
  unsigned commit_offset;
};
constexpr fpm_slot kFpmSlots[] = {
    {IRDMA_HMC_IW_QP, 8, 0}, {IRDMA_HMC_IW_CQ, 16, 8}, {IRDMA_HMC_IW_MR, 48, 48}, {IRDMA_HMC_IW_PBLE, 112, 112}};
constexpr unsigned kXfflQueryOffset = 64;
constexpr unsigned kQ1flQueryOffset = 80;

}  // namespace

// QUERY_FPM_VAL, then COMMIT_FPM_VAL of what this driver uses: every QP, CQ and MR the
// function may have and at most max_pbles page-list entries. The device answers
// with each object's base; the counts committed are the driver's limits from then on.
int irdma_sc_dev::hmc_setup(uint32_t max_pbles) {
  hal::DmaBuffer buf = hw.dma.alloc_coherent(IRDMA_COMMIT_FPM_BUF_SIZE, 64);
  if (!buf) return fail(-ENOMEM, "allocating the FPM buffer");
  auto* q = static_cast<uint64_t*>(buf.cpu);
  cqp_completion err;
  int ret = cqp.exec(IRDMA_CQP_OP_QUERY_FPM_VAL, [&](uint64_t* wqe) {
    wqe[4] = buf.iova;
    return uint64_t(0);
  }, &err);
  if (ret) {
    hw.dma.free_coherent(buf);
    return fail(ret, "QUERY_FPM_VAL" + err.describe());
  }
  hal::dma_rmb();
  hmc.first_sd = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_FIRST_PE_SD_INDEX, q[0]));
  hmc.max_sds = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_PE_SDS, q[0]));
  hmc.max_ceqs = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_CEQS, q[IRDMA_QUERY_FPM_MAX_CEQS_OFFSET / 8]));
  uint32_t want[IRDMA_HMC_IW_MAX] = {};
  want[IRDMA_HMC_IW_QP] = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_QPS, q[1]));
  want[IRDMA_HMC_IW_CQ] = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_CQS, q[2]));
  want[IRDMA_HMC_IW_MR] = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_CNT, q[48 / 8]));
  want[IRDMA_HMC_IW_PBLE] = std::min(uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_CNT, q[112 / 8])), max_pbles);
  const bool blocks = FIELD_GET(IRDMA_QUERY_FPM_LOG2_SIZE, q[kXfflQueryOffset / 8]) &&
                      FIELD_GET(IRDMA_QUERY_FPM_LOG2_SIZE, q[kQ1flQueryOffset / 8]);
  if (!blocks || !hmc.max_ceqs || want[IRDMA_HMC_IW_CQ] < 3 || want[IRDMA_HMC_IW_QP] < 2) {
    hw.dma.free_coherent(buf);
    return fail(-EINVAL, "QUERY_FPM_VAL reported a function irdma cannot use (" + std::to_string(want[IRDMA_HMC_IW_QP]) +
                             " QPs, " + std::to_string(want[IRDMA_HMC_IW_CQ]) + " CQs, " +
                             std::to_string(hmc.max_ceqs) + " CEQs, free-list block sizes " +
                             (blocks ? "set" : "missing") + ")");
  }

  std::fill_n(q, IRDMA_COMMIT_FPM_BUF_SIZE / 8, 0);
  for (const fpm_slot& s : kFpmSlots) q[s.commit_offset / 8] = want[s.obj];
  hal::dma_wmb();
  ret = cqp.exec(IRDMA_CQP_OP_COMMIT_FPM_VAL, [&](uint64_t* wqe) {
    wqe[4] = buf.iova;
    return uint64_t(IRDMA_COMMIT_FPM_BUF_SIZE);
  }, &err);
  if (!ret) {
    hal::dma_rmb();
    for (const fpm_slot& s : kFpmSlots) {
      hmc.count[s.obj] = uint32_t(FIELD_GET(IRDMA_COMMIT_FPM_CNT, q[s.commit_offset / 8]));
      hmc.base[s.obj] = FIELD_GET(IRDMA_COMMIT_FPM_BASE, q[s.commit_offset / 8]) * 512;
    }
  }
  hw.dma.free_coherent(buf);
  if (ret) return fail(ret, "COMMIT_FPM_VAL" + err.describe());
  for (const fpm_slot& s : kFpmSlots)
    if (hmc.count[s.obj] > want[s.obj])
      return fail(-EINVAL, "COMMIT_FPM_VAL answered " + std::to_string(hmc.count[s.obj]) + " of HMC object " +
                               std::to_string(s.obj) + " for " + std::to_string(want[s.obj]) + " committed");
  caps.max_qp = hmc.count[IRDMA_HMC_IW_QP];
  caps.max_cq = hmc.count[IRDMA_HMC_IW_CQ];
  caps.max_stags = hmc.count[IRDMA_HMC_IW_MR];
  caps.pble_entries = hmc.count[IRDMA_HMC_IW_PBLE];
  return 0;
}

// The page-list object's pages: one contiguous buffer for the CPU, handed to the device
// 4 KiB at a time through paged SDs, each pointing to a page of 512 page descriptors.
int irdma_sc_dev::hmc_back_pbles() {
  if (!caps.pble_entries) return 0;
  const uint64_t base = hmc.base[IRDMA_HMC_IW_PBLE];
  const uint64_t end = base + uint64_t(caps.pble_entries) * 8;
  const uint64_t first_page = base / IRDMA_HMC_PAGED_BP_SIZE;
  const uint64_t last_page = (end - 1) / IRDMA_HMC_PAGED_BP_SIZE;
  const uint64_t first_sd = base / IRDMA_HMC_DIRECT_BP_SIZE;
  const uint64_t last_sd = (end - 1) / IRDMA_HMC_DIRECT_BP_SIZE;
  if (last_sd >= hmc.max_sds)
    return fail(-EINVAL, "the committed HMC needs SD " + std::to_string(last_sd) + " of the function's " +
                             std::to_string(hmc.max_sds));
  hmc.pble = hw.dma.alloc_coherent((last_page - first_page + 1) * IRDMA_HMC_PAGED_BP_SIZE, IRDMA_HMC_PAGED_BP_SIZE);
  if (!hmc.pble) return fail(-ENOMEM, "allocating the page-list object's pages");
  std::vector<uint64_t> sd_data;
  for (uint64_t sd = first_sd; sd <= last_sd; sd++) {
    hal::DmaBuffer pd = hw.dma.alloc_coherent(IRDMA_HMC_PAGED_BP_SIZE, IRDMA_HMC_PAGED_BP_SIZE);
    if (!pd) return fail(-ENOMEM, "allocating an HMC page descriptor page");
    hmc.pd_pages.push_back(pd);
    auto* entries = static_cast<uint64_t*>(pd.cpu);
    const uint64_t sd_first_page = sd * IRDMA_HMC_PD_CNT_IN_SD;
    for (uint64_t p = std::max(first_page, sd_first_page);
         p <= std::min(last_page, sd_first_page + IRDMA_HMC_PD_CNT_IN_SD - 1); p++)
      entries[p - sd_first_page] = (hmc.pble.iova + (p - first_page) * IRDMA_HMC_PAGED_BP_SIZE) | IRDMA_PD_ENTRY_VALID;
    sd_data.push_back(pd.iova | FIELD_PREP(IRDMA_PFHMC_SDDATALOW_PMSDBPCOUNT, IRDMA_HMC_PD_CNT_IN_SD) |
                      IRDMA_PFHMC_SDDATALOW_PMSDVALID);
  }
  hal::dma_wmb();
  return update_sds(hmc.first_sd + uint32_t(first_sd), sd_data);
}

// UPDATE_PE_SDS with the SDs in the WQE itself, three at a time; a data word without its
// valid bit clears the SD.
int irdma_sc_dev::update_sds(uint32_t first_sd, const std::vector<uint64_t>& sd_data) {
  for (size_t i = 0; i < sd_data.size(); i += 3) {
    const size_t n = std::min<size_t>(3, sd_data.size() - i);
    const auto cmd = [&](size_t k) {
      return FIELD_PREP(IRDMA_PFHMC_SDCMD_PMSDIDX, first_sd + i + k) | IRDMA_PFHMC_SDCMD_PMSDWR;
    };
    cqp_completion err;
    const int ret = cqp.exec(IRDMA_CQP_OP_UPDATE_PE_SDS, [&](uint64_t* wqe) {
      wqe[0] = cmd(0);
      wqe[1] = sd_data[i];
      if (n > 1) {
        wqe[4] = cmd(1) | IRDMA_CQPSQ_UPESD_ENTRY_VALID;
        wqe[5] = sd_data[i + 1];
      }
      if (n > 2) {
        wqe[6] = cmd(2) | IRDMA_CQPSQ_UPESD_ENTRY_VALID;
        wqe[7] = sd_data[i + 2];
      }
      return FIELD_PREP(IRDMA_CQPSQ_UPESD_ENTRY_COUNT, 0);
    }, &err);
    if (ret) return fail(ret, "UPDATE_PE_SDS" + err.describe());
  }
  return 0;
}

void irdma_sc_dev::hmc_teardown() {
  if (!hmc.pd_pages.empty()) {
    const uint32_t first_sd = hmc.first_sd + uint32_t(hmc.base[IRDMA_HMC_IW_PBLE] / IRDMA_HMC_DIRECT_BP_SIZE);
    update_sds(first_sd, std::vector<uint64_t>(hmc.pd_pages.size(), 0));
  }
  for (hal::DmaBuffer& pd : hmc.pd_pages) hw.dma.free_coherent(pd);
  hmc.pd_pages.clear();
  if (hmc.pble) hw.dma.free_coherent(hmc.pble);
  hmc.pble = {};
}

uint64_t* irdma_sc_dev::pble_list(uint32_t index) const {
  const uint64_t in_page = hmc.base[IRDMA_HMC_IW_PBLE] % IRDMA_HMC_PAGED_BP_SIZE;
  return reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(hmc.pble.cpu) + in_page) + index;
}

// Only memory: the device may already be gone.
irdma_sc_dev::~irdma_sc_dev() {
  for (hal::DmaBuffer& pd : hmc.pd_pages) hw.dma.free_coherent(pd);
  if (hmc.pble) hw.dma.free_coherent(hmc.pble);
}

}  // namespace irdma
