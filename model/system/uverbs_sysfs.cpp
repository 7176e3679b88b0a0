#include "model/system/uverbs_sysfs.h"

#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <stdexcept>

#include "driver/core/uverbs/ib_user_verbs.h"

namespace irdma_sim::system {
namespace {

namespace fs = std::filesystem;

// The provider an ABI 5 kernel half serves, and the PCI identity its table matches: E810.
constexpr unsigned kIrdmaAbiVersion = 5;
constexpr uint16_t kIntel = 0x8086;
constexpr uint16_t kE810C = 0x1593;

void put(const fs::path& file, const std::string& text) {
  fs::create_directories(file.parent_path());
  std::ofstream out(file);
  out << text;
  if (!out.flush()) throw std::runtime_error("cannot write " + file.string());
}

// A GUID or GID as sysfs prints it: groups of four hex digits, in wire order.
std::string hex_groups(const uint8_t* bytes, size_t n) {
  std::string s;
  char group[8];
  for (size_t i = 0; i < n; i += 2) {
    std::snprintf(group, sizeof group, "%s%02x%02x", i ? ":" : "", bytes[i], bytes[i + 1]);
    s += group;
  }
  return s;
}

}  // namespace

void write_uverbs_sysfs(const std::string& root, ibcore::ib_device& dev, const std::string& name) {
  const fs::path top(root);
  fs::remove_all(top);
  const fs::path verbs = top / "class/infiniband_verbs";
  const fs::path ib = top / "class/infiniband" / name;
  char modalias[80];
  std::snprintf(modalias, sizeof modalias, "pci:v%08Xd%08Xsv%08Xsd%08Xbc02sc00i00\n", kIntel, kE810C, kIntel, 2u);

  put(verbs / "abi_version", std::to_string(ibcore::uverbs::IB_USER_VERBS_ABI_VERSION) + "\n");
  put(verbs / "uverbs0/ibdev", name + "\n");
  put(verbs / "uverbs0/abi_version", std::to_string(kIrdmaAbiVersion) + "\n");
  put(verbs / "uverbs0/dev", "1:3\n");  // /dev/null's: the shim opens it for the device
  put(verbs / "uverbs0/device/modalias", modalias);

  const auto* guid = reinterpret_cast<const uint8_t*>(&dev.node_guid);
  const auto* image = reinterpret_cast<const uint8_t*>(&dev.attrs.sys_image_guid);
  put(ib / "node_type", "1: CA\n");
  put(ib / "node_guid", hex_groups(guid, 8) + "\n");
  put(ib / "sys_image_guid", hex_groups(image, 8) + "\n");
  put(ib / "fw_ver", std::to_string(dev.attrs.fw_ver >> 32) + "." + std::to_string(dev.attrs.fw_ver & 0xFFFF) + "\n");
  put(ib / "hca_type", "irdma-sim\n");
  put(ib / "board_id", "irdma-sim E810 model\n");
  put(ib / "device/modalias", modalias);

  for (unsigned port = 1; port <= dev.phys_port_cnt; port++) {
    ibcore::ib_port_attr attr;
    if (dev.query_port(port, &attr)) continue;
    const fs::path p = ib / "ports" / std::to_string(port);
    put(p / "link_layer", attr.link_layer == ibcore::IB_LINK_LAYER_ETHERNET ? "Ethernet\n" : "InfiniBand\n");
    put(p / "state", attr.state == ibcore::IB_PORT_ACTIVE ? "4: ACTIVE\n" : "1: DOWN\n");
    put(p / "pkeys/0", "0xffff\n");
    // RoCE's default GIDs, v1 then v2: the link-local address of the port's MAC. Every other
    // entry is all zeros, which libibverbs reports as no data (ENODATA); its type file,
    // whose read a kernel fails for an unused slot, says v1, which libibverbs assumes then.
    uint8_t link_local[16] = {0xfe, 0x80};
    std::memcpy(link_local + 8, guid, 8);
    for (uint32_t i = 0; i < attr.gid_tbl_len; i++) {
      const bool used = i < 2;
      uint8_t gid[16] = {};
      if (used) std::memcpy(gid, link_local, 16);
      put(p / "gids" / std::to_string(i), hex_groups(gid, 16) + "\n");
      put(p / "gid_attrs/types" / std::to_string(i), i == 1 ? "RoCE v2\n" : "IB/RoCE v1\n");
    }
  }
}

}  // namespace irdma_sim::system
