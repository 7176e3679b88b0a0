// Bringing the device up and down, as irdma_ctrl_init_hw and irdma_rt_init_hw do on
// silicon: everything the driver knows of the device it reads here, from the device.
#include <algorithm>
#include <cerrno>
#include <cstdio>

#include "driver/core/cq_pool.h"
#include "driver/irdma/irdma_device.h"
#include "driver/irdma/main.h"

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

std::string hex16(uint16_t v) {
  char s[8];
  std::snprintf(s, sizeof s, "%04x", v);
  return s;
}

}  // namespace

// The function's identity gives the generation; then memory decoding and bus mastering on
// (pci_enable_device_mem, pci_set_master).
int irdma_pci_f::pci_enable() {
  hal::Platform& hw = sc_dev.hw;
  const uint16_t vendor = hw.config.read16(hal::PCI_VENDOR_ID);
  const uint16_t device = hw.config.read16(hal::PCI_DEVICE_ID);
  const auto* id = std::find_if(std::begin(kPciIds), std::end(kPciIds),
                                [&](const irdma_pci_id& i) { return i.vendor == vendor && i.device == device; });
  if (id == std::end(kPciIds))
    return sc_dev.fail(-ENODEV, "PCI function " + hex16(vendor) + ":" + hex16(device) + " is not a device irdma drives");
  if (hw.bar0.size() < IRDMA_GEN2_BAR0_MIN_SIZE)
    return sc_dev.fail(-ENODEV, "PCI function " + hex16(vendor) + ":" + hex16(device) + " has a BAR0 of " +
                                    std::to_string(hw.bar0.size()) + " bytes; irdma's registers need " +
                                    std::to_string(IRDMA_GEN2_BAR0_MIN_SIZE) + ": not the function expected");
  irdma_device_caps& caps = sc_dev.caps;
  caps.hw_rev = id->gen;
  caps.vendor_id = vendor;
  caps.device_id = device;
  caps.revision = uint8_t(hw.config.read(hal::PCI_REVISION_ID, 1));
  // On silicon the MAC comes from the LAN function's netdev; E810's serial number carries
  // it too (its bytes 7-5 and 2-0).
  if (const uint64_t dsn = hw.config.get_dsn()) caps.mac = (dsn >> 40) << 24 | (dsn & 0xFFFFFF);
  const uint16_t cmd = hw.config.read16(hal::PCI_COMMAND);
  hw.config.write(hal::PCI_COMMAND, 2, cmd | hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER);
  return 0;
}

int irdma_pci_f::ctrl_init_hw() {
  sc_dev.init_error.clear();
  if (int ret = pci_enable()) return ret;
  if (int ret = sc_dev.wait_pe_ready()) return ret;
  irdma_device_caps& caps = sc_dev.caps;
  cqp_completion err;
  if (int ret = sc_dev.cqp.create(caps.hw_rev, &err))
    return sc_dev.fail(ret, ret == -EOPNOTSUPP ? "the device refused the CQP" + err.describe() : "creating the CQP");
  if (int ret = sc_dev.hmc_setup(params.max_pbles)) return ret;
  if (int ret = sc_dev.hmc_back_pbles()) return ret;
  if (int ret = sc_dev.cqp.create_ccq()) return sc_dev.fail(ret, "creating the CCQ");
  if (int ret = sc_dev.query_features()) return ret;
  // A vector per CEQ and one for the AEQ.
  const int vectors = sc_dev.hw.irq.alloc_irq_vectors(2, sc_dev.hmc.max_ceqs + 1);
  if (vectors < 0) return sc_dev.fail(vectors, "allocating MSI-X vectors");
  caps.num_ceqs = std::min(sc_dev.hmc.max_ceqs, unsigned(vectors) - 1);

  allocated_cqs.assign(caps.max_cq, false);
  allocated_qps.assign(caps.max_qp, false);
  qp_table.assign(caps.max_qp, nullptr);
  cq_table.assign(caps.max_cq, nullptr);
  allocated_mrs.assign(caps.max_stags, false);
  allocated_pds.assign(IRDMA_MAX_PDS, false);
  allocated_ahs.assign(IRDMA_MAX_AH, false);
  allocated_pbles.assign(caps.pble_entries, false);
  if (int ret = eqs.create()) return sc_dev.fail(ret, "creating the CEQs and the AEQ");
  return 0;
}

void irdma_pci_f::ctrl_deinit_hw() {
  eqs.destroy();
  sc_dev.hw.irq.free_irq_vectors();
  sc_dev.hmc_teardown();
  sc_dev.cqp.destroy();
}

// irdma_rt_init_hw: ib-core's view of the device, its poll workers, the flush worker, then
// what watches the function.
int irdma_device::probe() {
  if (int ret = rf_.ctrl_init_hw()) return ret;
  register_device();
  workers_ = std::make_unique<ibcore::ib_poll_workers>(hw().exec);
  poll_workers = workers_.get();
  rf_.eqs.set_poll_workers(workers_.get());
  flush_wq_.start();
  rf_.eqs.start_watchdog();
  hw().irq.request_error_irq([this] { rf_.reset.pci_error_detected(); });  // -EOPNOTSUPP: none reported
  return 0;
}

int irdma_device::remove() {
  hw().irq.request_error_irq(nullptr);
  const int kept = ibcore::ib_cq_pool_cleanup(this);
  if (workers_) workers_->stop();
  flush_wq_.stop();  // the workers return before their objects go
  rf_.eqs.stop_watchdog();
  rf_.ctrl_deinit_hw();
  return kept;
}

}  // namespace irdma
