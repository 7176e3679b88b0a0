#include "model/testbench/completion_log.h"

#include <stdexcept>

#include "model/testbench/json_writer.h"
#include "model/trace/text.h"

namespace irdma_sim::testbench {

using namespace ibcore;

CompletionLog::~CompletionLog() { close(); }

void CompletionLog::open(const std::string& path) {
  close();
  out_ = std::fopen(path.c_str(), "w");
  if (!out_) throw std::runtime_error("cannot create " + path);
  std::setvbuf(out_, nullptr, _IOFBF, 1 << 20);  // a write(2) per MiB, not per 4 KiB
}

void CompletionLog::close() {
  if (out_) std::fclose(out_);
  out_ = nullptr;
}

void CompletionLog::write(uint64_t t_ps, uint64_t posted_ps, uint32_t cq, uint64_t wr_id, uint32_t qp_num,
                          const ib_wc& wc) {
  if (!out_) return;
  char smac[17];  // aa:bb:cc:dd:ee:ff
  for (int i = 0; i < 6; i++) {
    smac[3 * i] = trace::kHexDigits[wc.smac[i] >> 4];
    smac[3 * i + 1] = trace::kHexDigits[wc.smac[i] & 15];
    if (i < 5) smac[3 * i + 2] = ':';
  }
  const bool imm = wc.wc_flags & IB_WC_WITH_IMM;
  const bool inv = wc.wc_flags & IB_WC_WITH_INVALIDATE;
  JsonWriter& j = line_;
  j.clear();
  j.begin_object()
      .num("t_ps", t_ps)
      .num("cq", cq)
      .num("wr_id", wr_id)
      .num("status", wc.status)
      .num("opcode", wc.opcode)
      .num("vendor_err", wc.vendor_err)
      .num("byte_len", wc.byte_len)
      .num("qp_num", qp_num)
      .num("src_qp", wc.src_qp)
      .num("wc_flags", uint32_t(wc.wc_flags))
      // The union holds a big-endian immediate or a host-order rkey; both are given as
      // host-order numbers, and only when the flag says the union holds them.
      .num("imm_data", imm && !inv ? __builtin_bswap32(wc.ex.imm_data) : 0)
      .num("invalidate_rkey", inv ? wc.ex.invalidate_rkey : 0)
      .num("slid", wc.slid)
      .num("sl", wc.sl)
      .num("pkey_index", wc.pkey_index)
      .str("smac", std::string_view(smac, sizeof smac))
      .num("vlan_id", wc.vlan_id)
      .num("network_hdr_type", wc.network_hdr_type)
      .num("posted_ps", posted_ps)
      .end_object();
  std::fwrite(j.text().data(), 1, j.text().size(), out_);
  std::fputc('\n', out_);
}

}  // namespace irdma_sim::testbench
