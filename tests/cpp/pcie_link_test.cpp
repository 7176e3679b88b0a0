// PcieLink's posted writes in the timing-accurate mode: a device that runs ahead with more
// writes in flight than the root complex has posted-request credits waits for the oldest to
// land; every write still lands, in order, at its own time.
#include <gtest/gtest.h>

#include <cstring>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/platform/host_memory.h"
#include "model/platform/pcie_link.h"

namespace {

using namespace irdma_sim;
using sc_core::sc_time;

constexpr int kWrites = 1000;
constexpr size_t kCredits = 256;  // PcieLink's

// Issues kWrites 64-byte posted writes back to back without waiting (its time runs ahead in
// `delay`, as an engine's does), then records where the kernel and the memory stood.
struct Writer : sc_core::sc_module {
  SC_HAS_PROCESS(Writer);
  tlm_utils::simple_initiator_socket<Writer> dma{"dma"};
  Writer(sc_core::sc_module_name name, platform::HostMemory& mem, uint64_t iova) : sc_module(name), mem(mem), iova(iova) {
    SC_THREAD(run);
  }
  void run() {
    sc_time delay = sc_core::SC_ZERO_TIME;
    for (int i = 0; i < kWrites; ++i) {
      uint8_t data[64];
      std::memset(data, uint8_t(i % 255 + 1), sizeof data);
      tlm::tlm_generic_payload t;
      t.set_command(tlm::TLM_WRITE_COMMAND);
      t.set_address(iova + 64 * uint64_t(i));
      t.set_data_ptr(data);
      t.set_data_length(64);
      t.set_streaming_width(64);
      dma->b_transport(t, delay);
      ok = ok && t.is_response_ok();
    }
    kernel_after_issue = sc_core::sc_time_stamp();
    last_landed_early = mem.cpu_ptr(iova + 64 * (kWrites - 1), 1)[0] != 0;
  }
  platform::HostMemory& mem;
  uint64_t iova;
  bool ok = true;
  sc_time kernel_after_issue;
  bool last_landed_early = true;
};

// Both ends of the link's MMIO path, which this test does not use.
struct NoMmio : sc_core::sc_module {
  tlm_utils::simple_initiator_socket<NoMmio> cpu{"cpu"};
  tlm_utils::simple_target_socket<NoMmio> socket{"socket"};
  explicit NoMmio(sc_core::sc_module_name name) : sc_module(name) {
    socket.register_b_transport(this, &NoMmio::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& t, sc_time&) { t.set_response_status(tlm::TLM_ADDRESS_ERROR_RESPONSE); }
};

TEST(PcieLink, ADeviceOutOfPostedCreditsWaitsAndEveryWriteStillLandsInOrder) {
  trace::TraceLog no_trace;
  platform::HostMemory mem("host_memory", 1 << 20);
  const platform::HostMemory::Region ring = mem.alloc(64 * kWrites, 64);
  platform::LinkConfig cfg;
  platform::PcieLink link("pcie_link", cfg, /*defer_posted_writes=*/true, no_trace);
  Writer writer("writer", mem, ring.iova);
  NoMmio mmio("mmio");
  writer.dma.bind(link.dev_dma);
  link.host_mem.bind(mem.socket);
  link.dev_bar.bind(mmio.socket);
  mmio.cpu.bind(link.host_mmio);
  sc_core::sc_start();

  ASSERT_TRUE(writer.ok);
  const sc_time per_write = link.serialisation(64, cfg.max_payload_bytes);
  // Write k lands at (k + 1) writes' serialisation plus the latency; the writer could issue
  // write k only once write k - 256 had landed.
  EXPECT_GE(writer.kernel_after_issue, per_write * double(kWrites - kCredits))
      << "the writer never waited for a credit";
  EXPECT_FALSE(writer.last_landed_early) << "a posted write landed before its time";
  for (int i = 0; i < kWrites; ++i)
    for (int b = 0; b < 64; ++b) ASSERT_EQ(ring.cpu[64 * i + b], uint8_t(i % 255 + 1)) << "write " << i;
  EXPECT_EQ(link.dma_errors(), 0u);
}

}  // namespace
