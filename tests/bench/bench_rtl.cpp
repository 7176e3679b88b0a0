// Throughput of the Verilated blocks, in simulated clock cycles per wall-clock second: the
// CQE formatter streamed back to back and one request per call as the device model uses it;
// the CQ writer as the CQ engine drives it, alone and in lock-step with its TLM twin, over
// a host memory that answers at once (the RTL's own cost, no simulated link).
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include <cstring>

#include "model/device/cq_lockstep.h"
#include "model/device/cq_writer.h"
#include "model/device/cqe_format.h"
#include "rtl_bridge/rtl_cq_writer.h"
#include "rtl_bridge/rtl_cqe_formatter.h"

namespace {

using irdma_sim::device::CqeFields;
using irdma_sim::device::CqeHalf;
using irdma_sim::rtl::RtlCqeFormatter;

constexpr size_t kRequests = 4096;

struct Workload {
  std::vector<CqeFields> fields;
  std::unique_ptr<bool[]> polarity{new bool[kRequests]};
  std::unique_ptr<bool[]> half{new bool[kRequests]};
  std::vector<CqeHalf> out{kRequests};

  Workload() : fields(kRequests) {
    std::mt19937_64 rng(42);
    for (size_t i = 0; i < kRequests; ++i) {
      CqeFields& f = fields[i];
      f.payload_len = uint32_t(rng());
      f.qp_ctx = rng();
      f.qp_id = uint32_t(rng()) & 0xFFFFFF;
      f.wqe_idx = uint16_t(rng()) & 0x7FFF;
      f.op = uint8_t(rng()) & 0x3F;
      f.sq = rng() & 1;
      f.extended = rng() & 1;
      f.imm_data = uint32_t(rng());
      f.ud_smac = rng() & 0xFFFF'FFFF'FFFFull;
      polarity[i] = rng() & 1;
      half[i] = f.extended && (rng() & 1);
    }
  }
};

void report(benchmark::State& state, uint64_t cycles) {
  state.counters["cycles_per_second"] =
      benchmark::Counter(double(cycles), benchmark::Counter::kIsRate);
  state.counters["cqes_per_second"] =
      benchmark::Counter(double(state.iterations() * kRequests), benchmark::Counter::kIsRate);
}

void BM_RtlCqeFormatterBatch(benchmark::State& state) {
  Workload w;
  RtlCqeFormatter rtl;
  for (auto _ : state) {
    rtl.format_batch(w.fields.data(), w.polarity.get(), w.half.get(), kRequests, w.out.data());
    benchmark::DoNotOptimize(w.out.data());
  }
  report(state, rtl.cycles());
}
BENCHMARK(BM_RtlCqeFormatterBatch);

void BM_RtlCqeFormatterSingle(benchmark::State& state) {
  Workload w;
  RtlCqeFormatter rtl;
  for (auto _ : state) {
    for (size_t i = 0; i < kRequests; ++i) {
      w.out[i] = w.half[i] ? rtl.format_ext(w.fields[i], w.polarity[i])
                           : rtl.format_main(w.fields[i], w.polarity[i]);
    }
    benchmark::DoNotOptimize(w.out.data());
  }
  report(state, rtl.cycles());
}
BENCHMARK(BM_RtlCqeFormatterSingle);

using irdma_sim::rtl::RtlCqWriter;

// Host memory of one CQ: a 4096-slot ring and its shadow area, the driver keeping up.
struct FlatMemory final : irdma_sim::device::CqWriterPort {
  static constexpr uint64_t kRing = 0x10000, kShadow = 0x1000, kSlots = 4096;
  std::vector<uint8_t> mem = std::vector<uint8_t>(kRing + kSlots * 64);
  bool read(uint64_t addr, void* dst, uint32_t len) override {
    std::memcpy(dst, &mem[addr], len);
    return true;
  }
  bool write(uint64_t addr, const void* src, uint32_t len) override {
    std::memcpy(&mem[addr], src, len);
    return true;
  }
  void cycles(uint32_t) override {}
  uint64_t now_ps() const override { return 0; }
};

// Completions (one in two extended) with an arm every 16, on a CHKOVERFLOW CQ whose head
// the driver moves up to the last CQE every 64: no completion is dropped.
template <typename Writer>
void drive_cq_writer(benchmark::State& state, Writer& writer, FlatMemory& memory, const RtlCqWriter& rtl) {
  irdma_sim::device::CqRing ring;
  ring.base = FlatMemory::kRing;
  ring.shadow = FlatMemory::kShadow;
  ring.size = FlatMemory::kSlots;
  ring.check_overflow = true;
  ring.shadow_read_threshold = 64;
  ring.ceqe_enable = true;
  writer.create(1, ring);
  Workload w;
  uint64_t n = 0, arm_seq = 0, last_slot = 0, dropped = 0;
  const uint64_t start = rtl.cycles();
  for (auto _ : state) {
    for (size_t i = 0; i < kRequests; ++i, ++n) {
      if (n % 64 == 0) std::memcpy(&memory.mem[FlatMemory::kShadow], &last_slot, 8);
      if (n % 16 == 0) {
        const uint64_t arm = 1ull << 14 | (++arm_seq & 3) << 16;
        std::memcpy(&memory.mem[FlatMemory::kShadow + 32], &arm, 8);
        writer.arm(1);
      }
      const auto out = writer.write(1, w.fields[i]);
      if (out.status == irdma_sim::device::CqWriteOutcome::written)
        last_slot = out.slot;
      else
        dropped++;
    }
  }
  if (dropped) state.SkipWithError("completions were dropped: the benchmark's driver fell behind");
  state.counters["cycles_per_second"] =
      benchmark::Counter(double(rtl.cycles() - start), benchmark::Counter::kIsRate);
  state.counters["requests_per_second"] =
      benchmark::Counter(double(state.iterations() * kRequests * 17 / 16), benchmark::Counter::kIsRate);
}

void BM_RtlCqWriter(benchmark::State& state) {
  FlatMemory memory;
  RtlCqWriter rtl(memory, RtlCqWriter::Timing::rtl, {});
  drive_cq_writer(state, rtl, memory, rtl);
}
BENCHMARK(BM_RtlCqWriter);

void BM_RtlCqWriterLockstep(benchmark::State& state) {
  FlatMemory memory;
  RtlCqWriter* rtl = nullptr;
  irdma_sim::device::LockstepCqWriter lockstep(
      memory,
      [&](irdma_sim::device::CqWriterPort& port) {
        auto w = std::make_unique<RtlCqWriter>(port, RtlCqWriter::Timing::rtl, irdma_sim::device::StageCycles{});
        rtl = w.get();
        return w;
      },
      {}, "RTL");
  drive_cq_writer(state, lockstep, memory, *rtl);
}
BENCHMARK(BM_RtlCqWriterLockstep);

}  // namespace
