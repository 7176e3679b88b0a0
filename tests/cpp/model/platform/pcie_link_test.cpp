// PcieLink's posted writes in the timing-accurate mode: a device that runs ahead with more
// writes in flight than the root complex has posted-request credits waits for the oldest to
// land; every write still lands, in order, at its own time.
// Its DMI into host memory: a device's direct accesses cost the simulated time and leave the
// trace its transported ones would, in both timing modes, and end when the memory is freed.
// Held until the host looks: a posted write lands where the host resumes, a CPU spinning on
// memory wakes as it arrives, and the trace still comes out in time order.
#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <string>
#include <vector>

#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/device/dma_port.h"
#include "model/device/pci_config.h"
#include "model/platform/host_memory.h"
#include "model/platform/pcie_link.h"
#include "model/trace/trace_log.h"

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

// Passes transactions on and refuses DMI: the device behind it has every access transported.
struct NoDmi : sc_core::sc_module {
  tlm_utils::simple_target_socket<NoDmi> in{"in"};
  tlm_utils::simple_initiator_socket<NoDmi> out{"out"};
  explicit NoDmi(sc_core::sc_module_name name) : sc_module(name) {
    in.register_b_transport(this, &NoDmi::b_transport);
  }
  void b_transport(tlm::tlm_generic_payload& t, sc_time& delay) {
    out->b_transport(t, delay);
    t.set_dmi_allowed(false);
  }
};

// One DMA access of the script below and what came of it.
struct Access {
  bool write;
  int region;
  uint32_t off, len;
  uint8_t fill;  // a write's bytes
};
struct Outcome {
  bool ok;
  std::vector<uint8_t> data;  // a read's
  uint64_t engine_ps;         // the engine's time after it
  bool operator==(const Outcome& o) const { return ok == o.ok && data == o.data && engine_ps == o.engine_ps; }
};
void PrintTo(const Outcome& o, std::ostream* os) {
  *os << (o.ok ? "ok" : "failed") << " at " << o.engine_ps << " ps, " << o.data.size() << " bytes read";
}

// A device's DMA master behind its own link and memory, logging to its own trace, running a
// script of accesses from an engine thread; region 0 is freed by the host half way.
struct DmaSystem {
  struct Engine : sc_core::sc_module {
    SC_HAS_PROCESS(Engine);
    tlm_utils::simple_initiator_socket<Engine> dma{"dma"};
    Engine(sc_core::sc_module_name name, sc_time quantum, DmaSystem& sys)
        : sc_module(name), time(1000, quantum), config(make_config()), port(dma, time, config), sys(sys) {
      config.write(device::pci::COMMAND, 2, device::pci::COMMAND_MEMORY | device::pci::COMMAND_MASTER);
      dma.register_invalidate_direct_mem_ptr(this, &Engine::invalidate);
      SC_THREAD(run);
    }
    static device::PciConfigSpace make_config() {
      std::array<device::PciBar, 6> bars{};
      bars[0] = {1 << 20, true, true};
      return device::PciConfigSpace({}, bars, {1, 0, 0x8000, 0x9000});
    }
    void invalidate(sc_dt::uint64 start, sc_dt::uint64 end) { port.invalidate_dmi(start, end); }
    void run();
    device::EngineTime time;
    device::PciConfigSpace config;
    device::DmaPort port;
    DmaSystem& sys;
  };

  DmaSystem(const std::string& name, bool defer, sc_time quantum, bool dmi, const std::vector<Access>& script)
      : mem((name + "_memory").c_str(), 1 << 20),
        link((name + "_link").c_str(), platform::LinkConfig{}, defer, trace),
        engine((name + "_engine").c_str(), quantum, *this),
        mmio((name + "_mmio").c_str()),
        script(script),
        trace_path("/tmp/irdma-sim-dmi-" + name + "-" + std::to_string(::getpid()) + ".jsonl") {
    trace.open(trace_path, [] { return sc_core::sc_time_stamp().value(); });
    for (auto& r : regions) r = mem.alloc(8192, 4096);
    if (dmi) {
      engine.dma.bind(link.dev_dma);
    } else {
      no_dmi = std::make_unique<NoDmi>((name + "_no_dmi").c_str());
      engine.dma.bind(no_dmi->in);
      no_dmi->out.bind(link.dev_dma);
    }
    link.host_mem.bind(mem.socket);
    link.dev_bar.bind(mmio.socket);
    mmio.cpu.bind(link.host_mmio);
  }
  ~DmaSystem() { std::remove(trace_path.c_str()); }
  std::string trace_text() {
    trace.close();
    std::ifstream in(trace_path);
    std::stringstream text;
    text << in.rdbuf();
    return text.str();
  }

  trace::TraceLog trace;
  platform::HostMemory mem;
  platform::PcieLink link;
  Engine engine;
  NoMmio mmio;
  std::unique_ptr<NoDmi> no_dmi;
  std::vector<Access> script;
  std::string trace_path;
  std::array<platform::HostMemory::Region, 2> regions;
  std::vector<Outcome> outcomes;
  bool freed_page_touched = false;
};

void DmaSystem::Engine::run() {
  for (size_t i = 0; i < sys.script.size(); ++i) {
    const Access& a = sys.script[i];
    if (i == sys.script.size() / 2) {
      // The host clears region 0 and takes it back (its pages stay until given back in a
      // batch); the rest of the script still reaches for it.
      time.sync();
      std::memset(sys.regions[0].cpu, 0, 8192);
      sys.mem.free(sys.regions[0].iova);
    }
    const uint64_t addr = sys.regions[a.region].iova + a.off;
    Outcome o;
    if (a.write) {
      std::vector<uint8_t> bytes(a.len, a.fill);
      o.ok = port.write(addr, bytes.data(), a.len);
    } else {
      o.data.assign(a.len, 0xEE);
      o.ok = port.read(addr, o.data.data(), a.len);
    }
    time.cycles(3);
    o.engine_ps = time.now_ps();
    sys.outcomes.push_back(o);
  }
  time.sync();
  // Nothing the device did after the free may reach the pages region 0 had.
  for (size_t b = 0; b < 8192; ++b) sys.freed_page_touched |= sys.regions[0].cpu[b] != 0;
}

std::vector<Access> dmi_script() {
  std::vector<Access> s;
  for (int round = 0; round < 3; ++round) {
    for (int region = 0; region < 2; ++region) {
      s.push_back({true, region, 0, 32, uint8_t(0x10 + round)});
      s.push_back({true, region, 32, 32, uint8_t(0x20 + round)});
      s.push_back({false, region, 0, 64, 0});     // over both writes, which may be in flight
      s.push_back({false, region, 4096, 16, 0});  // over nothing written
      s.push_back({true, region, 4100, 4, uint8_t(0x30 + round)});
      s.push_back({false, region, 4096, 16, 0});
      s.push_back({false, region, 8190, 4, 0});   // past the region's end: an error
    }
  }
  return s;
}

// The same script through a DmaPort that may take DMI and one that may not, side by side.
// `min_direct`: how many accesses at least must have been direct.
void expect_direct_equals_transported(bool defer, sc_time quantum, size_t min_direct) {
  const std::vector<Access> script = dmi_script();
  DmaSystem direct("direct", defer, quantum, true, script);
  DmaSystem transported("transported", defer, quantum, false, script);
  sc_core::sc_start();

  ASSERT_EQ(direct.outcomes.size(), script.size());
  ASSERT_EQ(transported.outcomes.size(), script.size());
  for (size_t i = 0; i < script.size(); ++i) EXPECT_EQ(direct.outcomes[i], transported.outcomes[i]) << "access " << i;
  std::vector<uint8_t> first_two(32, 0x10);
  first_two.resize(64, 0x20);
  EXPECT_EQ(direct.outcomes[2].data, first_two);
  EXPECT_FALSE(direct.outcomes[6].ok) << "a read past the region's end";
  EXPECT_FALSE(direct.freed_page_touched) << "a direct write reached memory the host had freed";
  EXPECT_EQ(direct.engine.port.errors(), transported.engine.port.errors());
  EXPECT_GT(direct.engine.port.errors(), 3u);
  EXPECT_EQ(direct.link.dma_errors(), transported.link.dma_errors());
  EXPECT_GE(direct.engine.port.direct_accesses(), min_direct);
  EXPECT_EQ(transported.engine.port.direct_accesses(), 0u);
  const std::string direct_trace = direct.trace_text(), transported_trace = transported.trace_text();
  EXPECT_GT(direct_trace.size(), 1000u);
  EXPECT_EQ(direct_trace, transported_trace);
}

// A device whose engine thread is suspended inside the link, out of posted credits, while
// another of its blocks posts from a method (as the MSI-X block does when an entry is
// unmasked): each write must land with its own bytes. The DMA port once shared one payload
// between them, and the engine's write took the method's data.
struct TwoPosters : sc_core::sc_module {
  SC_HAS_PROCESS(TwoPosters);
  tlm_utils::simple_initiator_socket<TwoPosters> dma{"dma"};
  device::EngineTime time{1000, sc_core::SC_ZERO_TIME};
  device::PciConfigSpace config{DmaSystem::Engine::make_config()};
  device::DmaPort port{dma, time, config};
  uint64_t engine_base, method_base;
  int method_writes = 0;
  sc_core::sc_event tick;
  TwoPosters(sc_core::sc_module_name name, uint64_t engine_base, uint64_t method_base)
      : sc_module(name), engine_base(engine_base), method_base(method_base) {
    config.write(device::pci::COMMAND, 2, device::pci::COMMAND_MEMORY | device::pci::COMMAND_MASTER);
    SC_THREAD(engine);
    SC_METHOD(poster);
    sensitive << tick;
    dont_initialize();
  }
  void engine() {
    tick.notify(sc_core::SC_ZERO_TIME);
    for (int i = 0; i < kWrites; ++i) {
      uint8_t data[32];
      std::memset(data, uint8_t(i % 255 + 1), sizeof data);
      port.write(engine_base + 32 * uint64_t(i), data, sizeof data);
    }
    time.sync();
  }
  void poster() {
    const uint32_t value = 0xA5A5A500u | uint32_t(method_writes % 256);
    port.write_now(method_base + 4 * uint64_t(method_writes % 1024), &value, 4);
    if (++method_writes < 4000) tick.notify(5, sc_core::SC_NS);
  }
};

TEST(PcieLink, AMethodPostingWhileTheEngineWaitsForCreditsTakesNothingOfTheEngines) {
  trace::TraceLog no_trace;
  platform::HostMemory mem("host_memory", 1 << 20);
  const platform::HostMemory::Region ring = mem.alloc(32 * kWrites, 64);
  const platform::HostMemory::Region other = mem.alloc(4096, 64);
  platform::PcieLink link("pcie_link", platform::LinkConfig{}, /*defer_posted_writes=*/true, no_trace);
  TwoPosters device("device", ring.iova, other.iova);
  NoMmio mmio("mmio");
  device.dma.bind(link.dev_dma);
  link.host_mem.bind(mem.socket);
  link.dev_bar.bind(mmio.socket);
  mmio.cpu.bind(link.host_mmio);
  sc_core::sc_start();
  for (int i = 0; i < kWrites; ++i)
    for (int b = 0; b < 32; ++b) ASSERT_EQ(ring.cpu[32 * i + b], uint8_t(i % 255 + 1)) << "engine write " << i;
  EXPECT_GT(device.method_writes, 1000);
}

// A device posting one 64-byte write of `fill` at `at`, to host memory that holds the
// link's posted writes until the host looks.
struct HeldWrites {
  // The device: a thread that runs `body` against its DMA socket.
  struct Poster : sc_core::sc_module {
    SC_HAS_PROCESS(Poster);
    tlm_utils::simple_initiator_socket<Poster> dma{"dma"};
    Poster(sc_core::sc_module_name name, std::function<void(Poster&)> body) : sc_module(name), body(std::move(body)) {
      SC_THREAD(run);
    }
    void run() { body(*this); }
    // A 64-byte posted write of `fill`, issued `delay` ahead of the kernel.
    void post(uint64_t iova, uint8_t fill, sc_time& delay) {
      uint8_t data[64];
      std::memset(data, fill, sizeof data);
      tlm::tlm_generic_payload t;
      t.set_command(tlm::TLM_WRITE_COMMAND);
      t.set_address(iova);
      t.set_data_ptr(data);
      t.set_data_length(64);
      t.set_streaming_width(64);
      dma->b_transport(t, delay);
    }
    std::function<void(Poster&)> body;
  };

  // One write of 0x5A into `region` at `post_at`.
  explicit HeldWrites(sc_time post_at)
      : HeldWrites([this, post_at](Poster& p) {
          sc_core::wait(post_at);
          sc_time delay = sc_core::SC_ZERO_TIME;
          p.post(region.iova, 0x5A, delay);
        }) {}
  explicit HeldWrites(std::function<void(Poster&)> device)
      : mem("host_memory", 1 << 20),
        region(mem.alloc(4096, 64)),
        link("pcie_link", platform::LinkConfig{}, /*defer_posted_writes=*/true, trace),
        poster("poster", std::move(device)),
        mmio("mmio") {
    poster.dma.bind(link.dev_dma);
    link.host_mem.bind(mem.socket);
    link.dev_bar.bind(mmio.socket);
    mmio.cpu.bind(link.host_mmio);
    link.land_when_host_looks(mem);
  }
  bool landed() const { return region.cpu[0] == 0x5A && region.cpu[63] == 0x5A; }
  // When a write posted at `at` arrives: its serialisation and the link's latency later.
  sc_time arrival(sc_time at) const {
    return at + link.serialisation(64, platform::LinkConfig{}.max_payload_bytes) +
           sc_time(platform::LinkConfig{}.dma_latency_ns, sc_core::SC_NS);
  }

  trace::TraceLog trace;
  platform::HostMemory mem;
  platform::HostMemory::Region region;
  platform::PcieLink link;
  Poster poster;
  NoMmio mmio;
};

// The write costs the kernel nothing of its own: the simulation ends as the device posts it,
// before it arrives. The host then finds it only once it has arrived.
TEST(PcieLink, AHeldWriteLandsWhenTheHostLooksOnceItHasArrived) {
  const sc_time post_at(100, sc_core::SC_NS);
  HeldWrites sys(post_at);
  sc_core::sc_start();
  EXPECT_EQ(sc_core::sc_time_stamp(), post_at) << "the write's arrival was scheduled as activity";
  ASSERT_EQ(sys.link.next_arrival(), sys.arrival(post_at));
  sc_core::sc_start(*sys.link.next_arrival() - sc_core::sc_time_stamp() - sc_time::from_value(1));
  sys.mem.land_posted_writes();
  EXPECT_FALSE(sys.landed()) << "landed before it arrived";
  sc_core::sc_start(sc_time::from_value(1));
  EXPECT_FALSE(sys.landed()) << "landed with nobody looking";
  sys.mem.land_posted_writes();
  EXPECT_TRUE(sys.landed());
  EXPECT_FALSE(sys.link.next_arrival());
}

// A host CPU's thread: from `at` on, runs `body`.
struct HostCpu : sc_core::sc_module {
  SC_HAS_PROCESS(HostCpu);
  HostCpu(sc_core::sc_module_name name, sc_time at, std::function<void()> body)
      : sc_module(name), at(at), body(std::move(body)) {
    SC_THREAD(run);
  }
  void run() {
    sc_core::wait(at);
    body();
  }
  sc_time at;
  std::function<void()> body;
};

// A CPU spinning on memory from `from` on wakes as the write arrives, and sees it: when it
// arrives.
sc_time spinning_cpu_sees_it(HeldWrites& sys, sc_time from) {
  sc_time saw_it_at = sc_core::SC_ZERO_TIME;
  HostCpu cpu("cpu", from, [&] {
    while (!sys.landed()) sys.mem.wait_for_write(sc_time(1, sc_core::SC_MS));
    saw_it_at = sc_core::sc_time_stamp();
  });
  sc_core::sc_start();
  return saw_it_at;
}

TEST(PcieLink, ACpuSpinningOnMemoryWakesAsAHeldWriteArrives) {
  const sc_time post_at(100, sc_core::SC_NS);
  HeldWrites sys(post_at);
  EXPECT_EQ(spinning_cpu_sees_it(sys, sc_core::SC_ZERO_TIME), sys.arrival(post_at));
}

TEST(PcieLink, ACpuThatStartsSpinningWhileAWriteIsOnItsWayWakesAsItArrives) {
  const sc_time post_at(100, sc_core::SC_NS);
  HeldWrites sys(post_at);
  EXPECT_EQ(spinning_cpu_sees_it(sys, post_at + sc_time(1, sc_core::SC_NS)), sys.arrival(post_at));
}

// Logged as it lands, after later events: the trace holds back what is newer than the
// link's oldest unlanded write, so the log still comes out in time order.
TEST(PcieLink, AHeldWriteLoggedAsItLandsKeepsTheTraceInTimeOrder) {
  const sc_time post_at(100, sc_core::SC_NS);
  HeldWrites sys(post_at);
  HostCpu host("host", sc_time(10, sc_core::SC_US), [&] {
    sys.trace.event(sc_core::sc_time_stamp().value(), "host_looks");
    sys.trace.flush();
    sys.mem.land_posted_writes();
  });
  const std::string path = "/tmp/irdma-sim-held-" + std::to_string(::getpid()) + ".jsonl";
  sys.trace.open(path, [&] { return std::min<uint64_t>(sc_core::sc_time_stamp().value(), sys.link.unlanded_from_ps()); });
  sc_core::sc_start();
  sys.trace.close();
  std::ifstream in(path);
  std::string first, second;
  std::getline(in, first);
  std::getline(in, second);
  std::remove(path.c_str());
  EXPECT_NE(first.find("\"dma_write\""), std::string::npos) << first;
  EXPECT_NE(second.find("\"host_looks\""), std::string::npos) << second;
  EXPECT_EQ(sys.trace.late_events(), 0u);
}

// Runs once poked: whether it did shows whether a process gave the kernel a turn.
struct Bystander : sc_core::sc_module {
  SC_HAS_PROCESS(Bystander);
  explicit Bystander(sc_core::sc_module_name name) : sc_module(name) {
    SC_METHOD(run);
    sensitive << poke;
    dont_initialize();
  }
  void run() { ran = true; }
  sc_core::sc_event poke;
  bool ran = false;
};

// A device back from a pause with more writes queued than it has credits, every one of them
// arrived and none landed (nobody looked): they land as it posts again, and it goes on at
// once, without giving the kernel a turn.
TEST(PcieLink, ADeviceBackFromAPauseFindsItsArrivedWritesGaveTheirCreditsBack) {
  constexpr int kMany = 300;  // past the 256 credits
  uint64_t ring = 0;
  Bystander bystander("bystander");
  bool waited = true;
  HeldWrites sys([&](HeldWrites::Poster& p) {
    sc_time delay = sc_core::SC_ZERO_TIME;
    for (int i = 0; i < kMany; ++i) p.post(ring + 64 * uint64_t(i), uint8_t(i % 255 + 1), delay);
    sc_core::wait(delay + sc_time(1, sc_core::SC_MS));
    delay = sc_core::SC_ZERO_TIME;
    bystander.poke.notify(sc_core::SC_ZERO_TIME);
    p.post(ring + 64 * kMany, 0xEE, delay);
    waited = bystander.ran;
  });
  const platform::HostMemory::Region r = sys.mem.alloc(64 * (kMany + 1), 64);
  ring = r.iova;
  sc_core::sc_start();
  EXPECT_FALSE(waited) << "the device waited for credits its arrived writes held";
  EXPECT_EQ(r.cpu[64 * (kMany - 1)], uint8_t((kMany - 1) % 255 + 1)) << "the arrived writes did not land";
  sc_core::sc_start(sc_time(1, sc_core::SC_US));
  sys.mem.land_posted_writes();
  for (int i = 0; i < kMany; ++i) ASSERT_EQ(r.cpu[64 * i + 63], uint8_t(i % 255 + 1)) << "write " << i;
  EXPECT_EQ(r.cpu[64 * kMany], 0xEE);
  EXPECT_EQ(sys.link.dma_errors(), 0u);
}

TEST(PcieLink, DirectAccessesLooselyTimedCostAndLogWhatTransportedOnesDo) {
  // Every access inside a live region but the first to each of its pages.
  expect_direct_equals_transported(false, sc_time(10, sc_core::SC_US), 26);
}

TEST(PcieLink, DirectReadsWithPostedWritesDeferredCostAndLogWhatTransportedOnesDo) {
  // Only reads that no queued write overlaps: the second read of nothing written, per region.
  expect_direct_equals_transported(true, sc_core::SC_ZERO_TIME, 3);
}

}  // namespace
