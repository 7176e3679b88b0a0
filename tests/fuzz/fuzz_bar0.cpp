// libFuzzer target: the device's BAR0 register file and configuration space under any
// sequence of accesses a buggy driver or a hostile guest could make: registers at the
// offsets the device decodes and anywhere else, every width, any value, with time passing
// between. Each input starts on a function fresh from a function level reset (pcie_flr),
// as it would replay alone; the rules: the model neither crashes nor hangs, and each reset
// puts the function back as at power-on (memory decode off, BAR accesses unclaimed, the
// engine's CPUs ready again).
#include <cstdint>
#include <iterator>
#include <string>

#include "model/device/regs.h"
#include "model/system/simulation.h"
#include "tests/cpp/model/system/sc_asan_options.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace irdma_sim::device::regs;

constexpr const char* kTarget = "fuzz_bar0";

// Where the device decodes something, so that most draws reach a register.
constexpr uint64_t kRegisters[] = {CQPDB,        CQPTAIL,      CQARM,        CQACK,      AEQALLOC,
                                   WQEALLOC,     GLINT_CEQCTL, GLINT_DYN_CTL, PFINT_AEQCTL, CCQPSTATUS,
                                   CCQPLOW,      CCQPHIGH,     CQPERRCODES,  GLPE_CPUSTATUS0, GLPCI_LBARCTRL};

irdma_sim::testbench::SimConfig config() {
  irdma_sim::testbench::SimConfig c;
  c.device.max_cq = 16;
  c.device.max_qp = 16;
  c.device.num_ceqs = 2;
  return c;
}

uint64_t offset(irdma_sim::fuzz::ByteEntropy& rng) {
  const uint64_t r = rng();
  switch (r & 3) {
    case 0: return r >> 8 & (BAR0_SIZE - 1) & ~3ull;  // anywhere, aligned
    case 1: return r >> 8 & (BAR0_SIZE - 1);          // anywhere
    default: return kRegisters[(r >> 8) % std::size(kRegisters)] + (r >> 40 & 0x3C);  // a register or its neighbours
  }
}

void round(hal::Platform& hw, irdma_sim::fuzz::ByteEntropy& rng) {
  if (int ret = hal::pcie_flr(hw.config, hw.exec))
    irdma_sim::fuzz::broken(kTarget, "the function did not reset: errno " + std::to_string(-ret));
  if (hw.config.read16(hal::PCI_COMMAND) != 0)
    irdma_sim::fuzz::broken(kTarget, "PCI_COMMAND is not 0 after a reset");
  if (hw.bar0.read32(GLPE_CPUSTATUS0) != ~0u)
    irdma_sim::fuzz::broken(kTarget, "a BAR read was answered with memory decode off");
  hw.config.write(hal::PCI_COMMAND, 2, hal::PCI_COMMAND_MEMORY | hal::PCI_COMMAND_MASTER);
  if (hw.bar0.read32(GLPE_CPUSTATUS0) != CPUSTATUS_READY)
    irdma_sim::fuzz::broken(kTarget, "the engine's CPUs are not ready after a reset");
  const unsigned accesses = 1 + rng() % 32;
  for (unsigned i = 0; i < accesses; i++) {
    const uint64_t op = rng();
    const uint64_t at = offset(rng);
    const uint64_t value = op & 0x10 ? op >> 32 & 0xFF : rng();  // small values reach further
    switch (op & 0xF) {
      case 0: case 1: case 2: hw.bar0.write32(at, uint32_t(value)); break;
      case 3: hw.bar0.write64(at & ~7ull, value); break;
      case 4: case 5: hw.bar0.read32(at); break;
      case 6: hw.bar0.read64(at & ~7ull); break;
      // Configuration space: any offset and width, the command register and MSI-X control
      // (an FLR among them) most often.
      case 7: hw.config.write(uint32_t(value) & 0xFFF, 1u << (op >> 8) % 3, uint32_t(value >> 12)); break;
      case 8: hw.config.write(hal::PCI_COMMAND, 2, uint32_t(value)); break;
      case 9: hw.config.read(uint32_t(value) & 0xFFF, 1u << (op >> 8) % 3); break;
      default: hw.exec.delay_ns(op >> 40 & 0xFFFF); break;
    }
  }
  hw.exec.delay_ns(10'000);  // what the accesses queued runs
}

}  // namespace

// libsystemc wants an sc_main from every program it links into; the kernel is started here
// through the Simulation, never through it.
int sc_main(int, char**) { return 1; }

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static auto* sim = new irdma_sim::system::Simulation(config());  // one elaboration per process
  irdma_sim::fuzz::ByteEntropy rng(data, size);
  sim->run_on_host([&] { round(sim->driver().hw(), rng); });
  return 0;
}
