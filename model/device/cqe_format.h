// The device's view of a completion queue entry (irdma spec C.3/C.4): what the CQ engine
// knows about a completion, and the formatter that turns it into the 32-byte halves the
// engine writes to host memory. Layout facts are restated here on purpose, apart from the
// driver's copy (model/device/README.md: written twice, held together by golden-vector
// tests).
#pragma once

#include <array>
#include <cstdint>

namespace irdma_sim::device {

// One completion as the engine hands it to the formatter.
struct CqeFields {
  uint32_t payload_len = 0;   // qword0 31:0 (RQ completions)
  uint32_t tcp_seq_rtt = 0;   // qword0 63:32
  uint64_t qp_ctx = 0;        // qword1: completion context given at QP create
  uint32_t stag_or_src_qpn = 0;  // qword2 31:0: invalidated STag or UD source QPN
  uint32_t qp_id = 0;         // qword2 55:32 (24 bits)
  uint16_t minor_err = 0;     // qword3 15:0
  uint16_t major_err = 0;     // qword3 31:16
  uint16_t wqe_idx = 0;       // qword3 46:32 (15 bits)
  bool push_dropped = false;  // qword3 51
  bool stag_or_ipv4 = false;  // qword3 53: invalidate-STag valid (RC RQ) / IPv4 (UD)
  bool solicited = false;     // qword3 54
  bool error = false;         // qword3 55
  uint8_t op = 0;             // qword3 61:56 (6 bits)
  bool sq = false;            // qword3 62: 1 = SQ, 0 = RQ
  // Extended half (qword4..7), present iff `extended`; qword3 bit 50 says so.
  bool extended = false;
  uint32_t imm_data = 0;      // qword4 31:0
  uint64_t ud_smac = 0;       // qword6 47:0, byte[0] of the MAC in bits 47:40
  uint16_t ud_vlan = 0;       // qword6 63:48 (TCI)
  bool vlan_valid = false;    // qword7 60
  bool smac_valid = false;    // qword7 61
  bool imm_valid = false;     // qword7 62
};

using CqeHalf = std::array<uint64_t, 4>;

// Formats one 32-byte half. `polarity` is the producer pass polarity of the slot the half is
// written to (the ext half of a 32-byte-mode CQE may sit in the next pass). The valid qword
// (qword3 of each half) is the one the engine must write last.
class CqeFormatter {
 public:
  virtual ~CqeFormatter() = default;
  // The engine's simulated time before it formats a CQE: a clocked formatter's waveform
  // lines up with the trace. The TLM formatter has no clock.
  virtual void at_time_ps(uint64_t) {}
  virtual CqeHalf format_main(const CqeFields& f, bool polarity) = 0;
  virtual CqeHalf format_ext(const CqeFields& f, bool polarity) = 0;
};

// The transaction-level formatter: pure bit packing.
class TlmCqeFormatter final : public CqeFormatter {
 public:
  CqeHalf format_main(const CqeFields& f, bool polarity) override;
  CqeHalf format_ext(const CqeFields& f, bool polarity) override;
};

}  // namespace irdma_sim::device
