// Golden CQEs, computed by hand from the spec's bit table (C.3/C.4), held against both the
// device's formatter and the driver's reader.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstring>
#include <string>
#include <vector>

#include "driver/irdma/uk.h"
#include "model/device/cqe_format.h"

namespace {

using irdma_sim::device::CqeFields;
using irdma_sim::device::CqeHalf;
using irdma_sim::device::TlmCqeFormatter;

struct Golden {
  const char* name;
  CqeFields fields;
  bool polarity;
  CqeHalf main;
  bool ext_polarity;
  CqeHalf ext;
};

CqeFields send_done() {
  CqeFields f;
  f.qp_ctx = 0x0000000300000005ull;
  f.qp_id = 5;
  f.wqe_idx = 0x10;
  f.op = 0x03;  // SEND
  f.sq = true;
  return f;
}

CqeFields recv_imm() {
  CqeFields f;
  f.payload_len = 1218;
  f.qp_ctx = 0x0000000400000003ull;
  f.qp_id = 3;
  f.wqe_idx = 7;
  f.op = 0x05;  // BTH SEND_ONLY_WITH_IMMEDIATE
  f.solicited = true;
  f.extended = true;
  f.imm_valid = true;
  f.imm_data = 0xDEADBEEF;
  return f;
}

CqeFields flush_error() {
  CqeFields f;
  f.qp_ctx = 0x10;
  f.major_err = 1;
  f.minor_err = 2;
  f.error = true;
  f.wqe_idx = 0x7FFF;
  f.op = 0x3F;
  f.sq = true;
  return f;
}

CqeFields ud_recv() {
  CqeFields f;
  f.payload_len = 64;
  f.stag_or_src_qpn = 0x00ABCDEF;
  f.qp_id = 0xFFFFFF;
  f.stag_or_ipv4 = true;
  f.extended = true;
  f.smac_valid = true;
  f.vlan_valid = true;
  f.ud_smac = 0x001B21AABBCCull;  // 00:1b:21:aa:bb:cc
  f.ud_vlan = 0xA00C;             // PCP 5, VID 12
  return f;
}

const std::vector<Golden>& goldens() {
  static const std::vector<Golden> g = {
      {"sq_send", send_done(), true,
       {0, 0x0000000300000005ull, 0x0000000500000000ull, 0xC300001000000000ull}, false, {}},
      {"rq_imm_solicited_extended", recv_imm(), false,
       {1218, 0x0000000400000003ull, 0x0000000300000000ull, 0x0544000700000000ull}, true,
       {0xDEADBEEFull, 0, 0, 0xC000000000000000ull}},
      {"flush_error_max_index", flush_error(), false,
       {0, 0x10, 0, 0x7F807FFF00010002ull}, false, {}},
      {"ud_smac_vlan_ipv4", ud_recv(), true,
       {64, 0, 0x00FFFFFF00ABCDEFull, 0x8024000000000000ull}, false,
       {0, 0, 0xA00C001B21AABBCCull, 0x3000000000000000ull}},
  };
  return g;
}

TEST(CqeGolden, DeviceFormatterWritesTheSpecLayout) {
  TlmCqeFormatter fmt;
  for (const Golden& g : goldens()) {
    EXPECT_EQ(fmt.format_main(g.fields, g.polarity), g.main) << g.name;
    if (g.fields.extended) {
      EXPECT_EQ(fmt.format_ext(g.fields, g.ext_polarity), g.ext) << g.name;
    }
  }
}

TEST(CqeGolden, LittleEndianBytesOfTheValidQword) {
  // The valid bit is the top bit of byte 31 of the entry.
  TlmCqeFormatter fmt;
  const CqeHalf h = fmt.format_main(send_done(), true);
  uint8_t bytes[32];
  std::memcpy(bytes, h.data(), 32);
  EXPECT_EQ(bytes[31], 0xC3);
  EXPECT_EQ(bytes[28], 0x10);  // WQEIDX low byte at bit 32
  EXPECT_EQ(bytes[8], 0x05);   // qword1 = context, little-endian
}

// The driver reads each golden entry back into the fields it was made from.
TEST(CqeGolden, DriverReadsTheSpecLayout) {
  using namespace irdma;
  for (const Golden& g : goldens()) {
    // A two-slot ring with the golden entry in its last slot, so the extended half sits
    // in slot 0 of the next pass (the goldens' extended halves carry the flipped polarity).
    alignas(64) uint64_t ring[8] = {};
    alignas(64) uint64_t shadow[8] = {};
    std::memcpy(ring + 4, g.main.data(), 32);
    std::memcpy(ring, g.ext.data(), 32);
    irdma_cq_uk cq;
    irdma_uk_cq_init(&cq, ring, shadow, 1, 2, false);
    cq.cq_ring.head = 1;
    cq.polarity = g.polarity;

    irdma_qp_uk qp;
    irdma_uk_qp_init(&qp, g.fields.qp_id & 0xFF, 8, 8, 1, 1);
    qp.compl_ctx = g.fields.qp_ctx;
    qp.qp_type = g.fields.stag_or_ipv4 && g.fields.smac_valid ? IRDMA_QP_TYPE_ROCE_UD : IRDMA_QP_TYPE_ROCE_RC;
    qp.sq_wrtrk_array.resize(0x8000);
    qp.sq_wrtrk_array[g.fields.wqe_idx] = {77, 100, 1, IRDMA_OP_TYPE_SEND};
    qp.sq_ring.size = 0x8000;
    qp.sq_ring.head = 0x10 + 1;  // the SQ has this WQE outstanding
    qp.rq_ring.head = 8;         // and the RQ receives 0-7
    std::vector<irdma_qp_uk*> table(256, nullptr);
    table[g.fields.qp_id & 0xFF] = &qp;
    cq.qp_table = {table.data(), uint32_t(table.size())};

    irdma_cq_poll_info info;
    const int ret = irdma_uk_cq_poll_cmpl(&cq, &info);
    EXPECT_EQ(info.q_type, g.fields.sq) << g.name;
    EXPECT_EQ(info.error, g.fields.error) << g.name;
    EXPECT_EQ(info.solicited_event, g.fields.solicited) << g.name;
    EXPECT_EQ(info.qp_id, g.fields.qp_id) << g.name;
    EXPECT_EQ(info.ud_src_qpn, g.fields.stag_or_src_qpn) << g.name;
    EXPECT_EQ(info.imm_valid, g.fields.imm_valid) << g.name;
    if (g.fields.imm_valid) {
      EXPECT_EQ(info.imm_data, g.fields.imm_data) << g.name;
    }
    EXPECT_EQ(info.ud_smac_valid, g.fields.smac_valid) << g.name;
    if (g.fields.smac_valid) {
      const uint8_t mac[6] = {0x00, 0x1b, 0x21, 0xaa, 0xbb, 0xcc};
      EXPECT_EQ(0, std::memcmp(info.ud_smac, mac, 6)) << g.name;
    }
    if (g.fields.vlan_valid) {
      EXPECT_EQ(info.ud_vlan, g.fields.ud_vlan) << g.name;
    }
    if (g.fields.error) {
      EXPECT_EQ(info.major_err, g.fields.major_err) << g.name;
      EXPECT_EQ(info.minor_err, g.fields.minor_err) << g.name;
    }
    const std::string name = g.name;
    if (name == "sq_send") {
      EXPECT_EQ(ret, 0);
      EXPECT_EQ(info.wr_id, 77u);
      EXPECT_EQ(info.op_type, IRDMA_OP_TYPE_SEND);
      EXPECT_EQ(info.bytes_xfered, 100u);
    } else if (name == "rq_imm_solicited_extended") {
      EXPECT_EQ(ret, 0);
      EXPECT_EQ(info.bytes_xfered, 1218u);
      EXPECT_EQ(cq.cq_ring.head, 1u) << "an extended CQE takes two slots";
      EXPECT_EQ(cq.polarity, g.ext_polarity) << "and flips polarity once";
    } else if (name == "ud_smac_vlan_ipv4") {
      EXPECT_EQ(ret, -EFAULT) << "a null context is consumed and skipped";
      EXPECT_TRUE(info.ipv4);
    }
  }
}

}  // namespace
