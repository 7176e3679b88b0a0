// The completion fields' input ports, as every Verilated block that takes a CQE names them
// (cqe_formatter, cq_writer). Include after the block's Verilated header.
#pragma once

#include "model/device/cqe_format.h"

namespace irdma_sim::rtl {

// Ports are exactly as wide as the hardware fields; Verilator expects unused high bits of a
// port's C type to be zero, so the C++ fields are cut to width here.
template <typename Top>
void drive_cqe_fields(Top& top, const device::CqeFields& f) {
  top.payload_len = f.payload_len;
  top.tcp_seq_rtt = f.tcp_seq_rtt;
  top.qp_ctx = f.qp_ctx;
  top.stag_or_src_qpn = f.stag_or_src_qpn;
  top.qp_id = f.qp_id & 0xFFFFFFu;
  top.minor = f.minor_err;
  top.major = f.major_err;
  top.wqe_idx = f.wqe_idx & 0x7FFFu;
  top.push_dropped = f.push_dropped;
  top.stag_or_ipv4 = f.stag_or_ipv4;
  top.solicited = f.solicited;
  top.error = f.error;
  top.op = f.op & 0x3Fu;
  top.sq = f.sq;
  top.extended = f.extended;
  top.imm_data = f.imm_data;
  top.ud_smac = f.ud_smac & 0xFFFF'FFFF'FFFFull;
  top.ud_vlan = f.ud_vlan;
  top.vlan_valid = f.vlan_valid;
  top.smac_valid = f.smac_valid;
  top.imm_valid = f.imm_valid;
}

}  // namespace irdma_sim::rtl
