// Driver poll + process_cqe on a pre-filled ring (the 100 M CQE/s target): ib_poll_cq in
// batches of 16, as ib-core's pollers call it, through irdma_poll_cq and its CQ lock (an
// OS-thread lock, uncontended), over the 8194-slot ring of a 4096-entry CQ that mixes SQ
// and RQ completions; the second variant adds extended CQEs, the third cycles through the
// SQ opcodes and the receive kinds (immediate, invalidate, RDMA WRITE with immediate) with
// extended CQEs among them. BM_PollRingUnlocked is the first without the verb: the ring
// reader alone, what the lock and the call cost is measured against. The ring stays in L2,
// as the ring of a CQ polled as fast as the device fills it does.
#include <benchmark/benchmark.h>

#include <cstring>
#include <vector>

#include "driver/irdma/irdma_device.h"
#include "driver/irdma/poll.h"
#include "model/device/cqe_format.h"
#include "tests/cpp/driver/irdma/host_platform.h"

namespace {

using namespace irdma;
using irdma_sim::device::CqeFields;
using irdma_sim::device::TlmCqeFormatter;

constexpr uint32_t kRing = 8194;  // the ring of a 4096-entry CQ on GEN_2: (4096 + 1) x 2
constexpr uint32_t kQueue = 1 << 13;

enum class Mix { sends, extended, opcodes };

constexpr uint8_t kSqOps[] = {IRDMA_OP_TYPE_SEND,          IRDMA_OP_TYPE_RDMA_WRITE,
                              IRDMA_OP_TYPE_RDMA_READ,     IRDMA_OP_TYPE_SEND_SOL_INV,
                              IRDMA_OP_TYPE_INV_STAG,      IRDMA_OP_TYPE_RDMA_WRITE_SOL,
                              IRDMA_OP_TYPE_FAST_REG_NSMR, IRDMA_OP_TYPE_RDMA_READ_INV_STAG};
// RoCE receive BTH opcodes: SEND, SEND with immediate, SEND with invalidate, RDMA WRITE
// with immediate.
constexpr uint8_t kRqOps[] = {0x04, 0x05, 0x0c, 0x0b};

// A CQ as irdma_create_cq leaves it, on a device nothing was probed on: poll_cq needs no
// more.
struct PrefilledRing {
  irdma_sim::testing::HeapDma dma;
  irdma_sim::testing::NoDevice nodev;
  backends::OsExec exec;
  hal::Platform hw{nodev, nodev, dma, nodev, exec};
  irdma_device dev{hw};
  std::vector<uint64_t> mem = std::vector<uint64_t>(size_t(kRing) * 4);
  uint64_t shadow[8] = {};
  irdma_cq ibcq;
  irdma_cq_uk& cq = ibcq.sc_cq;
  irdma_qp_uk qp;
  irdma_qp_uk* table[8] = {};
  Mix mix;
  uint32_t per_pass = 0;  // completions one pass over the ring holds
  uint32_t sq_count = 0, rq_count = 0;

  explicit PrefilledRing(Mix m) : mix(m) {
    ibcq.device = &dev;
    ibcq.lock = exec.make_lock();
    irdma_uk_cq_init(&cq, mem.data(), shadow, 3, kRing, false);
    irdma_uk_qp_init(&qp, 5, kQueue - 300, kQueue, 1, 1);
    qp.compl_ctx = 0x100000005ull;
    table[5] = &qp;
    cq.qp_table = {table, 8};
    for (uint32_t i = 0; i < qp.sq_ring.size; i++)
      qp.sq_wrtrk_array[i] = {i, 64, 1, mix == Mix::opcodes ? kSqOps[i % 8] : uint8_t(IRDMA_OP_TYPE_SEND)};
    fill();
  }

  // Writes one pass of CQEs, alternating SQ and RQ completions.
  void fill() {
    const bool polarity = true;
    TlmCqeFormatter fmt;
    uint32_t slot = 0, sq = 0, rq = 0;
    per_pass = 0;
    while (slot < kRing) {
      CqeFields f;
      f.qp_ctx = qp.compl_ctx;
      f.qp_id = 5;
      const bool is_sq = per_pass % 2 == 0;
      f.sq = is_sq;
      f.wqe_idx = uint16_t(is_sq ? sq++ % qp.sq_ring.size : rq++ % qp.rq_ring.size);
      f.payload_len = 64;
      const bool fits = slot + 1 < kRing;  // no extended CQE across the end of the pass
      if (mix == Mix::opcodes) {
        f.op = is_sq ? kSqOps[f.wqe_idx % 8] : kRqOps[rq % 4];
        f.imm_valid = f.extended = !is_sq && (f.op == 0x05 || f.op == 0x0b) && fits;
        f.stag_or_ipv4 = !is_sq && f.op == 0x0c;  // the invalidated STag in qword2
        f.stag_or_src_qpn = f.stag_or_ipv4 ? 0x1234500 + rq : 0;
      } else {
        f.op = is_sq ? IRDMA_OP_TYPE_SEND : 0x04;
        // Every other receive is extended.
        f.imm_valid = f.extended = mix == Mix::extended && !is_sq && per_pass % 4 == 1 && fits;
      }
      f.imm_data = rq;
      const auto main = fmt.format_main(f, polarity);
      std::memcpy(&mem[size_t(slot) * 4], main.data(), 32);
      if (f.extended) {
        const auto ext = fmt.format_ext(f, polarity);
        std::memcpy(&mem[size_t(slot + 1) * 4], ext.data(), 32);
        slot++;
      }
      slot++;
      per_pass++;
    }
    sq_count = sq;
    rq_count = rq;
    rearm();
  }

  // Starts a pass: the consumer at the ring's start, every WQE the pass completes posted.
  void rearm() {
    cq.cq_ring.head = 0;
    cq.polarity = 1;
    qp.sq_ring.tail = 0;
    qp.sq_ring.head = sq_count;
    qp.rq_ring.tail = 0;
    qp.rq_ring.head = rq_count;
  }
};

void poll_ring(benchmark::State& state, Mix mix, bool verb = true) {
  PrefilledRing r(mix);
  ibcore::ib_wc wc[16];
  uint64_t polled = 0, this_pass = 0;
  for (auto _ : state) {
    const int n = verb ? ibcore::ib_poll_cq(&r.ibcq, 16, wc) : irdma_poll_ring(&r.cq, 16, wc);
    if (n < 0) state.SkipWithError("poll failed");
    polled += uint32_t(n);
    this_pass += uint32_t(n);
    if (n < 16 && this_pass != r.per_pass) {
      state.SkipWithError("a pass did not yield every completion it holds");
      break;
    }
    if (n < 16) this_pass = 0;
    // The pass is consumed: start over on the same entries, as if the device had written
    // them again (O(1), so nothing needs to be paused).
    if (n < 16) r.rearm();
    benchmark::DoNotOptimize(wc);
  }
  state.counters["cqes_per_second"] = benchmark::Counter(double(polled), benchmark::Counter::kIsRate);
}

void BM_PollProcess(benchmark::State& state) { poll_ring(state, Mix::sends); }
void BM_PollProcessWithExtendedCqes(benchmark::State& state) { poll_ring(state, Mix::extended); }
void BM_PollProcessMixedOpcodes(benchmark::State& state) { poll_ring(state, Mix::opcodes); }
void BM_PollRingUnlocked(benchmark::State& state) { poll_ring(state, Mix::sends, false); }
BENCHMARK(BM_PollProcess);
BENCHMARK(BM_PollProcessWithExtendedCqes);
BENCHMARK(BM_PollProcessMixedOpcodes);
BENCHMARK(BM_PollRingUnlocked);

}  // namespace
