// The driver comes up as irdma does on silicon and learns the device from the device: its
// PCI identity and capabilities, the engine's readiness, the doorbell BAR, the HMC counts,
// the features. What the model is configured with reaches the driver only that way.
#include <gtest/gtest.h>

#include <cerrno>
#include <stdexcept>

#include "driver/irdma/irdma_device.h"
#include "model/device/pci_config.h"
#include "model/device/regs.h"
#include "model/system/simulation.h"

namespace {

using namespace irdma_sim;
using namespace irdma_sim::system;
using namespace irdma_sim::testbench;

TEST(BringUp, CapabilitiesAreReadFromTheDevice) {
  SimConfig cfg;
  cfg.device.generation = 3;
  cfg.device.cqe_64byte = true;
  cfg.device.cq_resize = false;
  cfg.device.max_cq = 64;
  cfg.device.max_qp = 32;
  cfg.device.max_stags = 100;
  cfg.device.num_ceqs = 3;
  cfg.device.max_cqe = 1000;
  Simulation sim(cfg);
  const irdma::irdma_device_caps& caps = sim.driver().caps();
  EXPECT_EQ(caps.hw_rev, irdma::IRDMA_GEN_3);
  EXPECT_EQ(caps.fw_version, 1u << 16);
  EXPECT_EQ(caps.max_cq, 64u);
  EXPECT_EQ(caps.max_qp, 32u);
  EXPECT_EQ(caps.max_stags, 100u);
  EXPECT_EQ(caps.num_ceqs, 3u);
  EXPECT_EQ(caps.max_cqe, 1000);
  EXPECT_TRUE(caps.cqe_64byte);
  EXPECT_TRUE(caps.atomics);
  EXPECT_FALSE(caps.cq_resize);
  EXPECT_EQ(caps.pble_entries, 65536u);
  EXPECT_EQ(sim.driver().attrs.max_cqe, 1000);
  EXPECT_EQ(sim.driver().num_comp_vectors, 3);
  EXPECT_EQ(sim.driver().hw().irq.num_vectors(), 4u) << "a vector per CEQ and the AEQ's";
}

// The drift a copied configuration had: the device's STag count is the driver's limit, so
// running out is the driver's ENOSPC, not the device's refusal.
TEST(BringUp, TheDevicesStagCountIsTheDriversLimit) {
  SimConfig cfg;
  cfg.device.max_stags = 2;  // index 1 only
  Simulation sim(cfg);
  int first = 1, second = 1;
  sim.run_on_host([&] {
    auto a = sim.driver().alloc_mw();
    first = a.is_err() ? a.err() : 0;
    auto b = sim.driver().alloc_mw();
    second = b.is_err() ? b.err() : 0;
    if (!a.is_err()) sim.driver().dealloc_mw(a.get());
  });
  EXPECT_EQ(first, 0);
  EXPECT_EQ(second, -ENOSPC);
  EXPECT_EQ(sim.device().cqp_engine().counters().errors, 0u);
}

TEST(BringUp, ProbeWaitsForTheEngineToReportReady) {
  SimConfig cfg;
  cfg.device.ready_after_us = 1'500'000;
  Simulation sim(cfg);
  EXPECT_GE(sim.now_ps(), 2'000'000'000'000u) << "polled at 0 s, 1 s and 2 s";
  EXPECT_LT(sim.now_ps(), 3'000'000'000'000u);
}

void expect_probe_fails(const SimConfig& cfg, const std::string& words) {
  try {
    Simulation sim(cfg);
    FAIL() << "probe succeeded";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find(words), std::string::npos) << e.what();
  }
}

TEST(BringUp, AnEngineNeverReadyFailsTheProbeSayingSo) {
  SimConfig cfg;
  cfg.device.ready_after_us = 60'000'000;
  expect_probe_fails(cfg, "did not report ready (GLPE_CPUSTATUS0-2) in 15 polls");
}

TEST(BringUp, ADoorbellBarOfAnotherSizeFailsTheProbe) {
  SimConfig cfg;
  cfg.device.pe_db_size = 3;
  expect_probe_fails(cfg, "GLPCI_LBARCTRL reports PE doorbell size 3");
}

TEST(BringUp, ConfigurationSpaceShowsTheEndpoint) {
  SimConfig cfg;
  cfg.device.num_ceqs = 2;
  cfg.device.spare_msix = 5;
  Simulation sim(cfg);
  hal::PciConfig& pci = sim.driver().hw().config;
  uint32_t bar0_size = 0, bar3_size = 0, bar1 = 0, table = 0, pba = 0;
  uint16_t msix_flags = 0, command = 0;
  uint8_t exp = 0;
  sim.run_on_host([&] {
    EXPECT_EQ(pci.read16(hal::PCI_VENDOR_ID), 0x1234);
    EXPECT_EQ(pci.read16(hal::PCI_DEVICE_ID), 0x1D02);
    EXPECT_EQ(pci.read(0x08, 4) >> 8, 0x020000u) << "Ethernet controller";
    EXPECT_EQ(pci.read(0x09, 3), 0xFFFFFFu) << "3-byte accesses do not exist";
    command = pci.read16(hal::PCI_COMMAND);
    // BAR sizing: all ones in, the size mask (and the flags) out.
    pci.write(0x10, 4, ~0u);
    bar0_size = ~(pci.read(0x10, 4) & ~0xFu) + 1;
    pci.write(0x14, 4, ~0u);
    bar1 = pci.read(0x14, 4);
    pci.write(0x1C, 4, ~0u);
    bar3_size = ~(pci.read(0x1C, 4) & ~0xFu) + 1;
    const uint8_t msix = pci.find_capability(hal::PCI_CAP_ID_MSIX);
    msix_flags = pci.read16(msix + hal::PCI_MSIX_FLAGS);
    table = pci.read(msix + hal::PCI_MSIX_TABLE, 4);
    pba = pci.read(msix + 8, 4);
    exp = pci.find_capability(0x10);
    EXPECT_EQ(pci.read(0x1000, 4), ~0u) << "past the configuration space";
    pci.write(hal::PCI_VENDOR_ID, 2, 0xBEEF);
    EXPECT_EQ(pci.read16(hal::PCI_VENDOR_ID), 0x1234) << "read-only";
  });
  EXPECT_EQ(command & (hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER),
            hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER) << "enabled by the probe";
  EXPECT_EQ(bar0_size, 32u << 20);
  EXPECT_EQ(bar1, 0xFFFFFFFFu) << "BAR0 is 64-bit: its upper half is all base";
  EXPECT_EQ(bar3_size, 64u << 10);
  EXPECT_EQ(msix_flags & hal::PCI_MSIX_FLAGS_QSIZE, 2 + 1 + 5 - 1);
  EXPECT_TRUE(msix_flags & hal::PCI_MSIX_FLAGS_ENABLE) << "enabled by alloc_irq_vectors";
  EXPECT_EQ(table, 3u) << "table at 0 in BAR3";
  EXPECT_EQ(pba, 0x8003u) << "PBA at 0x8000 in BAR3";
  EXPECT_EQ(exp, 0xA0);
}

// With memory decoding off the function answers no BAR access; with bus mastering off it
// sends nothing, not even an interrupt.
TEST(BringUp, TheCommandRegisterGatesBarsAndDma) {
  Simulation sim(SimConfig{});
  hal::Platform& hw = sim.driver().hw();
  uint32_t tail = 0;
  const uint64_t dma_errors = sim.device().dma_errors();
  const uint64_t blocked = sim.device().dma_blocked();
  sim.run_on_host([&] {
    hw.config.write(hal::PCI_COMMAND, 2, hal::PCI_COMMAND_MASTER);
    tail = hw.bar0.read32(irdma::IRDMA_CQPTAIL);
    hw.config.write(hal::PCI_COMMAND, 2, hal::PCI_COMMAND_MEMORY);
  });
  EXPECT_EQ(tail, ~0u);
  EXPECT_EQ(sim.device().counters().bad_mmio, 1u);
  sim.device().schedule_msix(0);
  sim.run_on_host([&] { hw.exec.delay_ns(5000); });
  EXPECT_EQ(sim.device().dma_blocked(), blocked + 1) << "the MSI-X write was sent";
  EXPECT_EQ(sim.device().dma_errors(), dma_errors) << "a write not sent is no write refused";
  EXPECT_EQ(sim.interrupts().delivered(), 0u);
}

}  // namespace
