// The vfio-user wire format against the kernel's VFIO header (same numbers, same struct
// layouts) and the VERSION JSON reader against good and hostile text.
#include <gtest/gtest.h>
#include <linux/vfio.h>

#include <cstddef>
#include <string>

#include "driver/backends/vfio_user/capabilities.h"
#include "driver/backends/vfio_user/protocol.h"

namespace {

using namespace pcie::vfio_user;
namespace vfio = pcie::vfio;

TEST(VfioUserProtocol, ConstantsAreTheKernels) {
  EXPECT_EQ(vfio::kDeviceFlagReset, VFIO_DEVICE_FLAGS_RESET);
  EXPECT_EQ(vfio::kDeviceFlagPci, VFIO_DEVICE_FLAGS_PCI);
  EXPECT_EQ(vfio::kConfigRegionIndex, VFIO_PCI_CONFIG_REGION_INDEX);
  EXPECT_EQ(vfio::kRomRegionIndex, VFIO_PCI_ROM_REGION_INDEX);
  EXPECT_EQ(vfio::kVgaRegionIndex, VFIO_PCI_VGA_REGION_INDEX);
  EXPECT_EQ(vfio::kNumPciRegions, VFIO_PCI_NUM_REGIONS);
  EXPECT_EQ(vfio::kRegionFlagRead, VFIO_REGION_INFO_FLAG_READ);
  EXPECT_EQ(vfio::kRegionFlagWrite, VFIO_REGION_INFO_FLAG_WRITE);
  EXPECT_EQ(vfio::kRegionFlagMmap, VFIO_REGION_INFO_FLAG_MMAP);
  EXPECT_EQ(vfio::kRegionFlagCaps, VFIO_REGION_INFO_FLAG_CAPS);
  EXPECT_EQ(kCapSparseMmap, VFIO_REGION_INFO_CAP_SPARSE_MMAP);
  EXPECT_EQ(vfio::kIntxIrqIndex, VFIO_PCI_INTX_IRQ_INDEX);
  EXPECT_EQ(vfio::kMsiIrqIndex, VFIO_PCI_MSI_IRQ_INDEX);
  EXPECT_EQ(vfio::kMsixIrqIndex, VFIO_PCI_MSIX_IRQ_INDEX);
  EXPECT_EQ(vfio::kErrIrqIndex, VFIO_PCI_ERR_IRQ_INDEX);
  EXPECT_EQ(vfio::kReqIrqIndex, VFIO_PCI_REQ_IRQ_INDEX);
  EXPECT_EQ(vfio::kNumPciIrqs, VFIO_PCI_NUM_IRQS);
  EXPECT_EQ(vfio::kIrqInfoEventfd, VFIO_IRQ_INFO_EVENTFD);
  EXPECT_EQ(vfio::kIrqInfoMaskable, VFIO_IRQ_INFO_MASKABLE);
  EXPECT_EQ(vfio::kIrqInfoAutomasked, VFIO_IRQ_INFO_AUTOMASKED);
  EXPECT_EQ(vfio::kIrqInfoNoresize, VFIO_IRQ_INFO_NORESIZE);
  EXPECT_EQ(kIrqSetDataNone, VFIO_IRQ_SET_DATA_NONE);
  EXPECT_EQ(kIrqSetDataBool, VFIO_IRQ_SET_DATA_BOOL);
  EXPECT_EQ(kIrqSetDataEventfd, VFIO_IRQ_SET_DATA_EVENTFD);
  EXPECT_EQ(kIrqSetActionMask, VFIO_IRQ_SET_ACTION_MASK);
  EXPECT_EQ(kIrqSetActionUnmask, VFIO_IRQ_SET_ACTION_UNMASK);
  EXPECT_EQ(kIrqSetActionTrigger, VFIO_IRQ_SET_ACTION_TRIGGER);
  EXPECT_EQ(vfio::kDmaFlagRead, VFIO_DMA_MAP_FLAG_READ);
  EXPECT_EQ(vfio::kDmaFlagWrite, VFIO_DMA_MAP_FLAG_WRITE);
}

TEST(VfioUserProtocol, PayloadsLayOutLikeTheKernelStructs) {
  EXPECT_EQ(sizeof(RegionInfoPayload), sizeof(vfio_region_info));
  EXPECT_EQ(offsetof(RegionInfoPayload, cap_offset), offsetof(vfio_region_info, cap_offset));
  EXPECT_EQ(offsetof(RegionInfoPayload, size), offsetof(vfio_region_info, size));
  EXPECT_EQ(offsetof(RegionInfoPayload, offset), offsetof(vfio_region_info, offset));
  EXPECT_EQ(sizeof(CapHeader), sizeof(vfio_info_cap_header));
  EXPECT_EQ(sizeof(CapHeader) + sizeof(SparseMmapCapBody), sizeof(vfio_region_info_cap_sparse_mmap));
  EXPECT_EQ(sizeof(SparseMmapArea), sizeof(vfio_region_sparse_mmap_area));
  EXPECT_EQ(sizeof(IrqInfoPayload), sizeof(vfio_irq_info));
  EXPECT_EQ(offsetof(IrqInfoPayload, count), offsetof(vfio_irq_info, count));
  EXPECT_EQ(sizeof(IrqSetPayload), sizeof(vfio_irq_set));
  EXPECT_EQ(offsetof(IrqSetPayload, count), offsetof(vfio_irq_set, count));
  EXPECT_EQ(offsetof(Header, msg_size), 4u);
  EXPECT_EQ(offsetof(Header, flags), 8u);
  EXPECT_EQ(offsetof(Header, error_no), 12u);
  EXPECT_EQ(offsetof(DmaMapPayload, address), 16u);
  EXPECT_EQ(offsetof(RegionAccessPayload, count), 12u);
}

TEST(VfioUserProtocol, CommandNamesIncludeUnknownNumbers) {
  EXPECT_EQ(command_name(10), "REGION_WRITE");
  EXPECT_EQ(command_name(14), "command 14");
}

TEST(VfioUserProtocol, LoadRefusesShortPayloads) {
  std::vector<uint8_t> bytes(15);
  try {
    load<RegionAccessPayload>(bytes, 0, "REGION_READ");
    FAIL() << "a 15-byte payload was taken for a 16-byte struct";
  } catch (const VfioUserError& e) {
    EXPECT_EQ(e.error_no(), EINVAL);
    EXPECT_NE(std::string(e.what()).find("REGION_READ"), std::string::npos);
  }
  EXPECT_THROW(load<uint32_t>(bytes, 12, "x"), VfioUserError);
  EXPECT_THROW(load<uint32_t>(bytes, SIZE_MAX, "x"), VfioUserError);
  EXPECT_NO_THROW(load<uint32_t>(bytes, 11, "x"));
}

TEST(VfioUserCapabilities, RoundTrip) {
  Capabilities caps{8, 65536, 100, 0x40201000};
  Capabilities back = capabilities_from_json(capabilities_to_json(caps));
  EXPECT_EQ(back.max_msg_fds, 8u);
  EXPECT_EQ(back.max_data_xfer_size, 65536u);
  EXPECT_EQ(back.max_dma_maps, 100u);
  EXPECT_EQ(back.pgsizes, 0x40201000u);
}

TEST(VfioUserCapabilities, AbsentKeysKeepTheSpecDefaultsAndUnknownOnesAreSkipped) {
  Capabilities caps = capabilities_from_json(
      R"( { "capabilities" : { "max_msg_fds" : 16, "migration": {"pgsize": 4096, "x": [1, 2.5e3, -1, null, true]},)"
      R"( "twin_socket": {"supported": false}, "write_multiple": true, "name": "a\"b\u00e9" } } )");
  EXPECT_EQ(caps.max_msg_fds, 16u);
  EXPECT_EQ(caps.max_data_xfer_size, 1u << 20);
  EXPECT_EQ(caps.max_dma_maps, 65535u);
  EXPECT_EQ(caps.pgsizes, 4096u);
  EXPECT_EQ(capabilities_from_json("{}").max_msg_fds, 1u);
}

TEST(VfioUserCapabilities, BadTextIsRefusedWithEinval) {
  const char* bad[] = {
      "",
      "{",
      "[]",
      "{\"capabilities\":[]}",
      "{\"capabilities\":{\"max_msg_fds\":0}}",
      "{\"capabilities\":{\"max_msg_fds\":-1}}",
      "{\"capabilities\":{\"max_msg_fds\":1.5}}",
      "{\"capabilities\":{\"max_msg_fds\":4294967296}}",
      "{\"capabilities\":{\"max_data_xfer_size\":\"big\"}}",
      "{\"capabilities\":{\"pgsizes\":99999999999999999999999}}",
      "{\"a\":1} trailing",
      "{\"a\":01}",
      "{\"a\":tru}",
      "{\"a\":\"unterminated}",
      "{\"a\":\"bad \\x escape\"}",
      "{\"a\":\"\\u12\"}",
      "{\"a\" 1}",
      "{\"a\":1,}",
      "{'a':1}",
  };
  for (const char* text : bad) {
    try {
      capabilities_from_json(text);
      ADD_FAILURE() << "accepted: " << text;
    } catch (const VfioUserError& e) {
      EXPECT_EQ(e.error_no(), EINVAL) << text;
    }
  }
  EXPECT_THROW(capabilities_from_json(std::string(100000, '[')), VfioUserError);  // no stack overflow
}

TEST(VfioUserCapabilities, VersionPayload) {
  Version v{0, 2, {}};
  v.capabilities.max_msg_fds = 4;
  std::vector<uint8_t> payload = encode_version(v);
  EXPECT_EQ(payload.back(), 0) << "the JSON goes with its NUL";
  Version back = decode_version(payload);
  EXPECT_EQ(back.minor, 2);
  EXPECT_EQ(back.capabilities.max_msg_fds, 4u);

  EXPECT_EQ(decode_version({0, 0, 1, 0}).minor, 1) << "JSON is optional";
  payload.pop_back();
  EXPECT_THROW(decode_version(payload), VfioUserError) << "JSON without its NUL";
  EXPECT_THROW(decode_version({0, 0, 1}), VfioUserError) << "shorter than the version pair";
}

}  // namespace
