// Bringing the device up and down, as irdma_ctrl_init_hw and irdma_rt_init_hw do on
// silicon: everything the driver knows of the device it reads here, from the device.
#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "driver/core/cq_pool.h"
#include "driver/irdma/irdma_device.h"

namespace irdma {
namespace {

struct irdma_pci_id {
  uint16_t vendor;
  uint16_t device;
  irdma_vers gen;
};

// E810 (ice's gen_2 auxiliary device on silicon) and irdma-sim's device models.
constexpr irdma_pci_id kPciIds[] = {
    {0x8086, 0x1591, IRDMA_GEN_2}, {0x8086, 0x1592, IRDMA_GEN_2}, {0x8086, 0x1593, IRDMA_GEN_2},
    {0x8086, 0x1599, IRDMA_GEN_2}, {0x8086, 0x159A, IRDMA_GEN_2}, {0x8086, 0x159B, IRDMA_GEN_2},
    {0x1234, 0x1D02, IRDMA_GEN_2}, {0x1234, 0x1D03, IRDMA_GEN_3},
};

constexpr uint64_t kPeReadyPollNs = 1'000'000'000;

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

std::string hex16(uint16_t v) {
  char s[8];
  std::snprintf(s, sizeof s, "%04x", v);
  return s;
}

std::string codes(const cqp_completion& c) {
  return " (major 0x" + hex16(c.major_err) + ", minor 0x" + hex16(c.minor_err) + ")";
}

}  // namespace

int irdma_device::fail(int err, const std::string& what) {
  if (probe_error_.empty()) probe_error_ = what;
  return err;
}

// The function's identity gives the generation; then memory decoding and bus mastering on
// (pci_enable_device_mem, pci_set_master).
int irdma_device::pci_enable() {
  const uint16_t vendor = hw_.config.read16(hal::PCI_VENDOR_ID);
  const uint16_t device = hw_.config.read16(hal::PCI_DEVICE_ID);
  const auto* id = std::find_if(std::begin(kPciIds), std::end(kPciIds),
                                [&](const irdma_pci_id& i) { return i.vendor == vendor && i.device == device; });
  if (id == std::end(kPciIds))
    return fail(-ENODEV, "PCI function " + hex16(vendor) + ":" + hex16(device) + " is not a device irdma drives");
  if (hw_.bar0.size() < IRDMA_GEN2_BAR0_MIN_SIZE)
    return fail(-ENODEV, "PCI function " + hex16(vendor) + ":" + hex16(device) + " has a BAR0 of " +
                             std::to_string(hw_.bar0.size()) + " bytes; irdma's registers need " +
                             std::to_string(IRDMA_GEN2_BAR0_MIN_SIZE) + ": not the function expected");
  caps_.hw_rev = id->gen;
  const uint16_t cmd = hw_.config.read16(hal::PCI_COMMAND);
  hw_.config.write(hal::PCI_COMMAND, 2, cmd | hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER);
  return 0;
}

// irdma_wait_pe_ready, then the doorbell BAR check of irdma_sc_dev_init.
int irdma_device::wait_pe_ready() {
  for (uint32_t polls = 1;; polls++) {
    if (hw_.bar0.read32(IRDMA_GLPE_CPUSTATUS0) == IRDMA_CPU_READY &&
        hw_.bar0.read32(IRDMA_GLPE_CPUSTATUS1) == IRDMA_CPU_READY &&
        hw_.bar0.read32(IRDMA_GLPE_CPUSTATUS2) == IRDMA_CPU_READY)
      break;
    if (polls == IRDMA_MAX_PE_READY_POLLS)
      return fail(-ETIMEDOUT, "the protocol engine's CPUs did not report ready (GLPE_CPUSTATUS0-2) in " +
                                  std::to_string(polls) + " polls a second apart");
    hw_.exec.delay_ns(kPeReadyPollNs);
  }
  const uint64_t db_size = FIELD_GET(IRDMA_GLPCI_LBARCTRL_PE_DB_SIZE, hw_.bar0.read32(IRDMA_GLPCI_LBARCTRL));
  if (db_size != IRDMA_PE_DB_SIZE_4M && db_size != IRDMA_PE_DB_SIZE_8M)
    return fail(-ENODEV, "GLPCI_LBARCTRL reports PE doorbell size " + std::to_string(db_size) +
                             ": neither 4 MiB (1) nor 8 MiB (2)");
  return 0;
}

// QUERY_FPM_VAL, then COMMIT_FPM_VAL of what this driver uses: every QP, CQ and MR the
// function may have and at most params_.max_pbles page-list entries. The device answers
// with each object's base; the counts committed are the driver's limits from then on.
int irdma_device::hmc_setup() {
  hal::DmaBuffer buf = hw_.dma.alloc_coherent(IRDMA_COMMIT_FPM_BUF_SIZE, 64);
  if (!buf) return fail(-ENOMEM, "allocating the FPM buffer");
  auto* q = static_cast<uint64_t*>(buf.cpu);
  cqp_completion err;
  int ret = cqp_.exec(IRDMA_CQP_OP_QUERY_FPM_VAL, [&](uint64_t* wqe) {
    wqe[4] = buf.iova;
    return uint64_t(0);
  }, &err);
  if (ret) {
    hw_.dma.free_coherent(buf);
    return fail(ret, "QUERY_FPM_VAL" + codes(err));
  }
  hal::dma_rmb();
  hmc_.first_sd = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_FIRST_PE_SD_INDEX, q[0]));
  hmc_.max_sds = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_PE_SDS, q[0]));
  hmc_.max_ceqs = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_CEQS, q[IRDMA_QUERY_FPM_MAX_CEQS_OFFSET / 8]));
  uint32_t want[IRDMA_HMC_IW_MAX] = {};
  want[IRDMA_HMC_IW_QP] = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_QPS, q[1]));
  want[IRDMA_HMC_IW_CQ] = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_CQS, q[2]));
  want[IRDMA_HMC_IW_MR] = uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_CNT, q[48 / 8]));
  want[IRDMA_HMC_IW_PBLE] = std::min(uint32_t(FIELD_GET(IRDMA_QUERY_FPM_MAX_CNT, q[112 / 8])), params_.max_pbles);
  const bool blocks = FIELD_GET(IRDMA_QUERY_FPM_LOG2_SIZE, q[kXfflQueryOffset / 8]) &&
                      FIELD_GET(IRDMA_QUERY_FPM_LOG2_SIZE, q[kQ1flQueryOffset / 8]);
  if (!blocks || !hmc_.max_ceqs || want[IRDMA_HMC_IW_CQ] < 3 || want[IRDMA_HMC_IW_QP] < 2) {
    hw_.dma.free_coherent(buf);
    return fail(-EINVAL, "QUERY_FPM_VAL reported a function irdma cannot use (" + std::to_string(want[IRDMA_HMC_IW_QP]) +
                             " QPs, " + std::to_string(want[IRDMA_HMC_IW_CQ]) + " CQs, " +
                             std::to_string(hmc_.max_ceqs) + " CEQs, free-list block sizes " +
                             (blocks ? "set" : "missing") + ")");
  }

  std::fill_n(q, IRDMA_COMMIT_FPM_BUF_SIZE / 8, 0);
  for (const fpm_slot& s : kFpmSlots) q[s.commit_offset / 8] = want[s.obj];
  hal::dma_wmb();
  ret = cqp_.exec(IRDMA_CQP_OP_COMMIT_FPM_VAL, [&](uint64_t* wqe) {
    wqe[4] = buf.iova;
    return uint64_t(IRDMA_COMMIT_FPM_BUF_SIZE);
  }, &err);
  if (!ret) {
    hal::dma_rmb();
    for (const fpm_slot& s : kFpmSlots) {
      hmc_.count[s.obj] = uint32_t(FIELD_GET(IRDMA_COMMIT_FPM_CNT, q[s.commit_offset / 8]));
      hmc_.base[s.obj] = FIELD_GET(IRDMA_COMMIT_FPM_BASE, q[s.commit_offset / 8]) * 512;
    }
  }
  hw_.dma.free_coherent(buf);
  if (ret) return fail(ret, "COMMIT_FPM_VAL" + codes(err));
  for (const fpm_slot& s : kFpmSlots)
    if (hmc_.count[s.obj] > want[s.obj])
      return fail(-EINVAL, "COMMIT_FPM_VAL answered " + std::to_string(hmc_.count[s.obj]) + " of HMC object " +
                               std::to_string(s.obj) + " for " + std::to_string(want[s.obj]) + " committed");
  caps_.max_qp = hmc_.count[IRDMA_HMC_IW_QP];
  caps_.max_cq = hmc_.count[IRDMA_HMC_IW_CQ];
  caps_.max_stags = hmc_.count[IRDMA_HMC_IW_MR];
  caps_.pble_entries = hmc_.count[IRDMA_HMC_IW_PBLE];
  return 0;
}

// The page-list object's pages: one contiguous buffer for the CPU, handed to the device
// 4 KiB at a time through paged SDs, each pointing to a page of 512 page descriptors.
int irdma_device::hmc_back_pbles() {
  if (!caps_.pble_entries) return 0;
  const uint64_t base = hmc_.base[IRDMA_HMC_IW_PBLE];
  const uint64_t end = base + uint64_t(caps_.pble_entries) * 8;
  const uint64_t first_page = base / IRDMA_HMC_PAGED_BP_SIZE;
  const uint64_t last_page = (end - 1) / IRDMA_HMC_PAGED_BP_SIZE;
  const uint64_t first_sd = base / IRDMA_HMC_DIRECT_BP_SIZE;
  const uint64_t last_sd = (end - 1) / IRDMA_HMC_DIRECT_BP_SIZE;
  if (last_sd >= hmc_.max_sds)
    return fail(-EINVAL, "the committed HMC needs SD " + std::to_string(last_sd) + " of the function's " +
                             std::to_string(hmc_.max_sds));
  hmc_.pble = hw_.dma.alloc_coherent((last_page - first_page + 1) * IRDMA_HMC_PAGED_BP_SIZE, IRDMA_HMC_PAGED_BP_SIZE);
  if (!hmc_.pble) return fail(-ENOMEM, "allocating the page-list object's pages");
  std::vector<uint64_t> sd_data;
  for (uint64_t sd = first_sd; sd <= last_sd; sd++) {
    hal::DmaBuffer pd = hw_.dma.alloc_coherent(IRDMA_HMC_PAGED_BP_SIZE, IRDMA_HMC_PAGED_BP_SIZE);
    if (!pd) return fail(-ENOMEM, "allocating an HMC page descriptor page");
    hmc_.pd_pages.push_back(pd);
    auto* entries = static_cast<uint64_t*>(pd.cpu);
    const uint64_t sd_first_page = sd * IRDMA_HMC_PD_CNT_IN_SD;
    for (uint64_t p = std::max(first_page, sd_first_page);
         p <= std::min(last_page, sd_first_page + IRDMA_HMC_PD_CNT_IN_SD - 1); p++)
      entries[p - sd_first_page] = (hmc_.pble.iova + (p - first_page) * IRDMA_HMC_PAGED_BP_SIZE) | IRDMA_PD_ENTRY_VALID;
    sd_data.push_back(pd.iova | FIELD_PREP(IRDMA_PFHMC_SDDATALOW_PMSDBPCOUNT, IRDMA_HMC_PD_CNT_IN_SD) |
                      IRDMA_PFHMC_SDDATALOW_PMSDVALID);
  }
  hal::dma_wmb();
  return update_sds(hmc_.first_sd + uint32_t(first_sd), sd_data);
}

// UPDATE_PE_SDS with the SDs in the WQE itself, three at a time; a data word without its
// valid bit clears the SD.
int irdma_device::update_sds(uint32_t first_sd, const std::vector<uint64_t>& sd_data) {
  for (size_t i = 0; i < sd_data.size(); i += 3) {
    const size_t n = std::min<size_t>(3, sd_data.size() - i);
    const auto cmd = [&](size_t k) {
      return FIELD_PREP(IRDMA_PFHMC_SDCMD_PMSDIDX, first_sd + i + k) | IRDMA_PFHMC_SDCMD_PMSDWR;
    };
    cqp_completion err;
    const int ret = cqp_.exec(IRDMA_CQP_OP_UPDATE_PE_SDS, [&](uint64_t* wqe) {
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
    if (ret) return fail(ret, "UPDATE_PE_SDS" + codes(err));
  }
  return 0;
}

void irdma_device::hmc_teardown() {
  if (!hmc_.pd_pages.empty()) {
    const uint32_t first_sd = hmc_.first_sd + uint32_t(hmc_.base[IRDMA_HMC_IW_PBLE] / IRDMA_HMC_DIRECT_BP_SIZE);
    update_sds(first_sd, std::vector<uint64_t>(hmc_.pd_pages.size(), 0));
  }
  for (hal::DmaBuffer& pd : hmc_.pd_pages) hw_.dma.free_coherent(pd);
  hmc_.pd_pages.clear();
  if (hmc_.pble) hw_.dma.free_coherent(hmc_.pble);
  hmc_.pble = {};
}

uint64_t* irdma_device::pble_list(uint32_t index) const {
  const uint64_t in_page = hmc_.base[IRDMA_HMC_IW_PBLE] % IRDMA_HMC_PAGED_BP_SIZE;
  return reinterpret_cast<uint64_t*>(static_cast<uint8_t*>(hmc_.pble.cpu) + in_page) + index;
}

// QUERY_RDMA_FEATURES (irdma_get_rdma_features): asked again with room for all of them
// when the first answer counts more than fit.
int irdma_device::query_features() {
  uint32_t room = IRDMA_MAX_FEATURES;
  for (int attempt = 0; attempt < 2; attempt++) {
    hal::DmaBuffer buf = hw_.dma.alloc_coherent(room * 8, 64);
    if (!buf) return fail(-ENOMEM, "allocating the feature buffer");
    cqp_completion err;
    const int ret = cqp_.exec(IRDMA_CQP_OP_QUERY_RDMA_FEATURES, [&](uint64_t* wqe) {
      wqe[4] = buf.iova;
      return uint64_t(room * 8);
    }, &err);
    hal::dma_rmb();
    const auto* f = static_cast<const uint64_t*>(buf.cpu);
    const uint32_t count = ret ? 0 : uint32_t(FIELD_GET(IRDMA_FEATURE_CNT, f[0]));
    if (!ret && count <= room) {
      for (uint32_t i = 0; i < count; i++) {
        const uint64_t value = FIELD_GET(IRDMA_FEATURE_INFO, f[i]);
        switch (FIELD_GET(IRDMA_FEATURE_TYPE, f[i])) {
          case IRDMA_FEATURE_FW_INFO: caps_.fw_version = uint32_t(value); break;
          case IRDMA_FTN_FLAGS:
            caps_.atomics = value & IRDMA_ATOMICS_ALLOWED_BIT;
            caps_.cq_resize = value & IRDMA_SIM_FTN_CQ_RESIZE;
            caps_.cqe_64byte = value & IRDMA_SIM_FTN_64BYTE_CQE;
            break;
          case IRDMA_SIM_FEATURE_MAX_CQE: caps_.max_cqe = int(std::min<uint64_t>(value, IRDMA_MAX_CQ_SIZE - 1)); break;
          default: break;  // a feature this driver does not use
        }
      }
    }
    hw_.dma.free_coherent(buf);
    if (ret) return fail(ret, "QUERY_RDMA_FEATURES" + codes(err));
    if (count < 2) return fail(-EINVAL, "QUERY_RDMA_FEATURES reported " + std::to_string(count) + " features");
    if (count <= room) return caps_.max_cqe > 0 ? 0 : fail(-EINVAL, "QUERY_RDMA_FEATURES reported no CQ size");
    room = count;
  }
  return fail(-EINVAL, "QUERY_RDMA_FEATURES counted more features on the second query");
}

int irdma_device::probe() {
  probe_error_.clear();
  if (int ret = pci_enable()) return ret;
  if (int ret = wait_pe_ready()) return ret;
  cqp_completion err;
  if (int ret = cqp_.create(caps_.hw_rev, &err))
    return fail(ret, ret == -EOPNOTSUPP ? "the device refused the CQP" + codes(err) : "creating the CQP");
  if (int ret = hmc_setup()) return ret;
  if (int ret = hmc_back_pbles()) return ret;
  if (int ret = cqp_.create_ccq()) return fail(ret, "creating the CCQ");
  if (int ret = query_features()) return ret;
  // A vector per CEQ and one for the AEQ.
  const int vectors = hw_.irq.alloc_irq_vectors(2, hmc_.max_ceqs + 1);
  if (vectors < 0) return fail(vectors, "allocating MSI-X vectors");
  caps_.num_ceqs = std::min(hmc_.max_ceqs, unsigned(vectors) - 1);

  cq_used_.assign(caps_.max_cq, false);
  qp_used_.assign(caps_.max_qp, false);
  qp_table_.assign(caps_.max_qp, nullptr);
  cq_table_.assign(caps_.max_cq, nullptr);
  stag_used_.assign(caps_.max_stags, false);
  pd_used_.assign(IRDMA_MAX_PDS, false);
  pble_used_.assign(caps_.pble_entries, false);
  attrs.max_cqe = caps_.max_cqe;
  num_comp_vectors = caps_.num_ceqs;

  if (int ret = eqs_.create()) return fail(ret, "creating the CEQs and the AEQ");
  workers_ = std::make_unique<ibcore::ib_poll_workers>(hw_.exec);
  poll_workers = workers_.get();
  flush_wq_.start();
  eqs_.start_watchdog();
  hw_.irq.request_error_irq([this] { pci_error_detected(); });  // -EOPNOTSUPP: none reported
  return 0;
}

bool irdma_device::in_use() const {
  std::lock_guard<hal::Lock> guard(*rsrc_lock_);
  return ids_in_use_ != 0;
}

int irdma_device::remove() {
  hw_.irq.request_error_irq(nullptr);
  const int kept = ibcore::ib_cq_pool_cleanup(this);
  if (workers_) workers_->stop();
  flush_wq_.stop();  // the workers return before their objects go
  eqs_.stop_watchdog();
  eqs_.destroy();
  hw_.irq.free_irq_vectors();
  hmc_teardown();
  cqp_.destroy();
  return kept;
}

}  // namespace irdma
