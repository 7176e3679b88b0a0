// VERSION's payload: the version pair and the JSON capabilities that ride with it. The
// JSON reader takes any well-formed JSON (unknown keys are skipped, so peers may offer
// more) and rejects everything else with a message naming the problem.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace pcie::vfio_user {

// Absent keys keep the protocol's defaults.
struct Capabilities {
  uint32_t max_msg_fds = 1;              // fds the sender accepts in one message
  uint32_t max_data_xfer_size = 1u << 20;  // largest REGION/DMA read or write count it accepts
  uint32_t max_dma_maps = 65535;
  uint64_t pgsizes = 4096;
};

struct Version {
  uint16_t major = 0;
  uint16_t minor = 0;
  Capabilities capabilities;
};

// {"capabilities":{"max_msg_fds":N,"max_data_xfer_size":N,"max_dma_maps":N,"pgsizes":N}}
std::string capabilities_to_json(const Capabilities& capabilities);
// Throws VfioUserError(EINVAL).
Capabilities capabilities_from_json(std::string_view json);

std::vector<uint8_t> encode_version(const Version& version);
// The payload must hold the version pair; JSON, if any, must end in a NUL. Throws VfioUserError(EINVAL).
Version decode_version(const std::vector<uint8_t>& payload);

}  // namespace pcie::vfio_user
