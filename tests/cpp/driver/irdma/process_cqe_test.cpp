// irdma_process_cqe: one test per row of the spec's G.6 mapping, and the G.5 flush-code
// table.
#include <gtest/gtest.h>

#include <algorithm>

#include "driver/irdma/irdma_device.h"
#include "driver/irdma/poll.h"

namespace {

using namespace irdma;
using namespace ibcore;

struct Mapping : ::testing::Test {
  irdma_qp_uk qp;
  ib_qp back;
  irdma_cq_poll_info info;
  ib_wc wc{};

  void SetUp() override {
    qp.back_qp = &back;
    info.qp_handle = &qp;
    info.qp_id = 9;
    info.wr_id = 42;
    info.bytes_xfered = 100;
  }
  void sq(uint8_t op) {
    info.q_type = 1;
    info.op_type = op;
    irdma_process_cqe(&wc, info);
  }
};

TEST_F(Mapping, SuccessfulSendCarriesWrIdLengthAndQp) {
  sq(IRDMA_OP_TYPE_SEND);
  EXPECT_EQ(wc.status, IB_WC_SUCCESS);
  EXPECT_EQ(wc.opcode, IB_WC_SEND);
  EXPECT_EQ(wc.wr_id, 42u);
  EXPECT_EQ(wc.byte_len, 100u);
  EXPECT_EQ(wc.qp, &back);
  EXPECT_EQ(wc.src_qp, 9u);
  EXPECT_EQ(wc.wc_flags, 0);
}

TEST_F(Mapping, SendVariantsAreSends) {
  for (irdma_op_type op : {IRDMA_OP_TYPE_SEND_INV, IRDMA_OP_TYPE_SEND_SOL, IRDMA_OP_TYPE_SEND_SOL_INV}) {
    sq(op);
    EXPECT_EQ(wc.opcode, IB_WC_SEND);
    EXPECT_EQ(wc.status, IB_WC_SUCCESS);
  }
}

TEST_F(Mapping, SqOpcodeTable) {
  const std::pair<uint8_t, ib_wc_opcode> rows[] = {
      {IRDMA_OP_TYPE_RDMA_WRITE, IB_WC_RDMA_WRITE},   {IRDMA_OP_TYPE_RDMA_WRITE_SOL, IB_WC_RDMA_WRITE},
      {IRDMA_OP_TYPE_RDMA_READ, IB_WC_RDMA_READ},     {IRDMA_OP_TYPE_RDMA_READ_INV_STAG, IB_WC_RDMA_READ},
      {IRDMA_OP_TYPE_FAST_REG_NSMR, IB_WC_REG_MR},    {IRDMA_OP_TYPE_INV_STAG, IB_WC_LOCAL_INV},
      {IRDMA_OP_TYPE_ATOMIC_FETCH_AND_ADD, IB_WC_FETCH_ADD},
      {IRDMA_OP_TYPE_ATOMIC_COMPARE_AND_SWAP, IB_WC_COMP_SWAP}};
  for (const auto& [op, expected] : rows) {
    sq(op);
    EXPECT_EQ(wc.opcode, expected) << int(op);
    EXPECT_EQ(wc.status, IB_WC_SUCCESS) << int(op);
  }
}

TEST_F(Mapping, UnmappedSqOpcodeIsAGeneralErrorEvenOnSuccess) {
  for (uint8_t op : {uint8_t(IRDMA_OP_TYPE_NOP), uint8_t(IRDMA_OP_TYPE_BIND_MW), uint8_t(0x2a)}) {
    sq(op);
    EXPECT_EQ(wc.status, IB_WC_GENERAL_ERR) << int(op);
  }
}

TEST_F(Mapping, ReceiveWithImmediateIsConvertedToNetworkOrder) {
  info.q_type = 0;
  info.op_type = 0x05;
  info.imm_valid = true;
  info.imm_data = 0x11223344;
  irdma_process_cqe(&wc, info);
  EXPECT_EQ(wc.opcode, IB_WC_RECV);
  EXPECT_EQ(wc.wc_flags, IB_WC_WITH_IMM);
  EXPECT_EQ(wc.ex.imm_data, 0x44332211u);
}

TEST_F(Mapping, RoceWriteWithImmediateOpcodesAreRecvRdmaWithImm) {
  info.q_type = 0;
  for (uint8_t op : {uint8_t(0x09), uint8_t(0x0b)}) {
    info.op_type = op;
    irdma_process_cqe(&wc, info);
    EXPECT_EQ(wc.opcode, IB_WC_RECV_RDMA_WITH_IMM);
  }
}

TEST_F(Mapping, Gen3ReceivesCarryTheSendersSqOpcode) {
  qp.hw_rev = IRDMA_GEN_3;
  info.q_type = 0;
  const std::pair<uint8_t, ib_wc_opcode> rows[] = {
      {IRDMA_OP_TYPE_RDMA_WRITE, IB_WC_RECV_RDMA_WITH_IMM},
      {IRDMA_OP_TYPE_RDMA_WRITE_SOL, IB_WC_RECV_RDMA_WITH_IMM},
      {IRDMA_OP_TYPE_SEND, IB_WC_RECV},
      {uint8_t(0x0b), IB_WC_RECV}};  // a GEN_2 BTH opcode means nothing on GEN_3
  for (const auto& [op, expected] : rows) {
    info.op_type = op;
    irdma_process_cqe(&wc, info);
    EXPECT_EQ(wc.opcode, expected) << int(op);
  }
  qp.hw_rev = IRDMA_GEN_2;
  info.op_type = IRDMA_OP_TYPE_RDMA_WRITE;
  irdma_process_cqe(&wc, info);
  EXPECT_EQ(wc.opcode, IB_WC_RECV) << "GEN_2 reads 0x00 as a BTH opcode";
}

TEST_F(Mapping, InvalidateOverwritesImmediateInTheUnion) {
  info.q_type = 0;
  info.imm_valid = true;
  info.imm_data = 1;
  info.stag_invalid_set = true;
  info.inv_stag = 0xABCD;
  irdma_process_cqe(&wc, info);
  EXPECT_EQ(wc.wc_flags, IB_WC_WITH_IMM | IB_WC_WITH_INVALIDATE);
  EXPECT_EQ(wc.ex.invalidate_rkey, 0xABCDu);
}

TEST_F(Mapping, UdReceiveCarriesSourceQpGrhAndNetworkType) {
  qp.qp_type = IRDMA_QP_TYPE_ROCE_UD;
  info.q_type = 0;
  info.ud_src_qpn = 0x1234;
  info.ipv4 = true;
  info.ud_vlan_valid = true;
  info.ud_vlan = 0xA000;  // PCP 5, VID 0: sl set, no VLAN flag
  irdma_process_cqe(&wc, info);
  EXPECT_EQ(wc.src_qp, 0x1234u);
  EXPECT_EQ(wc.sl, 5);
  EXPECT_EQ(wc.wc_flags, IB_WC_GRH | IB_WC_WITH_NETWORK_HDR_TYPE);
  EXPECT_EQ(wc.network_hdr_type, RDMA_NETWORK_IPV4);
  info.ipv4 = false;
  info.ud_vlan = 0xA00C;
  irdma_process_cqe(&wc, info);
  EXPECT_EQ(wc.network_hdr_type, RDMA_NETWORK_IPV6);
  EXPECT_EQ(wc.vlan_id, 12);
  EXPECT_TRUE(wc.wc_flags & IB_WC_WITH_VLAN);
}

TEST_F(Mapping, NonFlushErrorIsGeneralErrorWithVendorCode) {
  info.error = true;
  info.comp_status = IRDMA_COMPL_STATUS_UNKNOWN;
  info.major_err = 0x8000;
  info.minor_err = 0x0003;
  sq(IRDMA_OP_TYPE_SEND);
  EXPECT_EQ(wc.status, IB_WC_GENERAL_ERR);
  EXPECT_EQ(wc.vendor_err, 0x80000003u);
}

TEST_F(Mapping, FlushCodeTable) {
  const std::pair<uint16_t, ib_wc_status> rows[] = {
      {FLUSH_INVALID, IB_WC_FATAL_ERR},           {FLUSH_GENERAL_ERR, IB_WC_WR_FLUSH_ERR},
      {FLUSH_PROT_ERR, IB_WC_LOC_PROT_ERR},       {FLUSH_REM_ACCESS_ERR, IB_WC_REM_ACCESS_ERR},
      {FLUSH_LOC_QP_OP_ERR, IB_WC_LOC_QP_OP_ERR}, {FLUSH_REM_OP_ERR, IB_WC_REM_OP_ERR},
      {FLUSH_LOC_LEN_ERR, IB_WC_LOC_LEN_ERR},     {FLUSH_FATAL_ERR, IB_WC_FATAL_ERR},
      {FLUSH_RETRY_EXC_ERR, IB_WC_RETRY_EXC_ERR}, {FLUSH_MW_BIND_ERR, IB_WC_MW_BIND_ERR},
      {FLUSH_REM_INV_REQ_ERR, IB_WC_REM_INV_REQ_ERR},
      {FLUSH_RNR_RETRY_EXC_ERR, IB_WC_RNR_RETRY_EXC_ERR}, {uint16_t(77), IB_WC_FATAL_ERR}};
  info.error = true;
  info.comp_status = IRDMA_COMPL_STATUS_FLUSHED;
  info.major_err = IRDMA_FLUSH_MAJOR_ERR;
  for (const auto& [minor, status] : rows) {
    info.minor_err = minor;
    sq(IRDMA_OP_TYPE_SEND);
    EXPECT_EQ(wc.status, status) << minor;
    EXPECT_EQ(wc.vendor_err, 0x10000u | minor);
  }
}

TEST_F(Mapping, UdSourceMacIsReportedFirstByteFirst) {
  qp.qp_type = IRDMA_QP_TYPE_ROCE_UD;
  info.q_type = 0;
  info.ud_smac_valid = true;
  const uint8_t mac[6] = {0x00, 0x1B, 0x21, 0xA0, 0xC0, 0xDE};
  std::copy(mac, mac + 6, info.ud_smac);
  irdma_process_cqe(&wc, info);
  EXPECT_TRUE(wc.wc_flags & IB_WC_WITH_SMAC);
  EXPECT_TRUE(std::equal(mac, mac + 6, wc.smac.begin()));
  EXPECT_EQ(wc.sl, 0) << "no VLAN tag: SL 0";
  EXPECT_FALSE(wc.wc_flags & IB_WC_WITH_VLAN);
}

TEST_F(Mapping, PkeyIndexIsZeroAndUdSlidIsZero) {
  qp.qp_type = IRDMA_QP_TYPE_ROCE_UD;
  wc.pkey_index = 7;
  wc.slid = 9;
  sq(IRDMA_OP_TYPE_SEND);
  EXPECT_EQ(wc.pkey_index, 0);
  EXPECT_EQ(wc.slid, 0);
  qp.qp_type = IRDMA_QP_TYPE_ROCE_RC;
  wc.slid = 9;
  sq(IRDMA_OP_TYPE_SEND);
  EXPECT_EQ(wc.slid, 9) << "left alone on RC";
}

TEST_F(Mapping, UdReceivesNeverReportAnInvalidatedKey) {
  qp.qp_type = IRDMA_QP_TYPE_ROCE_UD;
  info.q_type = 0;
  info.stag_invalid_set = true;  // on UD the bit is IPv4
  info.inv_stag = 0x77;
  irdma_process_cqe(&wc, info);
  EXPECT_FALSE(wc.wc_flags & IB_WC_WITH_INVALIDATE);
}

TEST_F(Mapping, ErrorCompletionsCarryNoImmediateOrUdFields) {
  qp.qp_type = IRDMA_QP_TYPE_ROCE_UD;
  info.q_type = 0;
  info.error = true;
  info.comp_status = IRDMA_COMPL_STATUS_FLUSHED;
  info.major_err = IRDMA_FLUSH_MAJOR_ERR;
  info.minor_err = FLUSH_GENERAL_ERR;
  info.imm_valid = info.ud_smac_valid = info.ud_vlan_valid = true;
  info.ud_vlan = 0xE00F;
  wc.sl = 3;
  wc.vlan_id = 4;
  irdma_process_cqe(&wc, info);
  EXPECT_EQ(wc.status, IB_WC_WR_FLUSH_ERR);
  EXPECT_EQ(wc.wc_flags & (IB_WC_WITH_IMM | IB_WC_WITH_SMAC | IB_WC_WITH_VLAN), 0);
  EXPECT_EQ(wc.sl, 3) << "untouched on error";
  EXPECT_EQ(wc.vlan_id, 4) << "untouched on error";
}

TEST_F(Mapping, SuccessLeavesVendorErrAsItWas) {
  // The kernel sets vendor_err on errors only: consumers must read it only then.
  wc.vendor_err = 0x10001;
  sq(IRDMA_OP_TYPE_SEND);
  EXPECT_EQ(wc.status, IB_WC_SUCCESS);
  EXPECT_EQ(wc.vendor_err, 0x10001u);
}

}  // namespace
