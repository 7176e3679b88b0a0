// libFuzzer target: the device's CQP decoder over control commands a buggy driver could
// post: any opcode (the ones the device knows most often) with any descriptor words, sizes
// and ids small or not, addresses into mapped host memory or anywhere. Posted through the
// driver's own control QP; each input starts on a function reset and a driver probed anew
// (Host::reprobe), as it would replay alone. The rules: the model neither crashes nor hangs;
// every command completes, with or without an error, or (one that took the CCQ or the
// CQP's memory away) times out; and the function always comes back from its reset.
#include <cerrno>
#include <cstdint>
#include <iterator>
#include <string>

#include "model/device/regs.h"
#include "model/system/simulation.h"
#include "tests/cpp/model/system/sc_asan_options.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace irdma_sim::device::regs;

constexpr const char* kTarget = "fuzz_cqp";
constexpr uint64_t kScratchBytes = 64 * 1024;

constexpr uint8_t kOpcodes[] = {OP_CREATE_QP,   OP_MODIFY_QP,   OP_DESTROY_QP,          OP_CREATE_CQ,
                                OP_MODIFY_CQ,   OP_DESTROY_CQ,  OP_ALLOC_STAG,          OP_DEALLOC_STAG,
                                OP_CREATE_CEQ,  OP_DESTROY_CEQ, OP_QUERY_RDMA_FEATURES, OP_CREATE_AEQ,
                                OP_DESTROY_AEQ, OP_UPDATE_PE_SDS, OP_QUERY_FPM_VAL,     OP_COMMIT_FPM_VAL,
                                OP_FLUSH_WQES};

struct System {
  irdma_sim::system::Simulation sim{[] {
    irdma_sim::testbench::SimConfig c;
    c.device.max_cq = 16;
    c.device.max_qp = 16;
    c.driver.cqp_timeout_ms = 1;  // a command that cannot complete costs little
    return c;
  }()};
  hal::DmaBuffer scratch;  // host memory a command's addresses may name
  System() {
    sim.run_on_host([&] { scratch = sim.driver().hw().dma.alloc_coherent(kScratchBytes, 4096); });
    if (!scratch) irdma_sim::fuzz::broken(kTarget, "no scratch memory");
  }
};

// A descriptor word: raw, a small number (an id, a size, a count), or an address in the
// scratch memory.
uint64_t word(irdma_sim::fuzz::ByteEntropy& rng, const hal::DmaBuffer& scratch) {
  const uint64_t r = rng();
  switch (r & 3) {
    case 0: return r >> 2 & 0x3F;
    case 1: return scratch.iova + (r >> 2) % kScratchBytes;
    default: return rng();
  }
}

}  // namespace

// libsystemc wants an sc_main from every program it links into; the kernel is started here
// through the Simulation, never through it.
int sc_main(int, char**) { return 1; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static System* system = new System;  // one elaboration per process
  irdma_sim::system::Simulation& sim = system->sim;
  if (const int ret = sim.reprobe())
    irdma_sim::fuzz::broken(kTarget, "the driver's probe after a reset failed: " + sim.driver().probe_error() +
                                         " (errno " + std::to_string(-ret) + ")");
  irdma_sim::fuzz::ByteEntropy rng(data, size);
  sim.run_on_host([&] {
    const unsigned commands = 1 + rng() % 8;
    for (unsigned i = 0; i < commands; i++) {
      const uint64_t pick = rng();
      const uint8_t opcode = pick & 1 ? kOpcodes[(pick >> 1) % std::size(kOpcodes)] : uint8_t(pick >> 8 & 0x3F);
      const int ret = sim.driver().cqp().exec(opcode, [&](uint64_t* wqe) {
        for (const unsigned q : {0, 1, 2, 4, 5, 6, 7}) wqe[q] = word(rng, system->scratch);
        return rng();  // qword 3: the driver puts the opcode and the valid bit in
      });
      if (ret == -ETIMEDOUT || ret == -EBUSY) break;  // the CQP given up: the rest is refused
      if (ret && ret != -EIO)
        irdma_sim::fuzz::broken(kTarget, "CQP opcode " + std::to_string(opcode) + " returned errno " +
                                             std::to_string(-ret));
    }
  });
  return 0;
}
