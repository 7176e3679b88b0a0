// PcieLink's faults (config.link.faults) and the ordering they must keep: a split write's
// pieces land apart in address order (reversed only when asked to break the rules); a held
// write holds back the writes and the MSI issued after it, and the completion of a register
// read; an MSI is lost, duplicated or late as drawn; a read of the purpose struck is refused.
#include <gtest/gtest.h>

#include <cstring>
#include <functional>
#include <stdexcept>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/device/pci_config.h"
#include "model/platform/host_memory.h"
#include "model/platform/pcie_link.h"

namespace {

using namespace irdma_sim;
using sc_core::sc_time;
using sc_core::SC_NS;

// A device that runs `script` (posted writes and MSIs, with its own time in `delay`), a CPU
// that reads a register (or writes configuration space) at `read_at`, and a watcher that notes when each watched qword of
// host memory first changes.
struct LinkBench : sc_core::sc_module {
  SC_HAS_PROCESS(LinkBench);
  tlm_utils::simple_initiator_socket<LinkBench> dma{"dma"};
  tlm_utils::simple_initiator_socket<LinkBench> cpu{"cpu"};
  tlm_utils::simple_target_socket<LinkBench> bar{"bar"};

  LinkBench(sc_core::sc_module_name name, const platform::LinkFaultConfig& faults)
      : sc_module(name), mem("host_memory", 1 << 20), link("pcie_link", config(faults), true, trace),
        ring(mem.alloc(4096, 4096)) {
    dma.bind(link.dev_dma);
    link.host_mem.bind(mem.socket);
    link.dev_bar.bind(bar);
    cpu.bind(link.host_mmio);
    bar.register_b_transport(this, &LinkBench::register_access);
    link.on_msi = [this](uint32_t data, sc_time at) { msis.push_back({data, at}); };
    SC_THREAD(device);
    SC_THREAD(watch);
    SC_THREAD(host_cpu);
  }
  static platform::LinkConfig config(const platform::LinkFaultConfig& faults) {
    platform::LinkConfig c;
    c.faults = faults;
    return c;
  }

  void write(sc_time& delay, uint32_t off, uint32_t len, uint8_t fill) {
    std::vector<uint8_t> bytes(len, fill);
    transact(tlm::TLM_WRITE_COMMAND, ring.iova + off, bytes.data(), len, delay);
  }
  void msi(sc_time& delay, uint32_t data) { transact(tlm::TLM_WRITE_COMMAND, platform::kMsiBase, &data, 4, delay); }
  // A read of `len` bytes at `off` for `purpose`; whether it completed successfully.
  bool read(sc_time& delay, uint32_t off, uint32_t len, const device::DmaPurpose& purpose, void* into) {
    device::DmaPurposeExtension ext;
    ext.purpose = purpose;
    return transact(tlm::TLM_READ_COMMAND, ring.iova + off, into, len, delay, &ext);
  }
  bool transact(tlm::tlm_command cmd, uint64_t addr, void* data, uint32_t len, sc_time& delay,
                device::DmaPurposeExtension* purpose = nullptr) {
    tlm::tlm_generic_payload t;
    t.set_command(cmd);
    t.set_address(addr);
    t.set_data_ptr(static_cast<uint8_t*>(data));
    t.set_data_length(len);
    t.set_streaming_width(len);
    if (purpose) t.set_extension(purpose);
    dma->b_transport(t, delay);
    if (purpose) t.clear_extension(purpose);
    return t.is_response_ok();
  }
  void device() {
    sc_time delay = sc_core::SC_ZERO_TIME;
    script(*this, delay);
  }
  // Every 1 ns, for the first 64 qwords of the ring: when each first became nonzero.
  void watch() {
    seen.assign(64, sc_time());
    std::vector<bool> set(64, false);
    for (int ns = 0; ns < 100000; ns++) {
      for (size_t q = 0; q < 64; q++)
        if (!set[q] && ring.cpu[8 * q] != 0) {
          set[q] = true;
          seen[q] = sc_core::sc_time_stamp();
        }
      wait(1, SC_NS);
    }
  }
  void host_cpu() {
    if (read_at == sc_time()) return;
    wait(read_at);
    uint32_t value = 0;
    sc_time delay = sc_core::SC_ZERO_TIME;
    tlm::tlm_generic_payload t;
    t.set_command(config_write ? tlm::TLM_WRITE_COMMAND : tlm::TLM_READ_COMMAND);
    t.set_address(config_write ? uint64_t(device::kConfigRegion) << device::kRegionShift : 0);
    t.set_data_ptr(reinterpret_cast<uint8_t*>(&value));
    t.set_data_length(4);
    t.set_streaming_width(4);
    cpu->b_transport(t, delay);
    wait(delay);
    read_done = sc_core::sc_time_stamp();
    written_when_read = ring.cpu[0] != 0;
  }
  void register_access(tlm::tlm_generic_payload& t, sc_time&) { t.set_response_status(tlm::TLM_OK_RESPONSE); }

  trace::TraceLog trace;
  platform::HostMemory mem;
  platform::PcieLink link;
  platform::HostMemory::Region ring;
  std::function<void(LinkBench&, sc_time&)> script;
  std::vector<sc_time> seen;
  struct Msi {
    uint32_t data;
    sc_time at;
  };
  std::vector<Msi> msis;
  sc_time read_at, read_done;
  bool config_write = false;  // at read_at, instead of the read
  bool written_when_read = false;
};

TEST(LinkFaults, ASplitWriteLandsPieceByPieceInAddressOrder) {
  platform::LinkFaultConfig f;
  f.split_rate = 1;
  f.split_gap_ns = 700;
  LinkBench b("bench", f);
  b.script = [](LinkBench& b, sc_time& d) { b.write(d, 0, 32, 0xAB); };
  sc_core::sc_start();
  for (int q = 1; q < 4; q++) {  // the watcher looks every nanosecond
    EXPECT_GE(b.seen[q] - b.seen[q - 1], sc_time(700, SC_NS)) << q;
    EXPECT_LE(b.seen[q] - b.seen[q - 1], sc_time(701, SC_NS)) << q;
  }
  EXPECT_EQ(b.link.fault_counters()->writes_split, 1u);
}

TEST(LinkFaults, AReversedSplitLandsTheLastQwordFirst) {
  platform::LinkFaultConfig f;
  f.split_rate = 1;
  f.split_reversed = true;
  LinkBench b("bench", f);
  b.script = [](LinkBench& b, sc_time& d) { b.write(d, 0, 32, 0xAB); };
  sc_core::sc_start();
  for (int q = 1; q < 4; q++) EXPECT_GT(b.seen[q - 1], b.seen[q]) << q;
}

TEST(LinkFaults, AHeldWriteHoldsBackTheWritesAndTheMsiIssuedAfterIt) {
  platform::LinkFaultConfig f;
  f.posted_delay_rate = 1;
  f.posted_delay_max_ns = 5000;
  LinkBench b("bench", f);
  b.script = [](LinkBench& b, sc_time& d) {
    for (uint32_t i = 0; i < 8; i++) b.write(d, 8 * i, 8, uint8_t(i + 1));
    b.msi(d, 3);
  };
  sc_core::sc_start();
  EXPECT_EQ(b.link.fault_counters()->writes_delayed, 8u);
  for (int q = 1; q < 8; q++) EXPECT_GE(b.seen[q], b.seen[q - 1]) << "write " << q << " passed an earlier one";
  ASSERT_EQ(b.msis.size(), 1u);
  EXPECT_GT(b.msis[0].at, b.seen[7] - sc_time(1, SC_NS)) << "the MSI passed the writes before it";
}

TEST(LinkFaults, ARegisterReadCompletesOnlyAfterTheWritesIssuedBeforeIt) {
  platform::LinkFaultConfig f;
  f.posted_delay_rate = 1;
  f.posted_delay_max_ns = 1'000'000;  // far longer than the read takes
  LinkBench b("bench", f);
  b.script = [](LinkBench& b, sc_time& d) { b.write(d, 0, 8, 0x5A); };
  b.read_at = sc_time(10, SC_NS);
  sc_core::sc_start();
  EXPECT_TRUE(b.written_when_read) << "the read completion passed a posted write issued before the read";
  EXPECT_GE(b.read_done, b.seen[0]);
}

// A configuration write is non-posted: its completion, as a read's, comes back behind the
// device's posted writes (a driver that stops the device mastering the bus finds all it
// wrote before landed).
TEST(LinkFaults, AConfigWriteCompletesOnlyAfterTheWritesIssuedBeforeIt) {
  platform::LinkFaultConfig f;
  f.posted_delay_rate = 1;
  f.posted_delay_max_ns = 1'000'000;
  LinkBench b("bench", f);
  b.script = [](LinkBench& b, sc_time& d) { b.write(d, 0, 8, 0x5A); };
  b.read_at = sc_time(10, SC_NS);
  b.config_write = true;
  sc_core::sc_start();
  EXPECT_TRUE(b.written_when_read) << "the configuration write's completion passed a posted write issued before it";
  EXPECT_GE(b.read_done, b.seen[0]);
}

// Two MSIs through a link with the faults `set` makes; `on_time`: when the first would
// arrive without them.
std::vector<LinkBench::Msi> msis_with(void (*set)(platform::LinkFaultConfig&), platform::LinkFaultCounters& counters,
                                      sc_time* on_time = nullptr) {
  platform::LinkFaultConfig f;
  set(f);
  LinkBench b("bench", f);
  if (on_time) *on_time = b.link.serialisation(4, platform::LinkConfig{}.max_payload_bytes) + sc_time(300, SC_NS);
  b.script = [](LinkBench& b, sc_time& d) {
    b.msi(d, 1);
    b.msi(d, 2);
  };
  sc_core::sc_start();
  if (const platform::LinkFaultCounters* c = b.link.fault_counters()) counters = *c;
  return b.msis;
}

TEST(LinkFaults, ALostMsiIsNeverDelivered) {
  platform::LinkFaultCounters c;
  const auto lost = msis_with([](platform::LinkFaultConfig& f) { f.msix_lost_rate = 1; }, c);
  EXPECT_TRUE(lost.empty());
  EXPECT_EQ(c.msix_lost, 2u);
}

TEST(LinkFaults, ADuplicatedMsiIsDeliveredTwice) {
  platform::LinkFaultCounters c;
  const auto dup = msis_with([](platform::LinkFaultConfig& f) { f.msix_duplicated_rate = 1; }, c);
  ASSERT_EQ(dup.size(), 4u);
  EXPECT_EQ(dup[0].data, dup[1].data);
  EXPECT_GT(dup[1].at, dup[0].at);
  EXPECT_EQ(c.msix_duplicated, 2u);
}

TEST(LinkFaults, ALateMsiArrivesAfterItsTime) {
  platform::LinkFaultCounters c;
  sc_time on_time;
  const auto late = msis_with([](platform::LinkFaultConfig& f) { f.msix_delayed_rate = 1; }, c, &on_time);
  ASSERT_EQ(late.size(), 2u);
  EXPECT_GT(late[0].at, on_time);
  EXPECT_LE(late[0].at, on_time + sc_time(platform::LinkFaultConfig{}.msix_delay_max_ns, SC_NS));
  EXPECT_EQ(c.msix_delayed, 2u);
}

// A refused read comes back as Completer Abort without touching memory, and the bench is
// told which queue it struck; reads of other purposes, and of none, are left alone.
TEST(LinkFaults, ARefusedReadReachesNoMemoryAndSaysWhoseItWas) {
  platform::LinkFaultConfig f;
  f.wqe_read_error_rate = 1;
  LinkBench b("bench", f);
  std::vector<device::DmaPurpose> struck;
  b.link.on_struck_access = [&](const device::DmaPurpose& p) { struck.push_back(p); };
  std::vector<bool> ok;
  uint64_t refused = 0x77, read_back = 0, arm_read = 0;
  b.script = [&](LinkBench& b, sc_time& d) {
    b.write(d, 0, 8, 0x11);
    ok.push_back(b.read(d, 0, 8, {device::DmaPurpose::wqe_fetch, 5, 9}, &refused));
    ok.push_back(b.read(d, 0, 8, {}, &read_back));
    ok.push_back(b.read(d, 0, 8, {device::DmaPurpose::cq_arm, 3}, &arm_read));
  };
  sc_core::sc_start();
  EXPECT_EQ(ok, (std::vector<bool>{false, true, true}));
  EXPECT_EQ(refused, 0x77u) << "a refused read returned data";
  EXPECT_EQ(read_back, 0x1111111111111111u);
  EXPECT_EQ(arm_read, 0x1111111111111111u);
  ASSERT_EQ(struck.size(), 1u);
  EXPECT_EQ(struck[0].kind, device::DmaPurpose::wqe_fetch);
  EXPECT_EQ(struck[0].object, 5u);
  EXPECT_EQ(struck[0].request, 9u);
  EXPECT_EQ(b.link.fault_counters()->wqe_reads_failed, 1u);
  EXPECT_EQ(b.link.dma_errors(), 0u) << "an injected fault is no access to unmapped memory";
}

// A refused CQE write never lands, the device is told nothing (posted), and the root port
// reports the error when the write arrives; writes of no purpose land.
TEST(LinkFaults, ARefusedWriteNeverLandsAndIsReportedWhenItArrives) {
  platform::LinkFaultConfig f;
  f.cqe_write_error_rate = 1;
  LinkBench b("bench", f);
  std::vector<sc_time> reported;
  b.link.on_pci_error = [&](sc_time at) { reported.push_back(at); };
  std::vector<bool> ok;
  b.script = [&](LinkBench& b, sc_time& d) {
    std::vector<uint8_t> cqe(32, 0xCC);
    device::DmaPurposeExtension ext;
    ext.purpose = {device::DmaPurpose::cqe_write, 4};
    ok.push_back(b.transact(tlm::TLM_WRITE_COMMAND, b.ring.iova, cqe.data(), 32, d, &ext));
    b.write(d, 64, 8, 0x11);
  };
  sc_core::sc_start();
  EXPECT_EQ(ok, std::vector<bool>{true}) << "a posted write's refusal reached the device";
  EXPECT_EQ(b.seen[0], sc_time()) << "the refused CQE landed";
  EXPECT_NE(b.seen[8], sc_time()) << "a write of no purpose did not land";
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_GT(reported[0], sc_time(300, SC_NS)) << "reported before the write could arrive";
  EXPECT_EQ(b.link.fault_counters()->cqe_writes_failed, 1u);
}

// A poisoned payload write never lands either; the bench hears which QP's data it was, and
// the root port reports it. Entry writes and writes of no purpose are never poisoned.
TEST(LinkFaults, APoisonedPayloadWriteIsDroppedAndReported) {
  platform::LinkFaultConfig f;
  f.payload_write_poison_rate = 1;
  LinkBench b("bench", f);
  std::vector<sc_time> reported;
  std::vector<device::DmaPurpose> struck;
  b.link.on_pci_error = [&](sc_time at) { reported.push_back(at); };
  b.link.on_struck_access = [&](const device::DmaPurpose& p) { struck.push_back(p); };
  std::vector<bool> ok;
  b.script = [&](LinkBench& b, sc_time& d) {
    std::vector<uint8_t> bytes(32, 0xDD);
    device::DmaPurposeExtension ext;
    ext.purpose = {device::DmaPurpose::payload_write, 7};
    ok.push_back(b.transact(tlm::TLM_WRITE_COMMAND, b.ring.iova, bytes.data(), 32, d, &ext));
    ext.purpose = {device::DmaPurpose::cqe_write, 4};
    ok.push_back(b.transact(tlm::TLM_WRITE_COMMAND, b.ring.iova + 64, bytes.data(), 32, d, &ext));
    b.write(d, 128, 8, 0x11);
  };
  sc_core::sc_start();
  EXPECT_EQ(ok, (std::vector<bool>{true, true})) << "a poisoned write's fate reached the device";
  EXPECT_EQ(b.seen[0], sc_time()) << "the poisoned payload landed";
  EXPECT_NE(b.seen[8], sc_time()) << "a CQE write was poisoned";
  EXPECT_NE(b.seen[16], sc_time()) << "a write of no purpose did not land";
  ASSERT_EQ(struck.size(), 1u);
  EXPECT_EQ(struck[0].kind, device::DmaPurpose::payload_write);
  EXPECT_EQ(struck[0].object, 7u);
  ASSERT_EQ(reported.size(), 1u);
  EXPECT_GT(reported[0], sc_time(300, SC_NS)) << "reported before the write could arrive";
  EXPECT_EQ(b.link.fault_counters()->payload_writes_poisoned, 1u);
  EXPECT_EQ(b.link.fault_counters()->cqe_writes_failed, 0u);
  EXPECT_EQ(b.link.dma_errors(), 0u);
}

TEST(LinkFaults, FaultsOnPostedWritesNeedWritesThatLandWhenTheyArrive) {
  trace::TraceLog no_trace;
  platform::LinkConfig c;
  c.faults.split_rate = 0.5;
  EXPECT_THROW(platform::PcieLink("pcie_link", c, /*defer_posted_writes=*/false, no_trace), std::invalid_argument);
}

TEST(LinkFaults, TheSameSeedDrawsTheSameFaults) {
  platform::LinkFaultConfig f;
  f.posted_delay_rate = 0.3;
  f.split_rate = 0.3;
  f.msix_lost_rate = 0.3;
  f.seed = 7;
  f.shadow_read_error_rate = 0.3;
  platform::LinkFaults a(f), b(f);
  for (int i = 0; i < 1000; i++) {
    ASSERT_EQ(a.posted_delay_ps(), b.posted_delay_ps());
    ASSERT_EQ(a.split_gap_ps(32), b.split_gap_ps(32));
    ASSERT_EQ(a.msix_fate(), b.msix_fate());
    ASSERT_EQ(a.read_fails({device::DmaPurpose::cq_arm, 1}), b.read_fails({device::DmaPurpose::cq_arm, 1}));
  }
  EXPECT_GT(a.counters().msix_lost, 200u);
  EXPECT_LT(a.counters().msix_lost, 400u);
}

}  // namespace
