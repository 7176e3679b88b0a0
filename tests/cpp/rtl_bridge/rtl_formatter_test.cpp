// The Verilated CQE formatter against the transaction-level one (random equivalence, one at
// a time, streamed and under backpressure) and against hand-packed golden vectors.
#include <gtest/gtest.h>

#include <cstdint>
#include <cstdio>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model/device/cqe_format.h"
#include "rtl_bridge/rtl_cqe_formatter.h"

namespace irdma_sim::rtl {
namespace {

using device::CqeFields;
using device::CqeHalf;
using device::TlmCqeFormatter;

constexpr size_t kRandomCount = 100000;

struct Request {
  CqeFields fields;
  bool polarity = false;
  bool half = false;  // true = extended half
};

// Every field random over the full width of its C++ type, so bits beyond a hardware field
// are exercised too (both formatters must drop them).
std::vector<Request> random_requests(size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  const auto bit = [&rng] { return bool(rng() & 1); };
  std::vector<Request> requests(n);
  for (Request& r : requests) {
    CqeFields& f = r.fields;
    f.payload_len = uint32_t(rng());
    f.tcp_seq_rtt = uint32_t(rng());
    f.qp_ctx = rng();
    f.stag_or_src_qpn = uint32_t(rng());
    f.qp_id = uint32_t(rng());
    f.minor_err = uint16_t(rng());
    f.major_err = uint16_t(rng());
    f.wqe_idx = uint16_t(rng());
    f.push_dropped = bit();
    f.stag_or_ipv4 = bit();
    f.solicited = bit();
    f.error = bit();
    f.op = uint8_t(rng());
    f.sq = bit();
    f.extended = bit();
    f.imm_data = uint32_t(rng());
    f.ud_smac = rng();
    f.ud_vlan = uint16_t(rng());
    f.vlan_valid = bit();
    f.smac_valid = bit();
    f.imm_valid = bit();
    r.polarity = bit();
    r.half = bit();
  }
  return requests;
}

std::string hex(uint64_t v) {
  char buf[24];
  std::snprintf(buf, sizeof buf, "0x%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string describe(const Request& r) {
  const CqeFields& f = r.fields;
  std::ostringstream s;
  s << std::hex << "payload_len=0x" << f.payload_len << " tcp_seq_rtt=0x" << f.tcp_seq_rtt
    << " qp_ctx=0x" << f.qp_ctx << " stag_or_src_qpn=0x" << f.stag_or_src_qpn << " qp_id=0x"
    << f.qp_id << " minor_err=0x" << f.minor_err << " major_err=0x" << f.major_err
    << " wqe_idx=0x" << f.wqe_idx << " push_dropped=" << f.push_dropped << " stag_or_ipv4="
    << f.stag_or_ipv4 << " solicited=" << f.solicited << " error=" << f.error << " op=0x"
    << unsigned(f.op) << " sq=" << f.sq << " extended=" << f.extended << " imm_data=0x"
    << f.imm_data << " ud_smac=0x" << f.ud_smac << " ud_vlan=0x" << f.ud_vlan
    << " vlan_valid=" << f.vlan_valid << " smac_valid=" << f.smac_valid
    << " imm_valid=" << f.imm_valid << " polarity=" << r.polarity
    << " half=" << (r.half ? "ext" : "main");
  return s.str();
}

std::string describe(const CqeHalf& q) {
  return hex(q[0]) + " " + hex(q[1]) + " " + hex(q[2]) + " " + hex(q[3]);
}

CqeHalf reference(const Request& r) {
  TlmCqeFormatter tlm;
  return r.half ? tlm.format_ext(r.fields, r.polarity) : tlm.format_main(r.fields, r.polarity);
}

// Fails with the first request whose RTL result differs from the TLM formatter's.
void expect_matches_tlm(const std::vector<Request>& requests, const std::vector<CqeHalf>& rtl) {
  ASSERT_EQ(requests.size(), rtl.size());
  for (size_t i = 0; i < requests.size(); ++i) {
    const CqeHalf expected = reference(requests[i]);
    if (rtl[i] != expected) {
      FAIL() << "request " << i << ": " << describe(requests[i]) << "\n  rtl: "
             << describe(rtl[i]) << "\n  tlm: " << describe(expected);
    }
  }
}

// format_batch / format_throttled take the fields, polarities and halves as parallel arrays.
struct Columns {
  std::vector<CqeFields> fields;
  std::unique_ptr<bool[]> polarity;
  std::unique_ptr<bool[]> half;

  explicit Columns(const std::vector<Request>& requests)
      : polarity(new bool[requests.size()]), half(new bool[requests.size()]) {
    for (size_t i = 0; i < requests.size(); ++i) {
      fields.push_back(requests[i].fields);
      polarity[i] = requests[i].polarity;
      half[i] = requests[i].half;
    }
  }
};

TEST(RtlCqeFormatter, OneAtATimeMatchesTlm) {
  const auto requests = random_requests(kRandomCount, 1);
  RtlCqeFormatter rtl;
  std::vector<CqeHalf> results;
  results.reserve(requests.size());
  for (const Request& r : requests) {
    results.push_back(r.half ? rtl.format_ext(r.fields, r.polarity)
                             : rtl.format_main(r.fields, r.polarity));
  }
  expect_matches_tlm(requests, results);
  EXPECT_EQ(rtl.last_latency_cycles(), 2u);  // accept edge + output handshake edge
  EXPECT_EQ(rtl.cycles(), 2 * kRandomCount);
}

TEST(RtlCqeFormatter, BatchMatchesTlmAtOnePerCycle) {
  const auto requests = random_requests(kRandomCount, 2);
  const Columns in(requests);
  RtlCqeFormatter rtl;
  std::vector<CqeHalf> results(requests.size());
  rtl.format_batch(in.fields.data(), in.polarity.get(), in.half.get(), requests.size(),
                   results.data());
  expect_matches_tlm(requests, results);
  // Full throughput: one request per cycle plus the one-cycle pipeline latency.
  EXPECT_EQ(rtl.last_latency_cycles(), kRandomCount + 1);
}

TEST(RtlCqeFormatter, BackpressureLosesAndReordersNothing) {
  const auto requests = random_requests(20000, 3);
  const Columns in(requests);
  std::mt19937_64 rng(4);
  // The consumer stalls in bursts of 1..16 cycles; the producer pauses at random.
  unsigned stall_left = 0;
  RtlCqeFormatter::Throttle throttle;
  throttle.offer_input = [&rng] { return rng() % 4 != 0; };
  throttle.accept_output = [&rng, &stall_left] {
    if (stall_left == 0 && rng() % 3 == 0) stall_left = 1 + rng() % 16;
    if (stall_left == 0) return true;
    --stall_left;
    return false;
  };
  RtlCqeFormatter rtl;
  std::vector<CqeHalf> results(requests.size());
  rtl.format_throttled(in.fields.data(), in.polarity.get(), in.half.get(), requests.size(),
                       results.data(), throttle);
  expect_matches_tlm(requests, results);
  EXPECT_GT(rtl.last_latency_cycles(), 2 * requests.size());  // the stalls really happened

  // The pipeline is idle and reusable afterwards.
  const Request& last = requests.back();
  EXPECT_EQ(rtl.format_main(last.fields, last.polarity),
            TlmCqeFormatter().format_main(last.fields, last.polarity));
  EXPECT_EQ(rtl.last_latency_cycles(), 2u);
}

TEST(RtlCqeFormatter, VcdTraceRecordsThePortsInSimulatedTime) {
  const std::string path = ::testing::TempDir() + "rtl_cqe_formatter_test.vcd";
  const Request r = random_requests(1, 5).front();
  {
    RtlCqeFormatter rtl;
    rtl.enable_vcd(path, 2000);  // a 500 MHz clock
    rtl.at_time_ps(1'000'000);
    EXPECT_EQ(rtl.format_main(r.fields, r.polarity),
              TlmCqeFormatter().format_main(r.fields, r.polarity));
    rtl.at_time_ps(5'000);  // time never runs backwards in the waveform
    EXPECT_EQ(rtl.format_ext(r.fields, r.polarity), TlmCqeFormatter().format_ext(r.fields, r.polarity));
  }
  std::ifstream vcd(path);
  const std::string text((std::istreambuf_iterator<char>(vcd)), std::istreambuf_iterator<char>());
  EXPECT_NE(text.find("$enddefinitions"), std::string::npos);
  EXPECT_NE(text.find(" out_valid "), std::string::npos);
  EXPECT_NE(text.find("1ps"), std::string::npos) << "timescale";
  // Two cycles of 2000 ps from the engine's time, half a period per dump, then the
  // second request straight after the first.
  for (const char* t : {"\n#1000000\n", "\n#1003000\n", "\n#1004000\n", "\n#1007000\n"})
    EXPECT_NE(text.find(t), std::string::npos) << t;
  EXPECT_EQ(text.find("\n#5000\n"), std::string::npos);
  std::remove(path.c_str());
}

TEST(RtlCqeFormatter, VcdToAnUnwritablePathIsAnError) {
  RtlCqeFormatter rtl;
  EXPECT_THROW(rtl.enable_vcd("/nonexistent/dir/x.vcd", 2000), std::runtime_error);
}

// Golden vectors packed by hand from irdma spec C.3/C.4, checked on both formatters.
struct Golden {
  const char* name;
  Request request;
  CqeHalf expected;
};

std::vector<Golden> golden_vectors() {
  std::vector<Golden> v;

  // SEND completion on an SQ: op 0x03 -> 61:56, sq -> 62, polarity -> 63, wqe_idx 5 -> 46:32.
  Request send;
  send.fields.qp_ctx = 0xffff888102345600ull;
  send.fields.qp_id = 0x123456;
  send.fields.wqe_idx = 5;
  send.fields.op = 0x03;
  send.fields.sq = true;
  send.polarity = true;
  v.push_back({"send_sq", send,
               {0, 0xffff888102345600ull, 0x0012345600000000ull, 0xc300000500000000ull}});

  // RQ error completion with every qword3 flag set: 63:56 = 0|0|111110 = 0x3e,
  // 55:48 = error,solicited,stag,srq=0,push,ext,0,0 = 0xec, 47:32 = 0x7fff,
  // 31:16 major 0x0003, 15:0 minor 0x8001.
  Request rq_error;
  rq_error.fields.payload_len = 0x1000;
  rq_error.fields.tcp_seq_rtt = 0xdeadbeef;
  rq_error.fields.qp_ctx = 0x0123456789abcdefull;
  rq_error.fields.stag_or_src_qpn = 0x11223344;
  rq_error.fields.qp_id = 0xabcdef;
  rq_error.fields.minor_err = 0x8001;
  rq_error.fields.major_err = 0x0003;
  rq_error.fields.wqe_idx = 0x7fff;
  rq_error.fields.push_dropped = true;
  rq_error.fields.stag_or_ipv4 = true;
  rq_error.fields.solicited = true;
  rq_error.fields.error = true;
  rq_error.fields.op = 0x3e;
  rq_error.fields.extended = true;
  v.push_back({"rq_error_all_flags", rq_error,
               {0xdeadbeef00001000ull, 0x0123456789abcdefull, 0x00abcdef11223344ull,
                0x3eec7fff00038001ull}});

  // Out-of-range bits are dropped: qp_id 31:24, wqe_idx 15, op 7:6 never reach the CQE.
  Request wide = send;
  wide.fields.qp_id = 0xff123456;
  wide.fields.wqe_idx = 0x8005;
  wide.fields.op = 0xc3;
  v.push_back({"send_sq_wide_fields", wide,
               {0, 0xffff888102345600ull, 0x0012345600000000ull, 0xc300000500000000ull}});

  // UD ext half: imm -> qword4 31:0, SMAC 0a:0b:0c:0d:0e:0f -> qword6 47:0 (byte 0 high),
  // VLAN TCI 0xe00a (PCP 7, VID 10) -> qword6 63:48, valid bits 60..63 in qword7.
  Request ud_ext;
  ud_ext.fields.extended = true;
  ud_ext.fields.imm_data = 0x12345678;
  ud_ext.fields.ud_smac = 0x0a0b0c0d0e0full;
  ud_ext.fields.ud_vlan = 0xe00a;
  ud_ext.fields.vlan_valid = true;
  ud_ext.fields.smac_valid = true;
  ud_ext.fields.imm_valid = true;
  ud_ext.polarity = true;
  ud_ext.half = true;
  v.push_back({"ud_ext_all_valid", ud_ext,
               {0x0000000012345678ull, 0, 0xe00a0a0b0c0d0e0full, 0xf000000000000000ull}});

  // Ext half in the next pass (polarity 0), SMAC only; SMAC bits 63:48 are dropped.
  Request smac_only;
  smac_only.fields.extended = true;
  smac_only.fields.ud_smac = 0xffff0a0b0c0d0e0full;
  smac_only.fields.smac_valid = true;
  smac_only.half = true;
  v.push_back({"ext_smac_only_pass0", smac_only,
               {0, 0, 0x00000a0b0c0d0e0full, 0x2000000000000000ull}});
  return v;
}

TEST(RtlCqeFormatter, GoldenVectors) {
  RtlCqeFormatter rtl;
  TlmCqeFormatter tlm;
  for (const Golden& g : golden_vectors()) {
    const Request& r = g.request;
    for (device::CqeFormatter* formatter : {static_cast<device::CqeFormatter*>(&rtl),
                                            static_cast<device::CqeFormatter*>(&tlm)}) {
      const CqeHalf got = r.half ? formatter->format_ext(r.fields, r.polarity)
                                 : formatter->format_main(r.fields, r.polarity);
      EXPECT_EQ(got, g.expected) << g.name << (formatter == &rtl ? " (rtl)" : " (tlm)")
                                 << "\n  got:      " << describe(got)
                                 << "\n  expected: " << describe(g.expected);
    }
  }
}

}  // namespace
}  // namespace irdma_sim::rtl
