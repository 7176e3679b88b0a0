// PcieConfig and PcieBar over the vfio-user client and the toy device: config space round
// trips and the capability walk, BAR registers by the slow path and the shared page by its
// mapping, and transport failures answered with all ones and counted.
#include <gtest/gtest.h>

#include "driver/backends/pcie/pcie_bar.h"
#include "driver/backends/pcie/pcie_config.h"
#include "tests/cpp/driver/backends/pcie_test_util.h"

namespace {

using namespace pcie_test;
using pcie::PcieBar;
using pcie::PcieConfig;

TEST(PcieConfig, RoundTripsThroughTheConfigRegion) {
  ServedToy toy;
  auto client = connect(toy);
  PcieConfig config(*client);
  EXPECT_EQ(config.read(hal::PCI_VENDOR_ID, 2), 0x8086u);
  EXPECT_EQ(config.read16(hal::PCI_DEVICE_ID), 0x1592);
  EXPECT_EQ(config.read(0, 4), 0x15928086u);
  EXPECT_EQ(config.read(1, 1), 0x80u);
  config.write(hal::PCI_COMMAND, 2, hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER);
  EXPECT_EQ(config.read16(hal::PCI_COMMAND), hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER);
  config.write(0xA0, 4, 0xDEADBEEF);
  EXPECT_EQ(config.read(0xA0, 4), 0xDEADBEEFu);
  config.write(0xA1, 1, 0x11);
  EXPECT_EQ(config.read(0xA0, 4), 0xDEAD11EFu);
  EXPECT_EQ(config.find_capability(hal::PCI_CAP_ID_MSIX), kMsixCap) << "walked past power management";
  EXPECT_EQ(config.errors().count(), 0u);
}

TEST(PcieConfig, FailuresAnswerAllOnesAndAreCountedNeverThrown) {
  ServedToy toy;
  auto client = connect(toy, waiting_writes());
  PcieConfig config(*client);
  config.write(hal::PCI_VENDOR_ID, 2, 0x1234);  // the toy's ids are read-only
  EXPECT_EQ(config.errors().count(), 1u);
  EXPECT_NE(config.errors().last().find("config write of 2 bytes at 0"), std::string::npos) << config.errors().last();
  EXPECT_EQ(config.read16(hal::PCI_VENDOR_ID), 0x8086);

  EXPECT_EQ(config.read(254, 4), 0xFFFFFFFFu) << "past the end of config space";
  EXPECT_EQ(config.read(0, 3), 0xFFFFFFFFu) << "no such width";
  config.write(0xA0, 3, 0);
  EXPECT_EQ(config.errors().count(), 4u);

  toy.device.config_read_error = EIO;
  EXPECT_EQ(config.read(0, 1), 0xFFu);
  EXPECT_EQ(config.read16(hal::PCI_VENDOR_ID), 0xFFFF);
  EXPECT_EQ(config.read(0, 4), 0xFFFFFFFFu);
  EXPECT_EQ(config.find_capability(hal::PCI_CAP_ID_MSIX), 0) << "an all-ones list ends";
  EXPECT_GE(config.errors().count(), 7u);
}

TEST(PcieBar, TrappedRegistersGoThroughTheTransport) {
  ServedToy toy;
  auto client = connect(toy);
  PcieBar bar0(*client, 0);
  EXPECT_EQ(bar0.size(), kPage);
  EXPECT_EQ(bar0.read32(reg::kId), kToyId);
  bar0.write32(reg::kScratch, 0xA5A5F00D);
  EXPECT_EQ(bar0.read32(reg::kScratch), 0xA5A5F00Du);
  bar0.write64(reg::kDmaAddress, 0x1122334455667788ull);
  EXPECT_EQ(bar0.read64(reg::kDmaAddress), 0x1122334455667788ull);
  EXPECT_EQ(bar0.errors().count(), 0u);
}

TEST(PcieBar, MappedAreaIsTheDevicesMemoryAndTheRestIsTrapped) {
  ServedToy toy;
  auto client = connect(toy, waiting_writes());
  PcieBar bar2(*client, 2);
  EXPECT_EQ(bar2.size(), 2 * kPage);
  bar2.write32(kPage + 5 * 4, 0xC0FFEE);
  EXPECT_EQ(toy.device.shared_word(5), 0xC0FFEEu);
  toy.device.set_shared_word(6, 0xBEEF);
  EXPECT_EQ(bar2.read32(kPage + 6 * 4), 0xBEEFu);
  bar2.write64(kPage + 8 * 4, 0x0000000200000001ull);
  EXPECT_EQ(toy.device.shared_word(8), 1u);
  EXPECT_EQ(toy.device.shared_word(9), 2u);
  bar2.write32(16, 0x04030201);  // page 0 is trapped
  EXPECT_EQ(toy.device.trapped_byte(16), 1);
  EXPECT_EQ(toy.device.trapped_byte(19), 4);
  EXPECT_EQ(bar2.read64(16), 0x04030201ull);
  EXPECT_EQ(bar2.errors().count(), 0u);
}

TEST(PcieBar, OnlyAlignedAccessesInsideAMappedAreaBypassTheTransport) {
  ServedToy toy;
  auto client = connect(toy);
  CountingTransport transport(*client);
  PcieBar bar2(transport, 2);
  bar2.write32(kPage, 1);
  bar2.write64(kPage + 8, 2);
  bar2.read32(2 * kPage - 4);
  bar2.read64(2 * kPage - 8);
  EXPECT_EQ(transport.region_reads + transport.region_writes, 0);
  bar2.read32(kPage - 4);      // trapped page
  bar2.read64(2 * kPage - 4);  // runs past the area
  bar2.write32(kPage + 2, 3);  // misaligned
  EXPECT_EQ(transport.region_reads, 2);
  EXPECT_EQ(transport.region_writes, 1);
}

TEST(PcieBar, MappedAccessesNeverWaitForTheServer) {
  ServedToy toy;
  VfioUserClientOptions options;
  options.reply_timeout_ms = 200;
  auto client = connect(toy, waiting_writes(options));
  PcieBar bar2(*client, 2);
  toy.device.set_shared_word(2, 77);
  toy.server.stop();  // the server no longer answers; the shared page is still shared
  ASSERT_TRUE(eventually([&] { return toy.done.load(); }));

  EXPECT_EQ(bar2.read32(kPage + 2 * 4), 77u);
  bar2.write32(kPage + 3 * 4, 78);
  EXPECT_EQ(toy.device.shared_word(3), 78u);
  EXPECT_EQ(bar2.errors().count(), 0u);

  EXPECT_EQ(bar2.read32(0), 0xFFFFFFFFu) << "trapped: the server does not answer";
  EXPECT_EQ(bar2.read64(kPage + 4), ~0ull) << "misaligned: not a single access, so the slow path";
  bar2.write32(8, 1);
  EXPECT_EQ(bar2.errors().count(), 3u);
  EXPECT_NE(bar2.errors().last().find("BAR2 write32 at 8"), std::string::npos) << bar2.errors().last();
}

TEST(PcieBar, AbsentBarHasNoSizeAndAnswersAllOnes) {
  ServedToy toy;
  auto client = connect(toy);
  PcieBar bar1(*client, 1);
  EXPECT_EQ(bar1.size(), 0u);
  EXPECT_EQ(bar1.read32(0), 0xFFFFFFFFu);
  EXPECT_EQ(bar1.read64(8), ~0ull);
  EXPECT_EQ(bar1.errors().count(), 2u);
}

}  // namespace
