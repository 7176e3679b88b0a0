// The Verilated CQ writer against the TLM one: a randomized stress of the block alone (every
// AXI channel and the response throttled at random, head moves, arms, resizes, creates and
// destroys interleaved, unmapped rings and shadow areas) in lock-step with its TLM twin, the
// host memory each leaves, the wrap with an extended CQE across it as a waveform, its
// invariant monitors, its coverage and what it charges the engine's clock.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "model/device/cq_lockstep.h"
#include "model/device/cq_writer.h"
#include "rtl_bridge/rtl_cq_writer.h"

namespace irdma_sim::rtl {
namespace {

using device::CqArmOutcome;
using device::CqeFields;
using device::CqRing;
using device::CqWriteOutcome;
using device::CqWriter;
using device::CqWriterPort;
using device::StageCycles;

// Host memory: one mapped window; an access outside it fails, as an unmapped IOVA does.
class MemoryPort final : public CqWriterPort {
 public:
  static constexpr uint64_t kBase = 0x100000, kBytes = 1 << 20;
  bool read(uint64_t addr, void* dst, uint32_t len) override {
    if (!mapped(addr, len)) return false;
    std::memcpy(dst, &mem[addr - kBase], len);
    return true;
  }
  bool write(uint64_t addr, const void* src, uint32_t len) override {
    if (!mapped(addr, len)) return false;
    std::memcpy(&mem[addr - kBase], src, len);
    writes.push_back(addr);
    return true;
  }
  void cycles(uint32_t n) override { charged += n; }
  uint64_t now_ps() const override { return charged * 2000; }
  void put(uint64_t addr, uint64_t v) { std::memcpy(&mem[addr - kBase], &v, 8); }
  uint64_t get(uint64_t addr) const {
    uint64_t v;
    std::memcpy(&v, &mem[addr - kBase], 8);
    return v;
  }

  std::vector<uint8_t> mem = std::vector<uint8_t>(kBytes);
  std::vector<uint64_t> writes;
  uint64_t charged = 0;

 private:
  static bool mapped(uint64_t addr, uint32_t len) { return addr >= kBase && addr + len <= kBase + kBytes; }
};

constexpr uint64_t kUnmapped = 0xdead'0000'0000ull;

// Each CQ's 64 KiB region: the ring from its start, the shadow area at +60 KiB.
uint64_t region(uint32_t slot) { return MemoryPort::kBase + uint64_t(slot) * 0x10000; }
uint64_t shadow_of(uint32_t slot) { return region(slot) + 0xF000; }

// A ring of `size` 32-byte slots in region `slot`, nothing else set.
CqRing ring_in(uint32_t slot, uint32_t size) {
  CqRing r;
  r.base = region(slot);
  r.shadow = shadow_of(slot);
  r.size = size;
  return r;
}

CqeFields random_fields(std::mt19937_64& rng) {
  const auto bit = [&rng] { return bool(rng() & 1); };
  CqeFields f;
  f.payload_len = uint32_t(rng());
  f.tcp_seq_rtt = uint32_t(rng());
  f.qp_ctx = rng();
  f.stag_or_src_qpn = uint32_t(rng());
  f.qp_id = uint32_t(rng()) & 0xFFFFFF;
  f.minor_err = uint16_t(rng());
  f.major_err = uint16_t(rng());
  f.wqe_idx = uint16_t(rng()) & 0x7FFF;
  f.push_dropped = bit();
  f.stag_or_ipv4 = bit();
  f.solicited = bit();
  f.error = bit();
  f.op = uint8_t(rng()) & 0x3F;
  f.sq = bit();
  f.extended = rng() % 3 == 0;
  f.imm_data = uint32_t(rng());
  f.imm_valid = f.extended && bit();
  f.ud_smac = rng() & 0xFFFF'FFFF'FFFFull;
  f.smac_valid = f.extended && bit();
  f.ud_vlan = uint16_t(rng());
  f.vlan_valid = f.extended && bit();
  return f;
}

// A random life of a few CQs, driven into `writer` with the host side played on `memory`:
// the driver's head moving (now and then past the ring, which the device must ignore), arms
// of every kind, resizes, destroys and creates, rings and shadow areas unmapped now and then,
// completions for a CQ that does not exist.
void random_life(CqWriter& writer, MemoryPort& memory, uint64_t seed, unsigned requests) {
  std::mt19937_64 rng(seed);
  constexpr uint32_t kIds[] = {0, 1, 2, 3, 700, RtlCqWriter::kMaxCqs - 1};
  struct Life {
    bool live = false;
    uint32_t size = 0, resizes = 0;
    bool wide = false;
    uint64_t shadow = 0;
  };
  Life lives[std::size(kIds)];
  const auto make_ring = [&](unsigned i, bool resize) {
    CqRing r;
    r.size = 2 + uint32_t(rng() % 9);
    r.base = rng() % 23 == 0 ? kUnmapped : region(i) + (resize ? (rng() % 4) * 0x2000 : 0);
    r.shadow = rng() % 19 == 0 ? kUnmapped : shadow_of(i);
    r.shadow_read_threshold = uint32_t(rng() % 4);
    r.check_overflow = rng() % 3 != 0;
    r.ceqe_enable = rng() & 1;
    r.cqe_64byte = !resize && rng() % 3 == 0;
    return r;
  };
  for (unsigned n = 0; n < requests; n++) {
    const unsigned i = unsigned(rng() % std::size(kIds));
    const uint32_t id = kIds[i];
    Life& life = lives[i];
    const unsigned what = unsigned(rng() % 100);
    if (!life.live || what < 2) {
      if (life.live && rng() % 2) {
        writer.destroy(id);
        life.live = false;
        continue;
      }
      const CqRing r = make_ring(i, false);
      writer.create(id, r);
      life = {true, r.size, 0, r.cqe_64byte, r.shadow};
    } else if (what < 5) {
      CqRing r = make_ring(i, true);
      r.cqe_64byte = life.wide;  // a resize keeps the create's ring kind and shadow area
      r.shadow = life.shadow;
      writer.resize(id, r);
      life.size = r.size;
      life.resizes++;
    } else if (what < 20) {
      // The driver consumed up to here; now and then a head no ring has.
      memory.put(shadow_of(i), rng() % 8 ? rng() % (life.size + 2) : rng());
    } else if (what < 30) {
      const uint64_t select = rng() % 3 ? life.resizes & 0x3FFF : rng() % 4;
      memory.put(shadow_of(i), rng() % (life.size + 1));
      memory.put(shadow_of(i) + 32, select | (rng() & 3) << 14 | (rng() & 3) << 16 | (rng() & ~0x3FFFFull));
      writer.arm(id);
    } else if (what < 32) {
      writer.write(5, random_fields(rng));  // never created
    } else if (what < 33) {
      writer.arm(5);
    } else {
      writer.write(id, random_fields(rng));
    }
  }
}

RtlCqWriter::Throttle random_throttle(std::mt19937_64& rng) {
  const auto gate = [&rng] { return rng() % 4 != 0; };
  return {gate, gate, gate, gate, gate, gate};
}

TEST(RtlCqWriter, RandomStressUnderBackpressureAgreesWithTheTlmTwinOnEveryAccessAndOutcome) {
  MemoryPort memory;
  std::mt19937_64 throttle_rng(7);
  RtlCqWriter* rtl = nullptr;
  device::LockstepCqWriter lockstep(
      memory,
      [&](CqWriterPort& port) {
        auto w = std::make_unique<RtlCqWriter>(port, RtlCqWriter::Timing::rtl, StageCycles{}, true);
        w->set_throttle(random_throttle(throttle_rng));
        rtl = w.get();
        return w;
      },
      StageCycles{}, "RTL");
  ASSERT_NO_THROW(random_life(lockstep, memory, 1, 30000));
  const auto& kinds = lockstep.correlation().kinds;
  using K = device::CqCorrelation;
  // Every kind of request came up, many times.
  for (unsigned k = 0; k < K::kKinds; k++) EXPECT_GT(kinds[k].requests, 100u) << K::name(K::Kind(k));
  EXPECT_GT(memory.writes.size(), 10000u);
  // Coverage of the block by the stress.
  const auto cov = rtl->write_coverage(::testing::TempDir() + "rtl_cq_writer_stress.dat");
  EXPECT_GT(cov.line_total, 50u);
  // What stays unhit: the invariant monitors' firing, the default state, and branches no
  // request can take (a one-beat read without RLAST, an idle cycle with nothing offered).
  EXPECT_GE(cov.line_hit * 100, cov.line_total * 90) << cov.line_hit << " of " << cov.line_total << " lines";
  // Toggles: constant AXI fields and the high bits of addresses below 4 GiB never move.
  EXPECT_GT(cov.toggle_total, 500u);
  EXPECT_GE(cov.toggle_hit * 100, cov.toggle_total * 65) << cov.toggle_hit << " of " << cov.toggle_total;
}

TEST(RtlCqWriter, LeavesTheSameHostMemoryAsTheTlmWriter) {
  MemoryPort tlm_memory, rtl_memory;
  device::TlmCqWriter tlm(tlm_memory, StageCycles{}, std::make_unique<device::TlmCqeFormatter>());
  RtlCqWriter rtl(rtl_memory, RtlCqWriter::Timing::model, StageCycles{});
  random_life(tlm, tlm_memory, 2, 5000);
  random_life(rtl, rtl_memory, 2, 5000);
  EXPECT_EQ(tlm_memory.writes, rtl_memory.writes);
  EXPECT_TRUE(tlm_memory.mem == rtl_memory.mem);
  // Timing::model charges what the TLM writer charges.
  EXPECT_EQ(tlm_memory.charged, rtl_memory.charged);
}

// The ring arithmetic at its widths' ends: a ring of 2^21 - 1 slots whose driver's head sits
// just behind the tail across the wrap, a threshold of 2^18 - 1 (every completion re-reads
// the head), in lock-step; and what the RTL cannot hold is refused, not cut to width.
TEST(RtlCqWriter, RingsAtTheFieldWidthsAgreeAndWiderOnesAreRefused) {
  MemoryPort memory;
  device::LockstepCqWriter lockstep(
      memory, [](CqWriterPort& p) { return std::make_unique<RtlCqWriter>(p, RtlCqWriter::Timing::rtl, StageCycles{}); },
      StageCycles{}, "RTL");
  constexpr uint32_t kSize = (1u << 21) - 1;
  CqRing big = ring_in(0, kSize);
  big.base = 0;  // its slots past the mapped window: the writes are refused, alike
  big.check_overflow = true;
  big.shadow_read_threshold = (1u << 18) - 1;
  lockstep.create(1, big);
  CqeFields f;
  for (const uint64_t head : {uint64_t(kSize - 1), uint64_t(kSize - 2), uint64_t(1), uint64_t(0), uint64_t(kSize)}) {
    memory.put(shadow_of(0), head);
    for (int i = 0; i < 3; i++) {
      f.extended = i == 1;
      ASSERT_NO_THROW(lockstep.write(1, f)) << "head " << head;
    }
  }
  // A resize of a CQ that does not exist changes nothing on either side.
  ASSERT_NO_THROW(lockstep.resize(2, ring_in(1, 8)));
  EXPECT_EQ(lockstep.write(2, f).status, CqWriteOutcome::no_cq);
  RtlCqWriter& rtl = static_cast<RtlCqWriter&>(lockstep.dut());
  CqRing wide = ring_in(0, 1u << 21);
  EXPECT_THROW(rtl.create(3, wide), std::out_of_range);
  wide.size = 1;
  EXPECT_THROW(rtl.create(3, wide), std::out_of_range);
  wide.size = 8;
  wide.shadow_read_threshold = 1u << 18;
  EXPECT_THROW(rtl.resize(1, wide), std::out_of_range);
  EXPECT_THROW(rtl.write(RtlCqWriter::kMaxCqs, f), std::out_of_range);
  EXPECT_THROW(rtl.flip_armed_bit(RtlCqWriter::kMaxCqs), std::out_of_range);
}

TEST(RtlCqWriter, ALockStepDisagreementStopsWithBothViews) {
  MemoryPort memory;
  // A writer under test whose CQEs land one slot off.
  struct OffByOne final : CqWriter {
    explicit OffByOne(CqWriterPort& p) : port(p), inner(p, StageCycles{}, std::make_unique<device::TlmCqeFormatter>()) {}
    void create(uint32_t cq, const CqRing& r) override {
      CqRing shifted = r;
      shifted.base += 32;
      inner.create(cq, shifted);
    }
    void resize(uint32_t cq, const CqRing& r) override { inner.resize(cq, r); }
    void destroy(uint32_t cq) override { inner.destroy(cq); }
    CqWriteOutcome write(uint32_t cq, const CqeFields& f) override { return inner.write(cq, f); }
    CqArmOutcome arm(uint32_t cq) override { return inner.arm(cq); }
    uint64_t last_cycles() const override { return inner.last_cycles(); }
    CqWriterPort& port;
    device::TlmCqWriter inner;
  };
  device::LockstepCqWriter lockstep(
      memory, [](CqWriterPort& p) { return std::make_unique<OffByOne>(p); }, StageCycles{}, "DUT");
  lockstep.create(1, ring_in(1, 8));
  CqeFields f;
  f.qp_id = 9;
  f.wqe_idx = 4;
  try {
    lockstep.write(1, f);
    FAIL() << "no disagreement";
  } catch (const device::CqLockstepError& e) {
    const std::string msg = e.what();
    EXPECT_NE(msg.find("request 2 (completion on CQ 1 for QP 9 wqe_idx 4)"), std::string::npos) << msg;
    EXPECT_NE(msg.find("DUT: access 1: write 32 bytes at 0x110020"), std::string::npos) << msg;
    EXPECT_NE(msg.find("TLM: access 1: write 32 bytes at 0x110000"), std::string::npos) << msg;
  }
}

// A 4-slot 32-byte ring with its tail on the last slot: the extended half goes to slot 0 with
// the next pass's polarity, before the main half on slot 3.
TEST(RtlCqWriter, AnExtendedCqeAcrossTheWrapAsAWaveformInSimulatedTime) {
  const std::string path = ::testing::TempDir() + "rtl_cq_writer_wrap.vcd";
  MemoryPort memory;
  {
    RtlCqWriter rtl(memory, RtlCqWriter::Timing::rtl, StageCycles{});
    rtl.enable_vcd(path, 2000);
    rtl.create(3, ring_in(0, 4));
    CqeFields f;
    for (int i = 0; i < 3; i++) ASSERT_EQ(rtl.write(3, f).status, CqWriteOutcome::written);
    memory.writes.clear();
    f.extended = f.imm_valid = true;
    f.imm_data = 0xfeed;
    const CqWriteOutcome out = rtl.write(3, f);
    EXPECT_EQ(out.status, CqWriteOutcome::written);
    EXPECT_EQ(out.slot, 3u);
    EXPECT_TRUE(out.wrapped);
    EXPECT_EQ(memory.writes, (std::vector<uint64_t>{region(0), region(0) + 3 * 32})) << "extended half first";
    EXPECT_EQ(memory.get(region(0)) & 0xFFFFFFFF, 0xfeedu);
    EXPECT_EQ(memory.get(region(0) + 24) >> 63, 0u) << "slot 0 is in the second pass";
    EXPECT_EQ(memory.get(region(0) + 3 * 32 + 24) >> 63, 1u) << "slot 3 is in the first";
  }
  std::ifstream vcd(path);
  const std::string text((std::istreambuf_iterator<char>(vcd)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("$timescale 1ps $end"), std::string::npos);
  for (const char* signal : {" m_axi_awaddr ", " m_axi_wdata ", " rsp_wrapped ", " polarity "})
    EXPECT_NE(text.find(signal), std::string::npos) << signal;
  // The engine's clock (2 ns a cycle charged as the RTL runs) is the waveform's: the last
  // edge's second half starts half a period before the engine's time.
  const size_t last = text.rfind("\n#");
  EXPECT_EQ(text.substr(last + 2, text.find('\n', last + 1) - last - 2), std::to_string(memory.charged * 2000 - 1000));
  std::remove(path.c_str());
}

TEST(RtlCqWriter, AnEventWithNoArmFiresTheMonitor) {
  MemoryPort memory;
  RtlCqWriter rtl(memory, RtlCqWriter::Timing::rtl, StageCycles{});
  rtl.create(2, ring_in(0, 8));
  CqeFields f;
  EXPECT_FALSE(rtl.write(2, f).event);
  rtl.flip_armed_bit(2);
  try {
    rtl.write(2, f);
    FAIL() << "the monitor did not fire";
  } catch (const RtlAssertionError& e) {
    EXPECT_NE(std::string(e.what()).find("an event was raised with no arm taken since the last"), std::string::npos)
        << e.what();
  }
  // The request was cut short mid-handshake: the writer refuses to go on.
  EXPECT_THROW(rtl.write(2, f), std::logic_error);
}

TEST(RtlCqWriter, ArmsFollowTheSequenceNumberAndTheHead) {
  MemoryPort memory;
  RtlCqWriter rtl(memory, RtlCqWriter::Timing::rtl, StageCycles{});
  CqRing r = ring_in(0, 8);
  r.ceqe_enable = true;
  rtl.create(1, r);
  constexpr uint64_t kNext = 1ull << 14, kSeq1 = 1ull << 16;
  memory.put(shadow_of(0) + 32, kNext | kSeq1);
  CqArmOutcome arm = rtl.arm(1);
  EXPECT_EQ(arm.status, CqArmOutcome::armed);
  EXPECT_TRUE(arm.arms);
  EXPECT_FALSE(arm.event) << "nothing unconsumed";
  EXPECT_EQ(rtl.arm(1).status, CqArmOutcome::stale) << "the same sequence number again";
  CqeFields f;
  CqWriteOutcome out = rtl.write(1, f);
  EXPECT_TRUE(out.event && out.ceqe);
  EXPECT_FALSE(rtl.write(1, f).event) << "one event per arm";
  memory.put(shadow_of(0) + 32, kNext | 2 * kSeq1);  // head 0, tail 2: fires at once
  arm = rtl.arm(1);
  EXPECT_TRUE(arm.event && arm.ceqe);
  EXPECT_EQ(rtl.arm(9).status, CqArmOutcome::no_cq);
  rtl.create(9, {0, kUnmapped, 4});
  EXPECT_EQ(rtl.arm(9).status, CqArmOutcome::failed) << "unreadable shadow area";
  EXPECT_THROW(rtl.create(RtlCqWriter::kMaxCqs, r), std::out_of_range);
}

TEST(RtlCqWriter, RtlTimingChargesTheClockCyclesItRan) {
  MemoryPort memory;
  RtlCqWriter rtl(memory, RtlCqWriter::Timing::rtl, StageCycles{});
  EXPECT_EQ(rtl.cycles(), 0u) << "reset is no request";
  rtl.create(0, ring_in(0, 8));
  CqeFields f;
  rtl.write(0, f);
  f.extended = true;
  rtl.write(0, f);
  EXPECT_EQ(memory.charged, rtl.cycles());
  EXPECT_EQ(rtl.last_cycles(), 17u) << "an extended CQE: the RTL's cycles, as the stage costs say";
  // The default build of the block counts lines only.
  const auto cov = rtl.write_coverage(::testing::TempDir() + "rtl_cq_writer_lines.dat");
  EXPECT_GT(cov.line_hit, 20u);
  EXPECT_EQ(cov.toggle_total, 0u);
  EXPECT_THROW(rtl.write_coverage("/nonexistent/dir/x.dat"), std::runtime_error);
}

}  // namespace
}  // namespace irdma_sim::rtl
