// libFuzzer target: the vfio-user VERSION capabilities (JSON) both sides parse. Malformed
// text must be a VfioUserError; what parses must print back to text that parses the same.
#include <cstdint>
#include <exception>
#include <string>
#include <string_view>

#include "driver/backends/vfio_user/capabilities.h"
#include "driver/backends/vfio_user/protocol.h"
#include "tests/fuzz/fuzz_input.h"

namespace vu = pcie::vfio_user;

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view text(reinterpret_cast<const char*>(data), size);
  vu::Capabilities parsed;
  try {
    parsed = vu::capabilities_from_json(text);
  } catch (const vu::VfioUserError&) {
    return 0;
  } catch (const std::exception& e) {
    irdma_sim::fuzz::broken("fuzz_capabilities", std::string("not a VfioUserError: ") + e.what());
  }
  const std::string printed = vu::capabilities_to_json(parsed);
  try {
    if (vu::capabilities_to_json(vu::capabilities_from_json(printed)) != printed)
      irdma_sim::fuzz::broken("fuzz_capabilities", "printed capabilities parse differently: " + printed);
  } catch (const std::exception& e) {
    irdma_sim::fuzz::broken("fuzz_capabilities", "printed capabilities do not parse: " + printed + ": " + e.what());
  }
  return 0;
}
