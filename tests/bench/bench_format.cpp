// The transaction-level CQE formatter alone: the device model's per-CQE packing cost.
#include <benchmark/benchmark.h>

#include <vector>

#include "model/device/cqe_format.h"

namespace {

using irdma_sim::device::CqeFields;
using irdma_sim::device::TlmCqeFormatter;

void BM_TlmFormatter(benchmark::State& state) {
  TlmCqeFormatter fmt;
  std::vector<CqeFields> fields(1024);
  for (size_t i = 0; i < fields.size(); i++) {
    fields[i].qp_id = uint32_t(i);
    fields[i].wqe_idx = uint16_t(i);
    fields[i].payload_len = uint32_t(i * 7);
    fields[i].op = 3;
    fields[i].extended = i % 4 == 0;
  }
  uint64_t sink = 0;
  size_t i = 0;
  for (auto _ : state) {
    const CqeFields& f = fields[i++ & 1023];
    sink += fmt.format_main(f, i & 1)[3];
    if (f.extended) sink += fmt.format_ext(f, i & 1)[3];
  }
  benchmark::DoNotOptimize(sink);
  state.counters["cqes_per_second"] = benchmark::Counter(double(state.iterations()), benchmark::Counter::kIsRate);
}
BENCHMARK(BM_TlmFormatter);

}  // namespace
