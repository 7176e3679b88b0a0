#include "model/device/cqe_format.h"

#include "model/device/descriptor_fields.h"

namespace irdma_sim::device {

using namespace regs;

CqeHalf TlmCqeFormatter::format_main(const CqeFields& f, bool polarity) {
  CqeHalf q{};
  q[0] = put(CQE_PAYLDLEN, f.payload_len) | put(CQE_TCPSEQNUMRTT, f.tcp_seq_rtt);
  q[1] = f.qp_ctx;
  q[2] = put(CQE_INVSTAG_OR_UDSRCQPN, f.stag_or_src_qpn) | put(CQE_QPID, f.qp_id);
  q[3] = put(CQE_MINERR, f.minor_err) | put(CQE_MAJERR, f.major_err) | put(CQE_WQEIDX, f.wqe_idx) |
         put(CQE_EXTCQE, f.extended) | put(CQE_PSHDROP, f.push_dropped) |
         put(CQE_STAG_OR_IPV4, f.stag_or_ipv4) | put(CQE_SOEVENT, f.solicited) |
         put(CQE_ERROR, f.error) | put(CQE_OP, f.op) | put(CQE_SQ, f.sq) | put(CQE_VALID, polarity);
  return q;
}

CqeHalf TlmCqeFormatter::format_ext(const CqeFields& f, bool polarity) {
  CqeHalf q{};
  q[0] = put(CQE_IMMDATALOW32, f.imm_data);
  q[1] = 0;
  q[2] = put(CQE_UDSMAC, f.ud_smac) | put(CQE_UDVLAN, f.ud_vlan);
  q[3] = put(CQE_UDVLANVALID, f.vlan_valid) | put(CQE_UDSMACVALID, f.smac_valid) |
         put(CQE_IMMVALID, f.imm_valid) | put(CQE_VALID, polarity);
  return q;
}

}  // namespace irdma_sim::device
