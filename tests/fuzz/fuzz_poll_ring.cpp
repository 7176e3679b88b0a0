// libFuzzer target: the driver's poll path over a hostile CQ ring (tests/cpp/driver/irdma/hostile_ring.h)
// whose every choice (generation, ring and QP sizes, work posted, what each slot holds, how
// many the device writes before each drain) comes from the input.
#include <cstdint>
#include <string>

#include "tests/cpp/driver/irdma/hostile_ring.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  using irdma_sim::fuzz::ByteEntropy;
  // The rounds from the input's last bytes, the ring's choices from its first.
  ByteEntropy rounds(data + (size < 4 ? 0 : size - 4), size < 4 ? size : 4);
  irdma_sim::testing::HostileRing ring(ByteEntropy(data, size), [](const std::string& what) {
    irdma_sim::fuzz::broken("fuzz_poll_ring", what);
  });
  const uint64_t plan = rounds();
  for (int round = 0; round < 4; round++) {
    ring.produce(1 + uint32_t(plan >> (8 * round)) % 40);  // may lap the consumer
    if (!ring.drain()) irdma_sim::fuzz::broken("fuzz_poll_ring", "the poll loop does not terminate");
  }
  return 0;
}
