// libFuzzer target: the device's SQ WQE decoder and what it executes, over garbage WQEs a
// buggy driver would write (tests/cpp/garbage_wqe.h), every choice from the input. One
// simulated system for the whole campaign, as in a long run; each input is a round on a
// fresh QP pair, whose rules (the device not wedged, every completion once and the pair's,
// both QPs destroyable) must hold.
#include <cstdint>
#include <string>

#include "driver/core/cq.h"
#include "model/system/simulation.h"
#include "tests/cpp/garbage_wqe.h"
#include "tests/cpp/sc_asan_options.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

struct System {
  irdma_sim::system::Simulation sim{[] {
    irdma_sim::system::SimConfig c;
    c.device.max_cq = 16;
    return c;
  }()};
  ibcore::ib_cq* cq = nullptr;
  System() {
    sim.run_on_host([&] {
      auto got = ibcore::ib_alloc_cq(&sim.driver(), nullptr, 256, 0, ibcore::IB_POLL_DIRECT);
      if (got.is_err()) irdma_sim::fuzz::broken("fuzz_wqe", "allocating the CQ failed");
      cq = got.get();
    });
  }
};

}  // namespace

// libsystemc wants an sc_main from every program it links into; the kernel is started here
// through the Simulation, never through it.
int sc_main(int, char**) { return 1; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static System* system = new System;  // one elaboration per process
  irdma_sim::fuzz::ByteEntropy rng(data, size);
  irdma_sim::testing::GarbageWqeStats stats;
  irdma_sim::testing::garbage_wqe_round(system->sim, system->cq, rng, stats,
                                        [](const std::string& what) { irdma_sim::fuzz::broken("fuzz_wqe", what); });
  return 0;
}
