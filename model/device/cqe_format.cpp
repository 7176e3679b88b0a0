#include "model/device/cqe_format.h"

namespace irdma_sim::device {
namespace {

constexpr uint64_t field(uint64_t value, unsigned lsb, unsigned width) {
  const uint64_t mask = width == 64 ? ~0ull : ((1ull << width) - 1);
  return (value & mask) << lsb;
}

constexpr uint64_t bit(bool value, unsigned pos) { return uint64_t(value) << pos; }

}  // namespace

CqeHalf TlmCqeFormatter::format_main(const CqeFields& f, bool polarity) {
  CqeHalf q{};
  q[0] = field(f.payload_len, 0, 32) | field(f.tcp_seq_rtt, 32, 32);
  q[1] = f.qp_ctx;
  q[2] = field(f.stag_or_src_qpn, 0, 32) | field(f.qp_id, 32, 24);
  q[3] = field(f.minor_err, 0, 16) | field(f.major_err, 16, 16) | field(f.wqe_idx, 32, 15) |
         bit(f.extended, 50) | bit(f.push_dropped, 51) | bit(f.stag_or_ipv4, 53) |
         bit(f.solicited, 54) | bit(f.error, 55) | field(f.op, 56, 6) | bit(f.sq, 62) |
         bit(polarity, 63);
  return q;
}

CqeHalf TlmCqeFormatter::format_ext(const CqeFields& f, bool polarity) {
  CqeHalf q{};
  q[0] = field(f.imm_data, 0, 32);
  q[1] = 0;
  q[2] = field(f.ud_smac, 0, 48) | field(f.ud_vlan, 48, 16);
  q[3] = bit(f.vlan_valid, 60) | bit(f.smac_valid, 61) | bit(f.imm_valid, 62) |
         bit(polarity, 63);
  return q;
}

}  // namespace irdma_sim::device
