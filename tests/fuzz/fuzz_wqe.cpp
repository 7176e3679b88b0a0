// libFuzzer target: the device's SQ WQE decoder and what it executes, over garbage WQEs a
// buggy driver would write (tests/cpp/model/device/garbage_wqe.h), every choice from the input. One
// simulated system, as in a long run: each input is a round on a fresh QP pair, whose rules
// (the device not wedged, every completion once and the pair's, both QPs destroyable) must
// hold. What a round leaves behind is part of the next one's test, so a broken rule may
// need the rounds before it: every kRoundsPerEpoch rounds the function is reset and the
// driver probed anew, and a failure writes the epoch's rounds out, to replay in order.
#include <unistd.h>

#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "driver/core/cq.h"
#include "model/system/simulation.h"
#include "tests/cpp/model/device/garbage_wqe.h"
#include "tests/cpp/model/system/sc_asan_options.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

constexpr const char* kTarget = "fuzz_wqe";
constexpr size_t kRoundsPerEpoch = 1000;

struct System {
  irdma_sim::system::Simulation sim{[] {
    irdma_sim::testbench::SimConfig c;
    c.device.max_cq = 16;
    return c;
  }()};
  ibcore::ib_cq* cq = nullptr;
  std::vector<std::vector<uint8_t>> epoch;  // this epoch's rounds, the one running last

  // A new epoch: the function reset, a new driver, a new CQ; the first starts so too, so a
  // process replaying an epoch's rounds starts where the campaign's epoch did.
  void start_epoch() {
    if (cq) sim.run_on_host([&] { ibcore::ib_free_cq(cq); });
    cq = nullptr;
    if (const int ret = sim.reprobe())
      irdma_sim::fuzz::broken(kTarget, "the driver's probe after a reset failed (errno " + std::to_string(-ret) + ")");
    sim.run_on_host([&] {
      auto got = ibcore::ib_alloc_cq(&sim.driver(), nullptr, 256, 0, ibcore::IB_POLL_DIRECT);
      if (got.is_err()) irdma_sim::fuzz::broken(kTarget, "allocating the CQ failed");
      cq = got.get();
    });
    epoch.clear();
  }

  [[noreturn]] void broken(const std::string& what) const {
    const std::filesystem::path dir = "fuzz_wqe-epoch-" + std::to_string(::getpid());
    std::error_code ec;
    std::filesystem::create_directories(dir, ec);
    for (size_t i = 0; !ec && i < epoch.size(); i++) {
      char name[24];
      std::snprintf(name, sizeof name, "%06zu", i);
      std::ofstream(dir / name, std::ios::binary)
          .write(reinterpret_cast<const char*>(epoch[i].data()), std::streamsize(epoch[i].size()));
    }
    irdma_sim::fuzz::broken(kTarget, what + " (round " + std::to_string(epoch.size()) + " of its epoch; " +
                                         (ec ? "the epoch's rounds could not be written: " + ec.message()
                                             : "the epoch's rounds are in " + dir.string() + ": replay_wqe " +
                                                   dir.string() + " runs them in order") +
                                         ")");
  }
};

}  // namespace

// libsystemc wants an sc_main from every program it links into; the kernel is started here
// through the Simulation, never through it.
int sc_main(int, char**) { return 1; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static System* system = new System;  // one elaboration per process
  if (!system->cq || system->epoch.size() == kRoundsPerEpoch) system->start_epoch();
  system->epoch.emplace_back(data, data + size);
  irdma_sim::fuzz::ByteEntropy rng(data, size);
  irdma_sim::testing::GarbageWqeStats stats;
  irdma_sim::testing::garbage_wqe_round(system->sim, system->cq, rng, stats,
                                        [](const std::string& what) { system->broken(what); });
  return 0;
}
