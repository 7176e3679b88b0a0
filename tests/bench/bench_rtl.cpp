// Throughput of the Verilated CQE formatter, in simulated clock cycles and CQE halves per
// wall-clock second: streamed back to back, and one request per call as the device model
// uses it.
#include <benchmark/benchmark.h>

#include <cstdint>
#include <memory>
#include <random>
#include <vector>

#include "model/device/cqe_format.h"
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

}  // namespace
