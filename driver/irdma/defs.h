// The irdma hardware interface as the driver sees it: register offsets, descriptor fields
// and codes, named as Linux's irdma names them (defs.h, icrdma_hw.h; spec C, D.9, F).
#pragma once

#include <cstdint>

namespace irdma {

constexpr uint64_t GENMASK_ULL(unsigned high, unsigned low) {
  return (~0ull >> (63 - high)) & (~0ull << low);
}
constexpr uint64_t BIT_ULL(unsigned n) { return 1ull << n; }

// A builtin, not a loop: it must fold to a constant in the poll path.
constexpr unsigned mask_shift(uint64_t mask) { return unsigned(__builtin_ctzll(mask)); }
// FIELD_GET / FIELD_PREP for 64-bit descriptor words.
constexpr uint64_t FIELD_GET(uint64_t mask, uint64_t word) {
  return (word & mask) >> mask_shift(mask);
}
constexpr uint64_t FIELD_PREP(uint64_t mask, uint64_t value) {
  return (value << mask_shift(mask)) & mask;
}
// The largest value a field holds: where a counter in it wraps.
constexpr uint64_t FIELD_MAX(uint64_t mask) { return mask >> mask_shift(mask); }

enum irdma_vers : uint8_t {
  IRDMA_GEN_1 = 1,
  IRDMA_GEN_2 = 2,
  IRDMA_GEN_3 = 3,
};

// GEN_2 (icrdma) PF BAR0 register offsets.
enum irdma_gen2_regs : uint32_t {
  IRDMA_CQPTAIL = 0x00500880,
  IRDMA_CQPDB = 0x00500800,
  IRDMA_CCQPSTATUS = 0x0050A000,
  IRDMA_CCQPHIGH = 0x0050A100,
  IRDMA_CCQPLOW = 0x0050A080,
  IRDMA_CQARM = 0x00502C00,
  IRDMA_CQACK = 0x00502C80,
  IRDMA_AEQALLOC = 0x00502D00,
  IRDMA_CQPERRCODES = 0x0050A200,
  IRDMA_WQEALLOC = 0x00504400,
  IRDMA_GLPE_CPUSTATUS0 = 0x0050BA5C,
  IRDMA_GLPE_CPUSTATUS1 = 0x0050BA60,
  IRDMA_GLPE_CPUSTATUS2 = 0x0050BA64,
  IRDMA_GLPCI_LBARCTRL = 0x0009DE74,
};
// The registers above end here: a smaller BAR0 is not a function irdma drives.
inline constexpr uint64_t IRDMA_GEN2_BAR0_MIN_SIZE = IRDMA_GLPE_CPUSTATUS2 + 4;
// irdma_wait_pe_ready: each CPUSTATUS reads this once the engine's CPUs run.
inline constexpr uint32_t IRDMA_CPU_READY = 0x80;
inline constexpr uint32_t IRDMA_MAX_PE_READY_POLLS = 15;  // one a second
inline constexpr uint64_t IRDMA_GLPCI_LBARCTRL_PE_DB_SIZE = GENMASK_ULL(5, 4);
enum irdma_pe_db_size : uint8_t { IRDMA_PE_DB_SIZE_4M = 1, IRDMA_PE_DB_SIZE_8M = 2 };
// The doorbell page a user context maps, by the PE doorbell size: its SQ doorbell at +0, its
// CQ arm at +IRDMA_DB_CQ_OFFSET.
inline constexpr uint64_t IRDMA_DB_ADDR_OFFSET_4M = 0x3F0000;
inline constexpr uint64_t IRDMA_DB_ADDR_OFFSET_8M = 0x7F0000;
inline constexpr uint64_t IRDMA_DB_CQ_OFFSET = 64;
inline constexpr uint32_t IRDMA_CCQPSTATUS_CCQP_DONE = 1u << 0;
inline constexpr uint32_t IRDMA_CCQPSTATUS_CCQP_ERR = 1u << 31;
inline constexpr uint32_t IRDMA_CQPTAIL_WQTAIL = 0x7FF;
inline constexpr uint32_t IRDMA_CQPTAIL_CQP_OP_ERR = 1u << 31;

// Sizes in bytes.
inline constexpr unsigned IRDMA_CQE_SIZE_BYTES = 32;
inline constexpr unsigned IRDMA_EXTENDED_CQE_SIZE_BYTES = 64;
inline constexpr unsigned IRDMA_CQP_WQE_SIZE_BYTES = 64;
inline constexpr unsigned IRDMA_SHADOW_AREA_SIZE_BYTES = 64;
inline constexpr unsigned IRDMA_QP_CTX_SIZE_BYTES = 256;
// A CQ ring's base and size are multiples of this (irdma_create_cq's ALIGN(rsize, 256)).
inline constexpr unsigned IRDMA_CQ_RING_ALIGN = 256;
inline constexpr unsigned IRDMA_QP_WQE_MIN_SIZE = 32;  // one SQ/RQ quantum
// Work queue limits (GEN_2's uk_attrs): quanta the SQ and RQ keep back, the quanta of the
// largest WQE, the quanta a ring has at least and at most, the fragments of a WQE (14 slots
// with immediate data: 8 quanta at most), inline bytes and fragments of an RDMA read.
inline constexpr uint32_t IRDMA_SQ_RSVD = 258;
inline constexpr uint32_t IRDMA_RQ_RSVD = 1;
inline constexpr uint32_t IRDMA_MAX_QUANTA_PER_WR = 8;
inline constexpr uint32_t IRDMA_MIN_WQ_SIZE = 8;  // IRDMA_QP_SW_MIN_WQSIZE
inline constexpr uint32_t IRDMA_MAX_WQ_QUANTA = 32768;
inline constexpr uint32_t IRDMA_MAX_FRAGS = 13;
inline constexpr uint32_t IRDMA_MAX_INLINE_DATA_SIZE = 101;
inline constexpr uint32_t IRDMA_MAX_SGE_RD = 13;
inline constexpr uint32_t IRDMA_MAX_QP_WRS = (IRDMA_MAX_WQ_QUANTA - IRDMA_SQ_RSVD) / IRDMA_MAX_QUANTA_PER_WR;
// RDMA reads a QP may have outstanding as responder and as initiator (ICRDMA_MAX_IRD/ORD_SIZE).
inline constexpr uint32_t IRDMA_MAX_IRD_SIZE = 32;
inline constexpr uint32_t IRDMA_MAX_ORD_SIZE = 32;
inline constexpr uint64_t IRDMA_MAX_MR_SIZE = 0x200000000000ull;
inline constexpr uint32_t IRDMA_MAX_OUTBOUND_MSG_SIZE = 0x7FFFFFFF;
inline constexpr uint32_t IRDMA_PKEY_TBL_SZ = 1;
inline constexpr uint32_t IRDMA_ROCE_GID_TBL_LEN = 32;
// Address handles: this device keeps none (a UD WQE names its peer's QP itself), so the
// driver numbers them from a space of its own (Linux sizes it from the HMC's FSIAV object).
inline constexpr uint32_t IRDMA_MAX_AH = 65536;
inline constexpr uint32_t IRDMA_MIN_CQ_SIZE = 1;
inline constexpr uint32_t IRDMA_MAX_CQ_SIZE = 1048575;
inline constexpr uint32_t IRDMA_MAX_PDS = 262144;  // max_hw_pds: 18 bits of PD index
inline constexpr uint32_t IRDMA_MAX_CQ_READ_THRESH = 0x3FFFF;

// CQE (spec C.3/C.4).
inline constexpr uint64_t IRDMACQ_PAYLDLEN = GENMASK_ULL(31, 0);
inline constexpr uint64_t IRDMACQ_TCPSEQNUMRTT = GENMASK_ULL(63, 32);
inline constexpr uint64_t IRDMACQ_INVSTAG = GENMASK_ULL(31, 0);
inline constexpr uint64_t IRDMACQ_UDSRCQPN = GENMASK_ULL(31, 0);
inline constexpr uint64_t IRDMACQ_QPID = GENMASK_ULL(55, 32);
inline constexpr uint64_t IRDMA_CQ_MINERR = GENMASK_ULL(15, 0);
inline constexpr uint64_t IRDMA_CQ_MAJERR = GENMASK_ULL(31, 16);
inline constexpr uint64_t IRDMA_CQ_WQEIDX = GENMASK_ULL(46, 32);
inline constexpr uint64_t IRDMA_CQ_EXTCQE = BIT_ULL(50);
inline constexpr uint64_t IRDMACQ_PSHDROP = BIT_ULL(51);
inline constexpr uint64_t IRDMACQ_STAG = BIT_ULL(53);
inline constexpr uint64_t IRDMACQ_IPV4 = BIT_ULL(53);
inline constexpr uint64_t IRDMACQ_SOEVENT = BIT_ULL(54);
inline constexpr uint64_t IRDMA_CQ_ERROR = BIT_ULL(55);
inline constexpr uint64_t IRDMACQ_OP = GENMASK_ULL(61, 56);
inline constexpr uint64_t IRDMA_CQ_SQ = BIT_ULL(62);
inline constexpr uint64_t IRDMA_CQ_VALID = BIT_ULL(63);
inline constexpr uint64_t IRDMA_CQ_IMMDATALOW32 = GENMASK_ULL(31, 0);
inline constexpr uint64_t IRDMA_CQ_UDSMAC = GENMASK_ULL(47, 0);
inline constexpr uint64_t IRDMA_CQ_UDVLAN = GENMASK_ULL(63, 48);
inline constexpr uint64_t IRDMA_CQ_UDVLANVALID = BIT_ULL(60);
// The 802.1Q tag IRDMA_CQ_UDVLAN carries (Linux's linux/if_vlan.h).
inline constexpr uint16_t VLAN_VID_MASK = 0x0fff;
inline constexpr unsigned VLAN_PRIO_SHIFT = 13;
inline constexpr uint64_t IRDMA_CQ_UDSMACVALID = BIT_ULL(61);
inline constexpr uint64_t IRDMA_CQ_IMMVALID = BIT_ULL(62);
inline constexpr uint64_t IRDMA_CCQ_OPRETVAL = GENMASK_ULL(31, 0);

// CQ shadow area qword4 (spec C.7).
inline constexpr uint64_t IRDMA_CQ_DBSA_SW_CQ_SELECT = GENMASK_ULL(13, 0);
inline constexpr uint64_t IRDMA_CQ_DBSA_ARM_NEXT = BIT_ULL(14);
inline constexpr uint64_t IRDMA_CQ_DBSA_ARM_NEXT_SE = BIT_ULL(15);
inline constexpr uint64_t IRDMA_CQ_DBSA_ARM_SEQ_NUM = GENMASK_ULL(17, 16);

// CQP host context (irdma_sc_cqp_create).
inline constexpr uint64_t IRDMA_CQPHC_SQSIZE = GENMASK_ULL(11, 8);
inline constexpr uint64_t IRDMA_CQPHC_HW_MAJVER = GENMASK_ULL(31, 16);

// CQP WQE common header (qword3).
inline constexpr uint64_t IRDMA_CQPSQ_OPCODE = GENMASK_ULL(37, 32);
inline constexpr uint64_t IRDMA_CQPSQ_WQEVALID = BIT_ULL(63);

enum irdma_cqp_op : uint8_t {
  IRDMA_CQP_OP_CREATE_QP = 0x00,
  IRDMA_CQP_OP_MODIFY_QP = 0x01,
  IRDMA_CQP_OP_DESTROY_QP = 0x02,
  IRDMA_CQP_OP_CREATE_CQ = 0x03,
  IRDMA_CQP_OP_MODIFY_CQ = 0x04,
  IRDMA_CQP_OP_DESTROY_CQ = 0x05,
  IRDMA_CQP_OP_ALLOC_STAG = 0x09,
  IRDMA_CQP_OP_REG_MR = 0x0a,
  IRDMA_CQP_OP_DEALLOC_STAG = 0x0d,
  IRDMA_CQP_OP_QUERY_RDMA_FEATURES = 0x12,
  IRDMA_CQP_OP_CREATE_CEQ = 0x16,
  IRDMA_CQP_OP_DESTROY_CEQ = 0x18,
  IRDMA_CQP_OP_CREATE_AEQ = 0x19,
  IRDMA_CQP_OP_DESTROY_AEQ = 0x1b,
  IRDMA_CQP_OP_UPDATE_PE_SDS = 0x1f,
  IRDMA_CQP_OP_QUERY_FPM_VAL = 0x20,
  IRDMA_CQP_OP_COMMIT_FPM_VAL = 0x21,
};

// HMC set-up (irdma_sc_query_fpm_val, irdma_sc_commit_fpm_val, irdma_sc_update_pe_sds).
// The width of the CEQ count (10:0, Linux reads 9:0) and the absence of an overflow SD
// buffer are this simulator's choices; see model/device/README.md, "Bring-up".
enum irdma_hmc_rsrc_type : unsigned {
  IRDMA_HMC_IW_QP = 0,
  IRDMA_HMC_IW_CQ = 1,
  IRDMA_HMC_IW_APBVT_ENTRY = 5,
  IRDMA_HMC_IW_MR = 6,
  IRDMA_HMC_IW_XFFL = 8,
  IRDMA_HMC_IW_Q1FL = 10,
  IRDMA_HMC_IW_PBLE = 14,
  IRDMA_HMC_IW_RRF = 15,
  IRDMA_HMC_IW_MAX = 21,
};
inline constexpr unsigned IRDMA_QUERY_FPM_BUF_SIZE = 176;
inline constexpr unsigned IRDMA_COMMIT_FPM_BUF_SIZE = 176;
inline constexpr unsigned IRDMA_QUERY_FPM_MAX_CEQS_OFFSET = 120;
inline constexpr uint64_t IRDMA_QUERY_FPM_FIRST_PE_SD_INDEX = GENMASK_ULL(13, 0);
inline constexpr uint64_t IRDMA_QUERY_FPM_MAX_PE_SDS = GENMASK_ULL(45, 32);
inline constexpr uint64_t IRDMA_QUERY_FPM_MAX_QPS = GENMASK_ULL(18, 0);
inline constexpr uint64_t IRDMA_QUERY_FPM_MAX_CQS = GENMASK_ULL(19, 0);
inline constexpr uint64_t IRDMA_QUERY_FPM_MAX_CNT = GENMASK_ULL(31, 0);
inline constexpr uint64_t IRDMA_QUERY_FPM_LOG2_SIZE = GENMASK_ULL(63, 32);  // and free-list block sizes
inline constexpr uint64_t IRDMA_QUERY_FPM_MAX_CEQS = GENMASK_ULL(10, 0);
inline constexpr uint64_t IRDMA_COMMIT_FPM_CNT = GENMASK_ULL(31, 0);
inline constexpr uint64_t IRDMA_COMMIT_FPM_BASE = GENMASK_ULL(63, 32);  // 512-byte units
inline constexpr uint64_t IRDMA_HMC_DIRECT_BP_SIZE = 2ull << 20;        // one SD
inline constexpr uint64_t IRDMA_HMC_PAGED_BP_SIZE = 4096;
inline constexpr unsigned IRDMA_HMC_PD_CNT_IN_SD = 512;
inline constexpr uint64_t IRDMA_CQPSQ_UPESD_ENTRY_COUNT = GENMASK_ULL(3, 0);  // qword3: in a buffer
inline constexpr uint64_t IRDMA_CQPSQ_UPESD_ENTRY_VALID = BIT_ULL(63);        // entries 1 and 2
inline constexpr uint64_t IRDMA_PFHMC_SDCMD_PMSDIDX = GENMASK_ULL(11, 0);
inline constexpr uint64_t IRDMA_PFHMC_SDCMD_PMSDWR = BIT_ULL(31);
inline constexpr uint64_t IRDMA_PFHMC_SDDATALOW_PMSDVALID = BIT_ULL(0);
inline constexpr uint64_t IRDMA_PFHMC_SDDATALOW_PMSDTYPE = BIT_ULL(1);  // 1: direct
inline constexpr uint64_t IRDMA_PFHMC_SDDATALOW_PMSDBPCOUNT = GENMASK_ULL(11, 2);
inline constexpr uint64_t IRDMA_PD_ENTRY_VALID = BIT_ULL(0);

// QUERY_RDMA_FEATURES: qwords of type and value; the first (FW_INFO) counts them.
inline constexpr uint64_t IRDMA_FEATURE_TYPE = GENMASK_ULL(63, 48);
inline constexpr uint64_t IRDMA_FEATURE_INFO = GENMASK_ULL(47, 0);
inline constexpr uint64_t IRDMA_FEATURE_CNT = GENMASK_ULL(47, 32);
inline constexpr uint64_t IRDMA_FW_VER_MAJOR = GENMASK_ULL(31, 16);
inline constexpr uint64_t IRDMA_FW_VER_MINOR = GENMASK_ULL(15, 0);
enum irdma_feature_type : uint16_t {
  IRDMA_FEATURE_FW_INFO = 0,
  IRDMA_FTN_FLAGS = 32,
  IRDMA_MAX_FEATURES = 34,
  IRDMA_SIM_FEATURE_MAX_CQE = 0x8000,  // the simulator's: the largest CQ for ib-core
};
inline constexpr uint64_t IRDMA_ATOMICS_ALLOWED_BIT = BIT_ULL(0);
inline constexpr uint64_t IRDMA_SIM_FTN_CQ_RESIZE = BIT_ULL(1);    // the simulator's bit
inline constexpr uint64_t IRDMA_SIM_FTN_64BYTE_CQE = BIT_ULL(2);   // the simulator's bit

// CREATE_CEQ / DESTROY_CEQ (spec F.5).
inline constexpr uint64_t IRDMA_CQPSQ_CEQ_CEQID = GENMASK_ULL(9, 0);
inline constexpr uint64_t IRDMA_CQPSQ_CEQ_CEQSIZE = GENMASK_ULL(21, 0);  // qword2
inline constexpr uint32_t IRDMA_MAX_CEQ_SIZE = 262143;  // max_hw_ceq_size
inline constexpr uint32_t IRDMA_MAX_AEQ_SIZE = 1u << 19;  // the simulated device's largest AEQ
inline constexpr uint64_t IRDMA_CEQE_VALID = BIT_ULL(63);
inline constexpr uint64_t IRDMA_CEQE_CQCTX = GENMASK_ULL(62, 0);

// Interrupt control (spec E.4): CEQ n's routing, vector n's enable.
inline constexpr uint32_t IRDMA_GLINT_CEQCTL(uint32_t n) { return 0x0015C000 + 4 * n; }
inline constexpr uint32_t IRDMA_GLINT_DYN_CTL(uint32_t n) { return 0x00160000 + 4 * n; }
inline constexpr uint64_t IRDMA_GLINT_CEQCTL_MSIX_INDX = GENMASK_ULL(10, 0);
inline constexpr uint64_t IRDMA_GLINT_CEQCTL_ITR_INDX = GENMASK_ULL(12, 11);
inline constexpr uint64_t IRDMA_GLINT_CEQCTL_CAUSE_ENA = BIT_ULL(30);
inline constexpr uint64_t IRDMA_GLINT_DYN_CTL_INTENA = BIT_ULL(0);
inline constexpr uint64_t IRDMA_GLINT_DYN_CTL_CLEARPBA = BIT_ULL(1);
inline constexpr uint64_t IRDMA_GLINT_DYN_CTL_INTERVAL = GENMASK_ULL(16, 5);  // 2 us units
inline constexpr uint32_t IRDMA_IDX_NOITR = 3;
inline constexpr uint32_t IRDMA_PFINT_AEQCTL = 0x0016CB00;

// AEQE (spec C.6, GEN_1/2 layout): qword0 the context, qword1 these.
inline constexpr uint64_t IRDMA_AEQE_QPCQID_LOW = GENMASK_ULL(17, 0);
inline constexpr unsigned IRDMA_AEQE_QPCQID_LOW_BITS = 18;
inline constexpr uint64_t IRDMA_AEQE_AECODE = GENMASK_ULL(45, 34);
inline constexpr uint64_t IRDMA_AEQE_QPCQID_HI = BIT_ULL(46);
inline constexpr uint64_t IRDMA_AEQE_AESRC = GENMASK_ULL(53, 50);
inline constexpr uint64_t IRDMA_AEQE_VALID = BIT_ULL(63);
// Asynchronous event ids (the AECODE field; spec G.5), Linux's enum irdma_ae_code.
enum irdma_ae_code : uint16_t {
  IRDMA_AE_AMP_UNALLOCATED_STAG = 0x0102,
  IRDMA_AE_AMP_INVALID_STAG = 0x0103,
  IRDMA_AE_AMP_BAD_QP = 0x0104,
  IRDMA_AE_AMP_BAD_PD = 0x0105,
  IRDMA_AE_AMP_BAD_STAG_KEY = 0x0106,
  IRDMA_AE_AMP_BAD_STAG_INDEX = 0x0107,
  IRDMA_AE_AMP_BOUNDS_VIOLATION = 0x0108,
  IRDMA_AE_AMP_RIGHTS_VIOLATION = 0x0109,
  IRDMA_AE_AMP_TO_WRAP = 0x010a,
  IRDMA_AE_AMP_INVALIDATE_NO_REMOTE_ACCESS_RIGHTS = 0x0112,
  IRDMA_AE_AMP_MWBIND_VALID_STAG = 0x0114,
  IRDMA_AE_AMP_MWBIND_INVALID_RIGHTS = 0x0118,
  IRDMA_AE_AMP_MWBIND_INVALID_BOUNDS = 0x0119,
  IRDMA_AE_AMP_MWBIND_BIND_DISABLED = 0x011b,
  IRDMA_AE_PRIV_OPERATION_DENIED = 0x011c,
  IRDMA_AE_UDA_XMIT_DGRAM_TOO_LONG = 0x0132,
  IRDMA_AE_UDA_XMIT_BAD_PD = 0x0133,
  IRDMA_AE_UDA_XMIT_DGRAM_TOO_SHORT = 0x0134,
  IRDMA_AE_UDA_L4LEN_INVALID = 0x0135,
  IRDMA_AE_CQ_OPERATION_ERROR = 0x0203,
  IRDMA_AE_IB_INVALID_REQUEST = 0x0208,
  IRDMA_AE_WQE_UNEXPECTED_OPCODE = 0x020a,
  IRDMA_AE_IB_REMOTE_ACCESS_ERROR = 0x020d,
  IRDMA_AE_IB_REMOTE_OP_ERROR = 0x020e,
  IRDMA_AE_DDP_UBE_DDP_MESSAGE_TOO_LONG_FOR_AVAILABLE_BUFFER = 0x0303,
  IRDMA_AE_DDP_UBE_INVALID_MO = 0x0305,
  IRDMA_AE_ROCE_RSP_LENGTH_ERROR = 0x0316,
  IRDMA_AE_LLP_RECEIVED_MPA_CRC_ERROR = 0x0505,
  IRDMA_AE_LLP_SEGMENT_TOO_SMALL = 0x0507,
  IRDMA_AE_LLP_TOO_MANY_RETRIES = 0x050a,
  IRDMA_AE_LLP_TOO_MANY_RNRS = 0x050f,
  IRDMA_AE_LCE_QP_CATASTROPHIC = 0x0700,
  IRDMA_AE_LCE_CQ_CATASTROPHIC = 0x0702,
  IRDMA_AE_REMOTE_QP_CATASTROPHIC = 0x0703,
  IRDMA_AE_LOCAL_QP_CATASTROPHIC = 0x0704,
  IRDMA_AE_RCE_QP_CATASTROPHIC = 0x0705,
};
// AE sources (the AESRC field) that name a CQ.
enum irdma_ae_source : uint8_t {
  IRDMA_AE_SOURCE_CQ = 0x2,
  IRDMA_AE_SOURCE_CQ_0110 = 0x6,
  IRDMA_AE_SOURCE_CQ_1010 = 0xa,
  IRDMA_AE_SOURCE_CQ_1110 = 0xe,
};
// The odd sources name a QP (its RQ 0x1, its SQ 0x5, ...).
inline constexpr bool irdma_ae_source_is_qp(uint8_t src) { return src & 1; }
inline constexpr bool irdma_ae_source_is_cq(uint8_t src) {
  return src == IRDMA_AE_SOURCE_CQ || src == IRDMA_AE_SOURCE_CQ_0110 || src == IRDMA_AE_SOURCE_CQ_1010 ||
         src == IRDMA_AE_SOURCE_CQ_1110;
}

// ALLOC_STAG / DEALLOC_STAG.
inline constexpr uint64_t IRDMA_CQPSQ_STAG_STAGLEN = GENMASK_ULL(45, 0);  // qword1
inline constexpr uint64_t IRDMA_CQPSQ_STAG_PDID = GENMASK_ULL(63, 46);    // qword1 (GEN_2: 18 bits)
inline constexpr uint64_t IRDMA_CQPSQ_STAG_KEY = GENMASK_ULL(7, 0);       // qword2
inline constexpr uint64_t IRDMA_CQPSQ_STAG_IDX = GENMASK_ULL(31, 8);      // qword2
inline constexpr uint64_t IRDMA_CQPSQ_STAG_FIRSTPMPBLIDX = GENMASK_ULL(27, 0);  // qword6
inline constexpr uint64_t IRDMA_CQPSQ_STAG_LPBLSIZE = GENMASK_ULL(45, 44);
inline constexpr uint64_t IRDMA_CQPSQ_STAG_HPAGESIZE = GENMASK_ULL(47, 46);
inline constexpr uint64_t IRDMA_CQPSQ_STAG_ARIGHTS = GENMASK_ULL(52, 48);
inline constexpr uint64_t IRDMA_CQPSQ_STAG_VABASEDTO = BIT_ULL(59);
inline constexpr uint64_t IRDMA_CQPSQ_STAG_MWTYPE = BIT_ULL(42);
inline constexpr uint64_t IRDMA_CQPSQ_STAG_MR = BIT_ULL(43);
inline constexpr uint64_t IRDMA_CQPSQ_STAG_REMACCENABLED = BIT_ULL(53);

// CREATE_CQ / DESTROY_CQ (spec F.2/F.3, GEN_2 field widths).
inline constexpr uint64_t IRDMA_CQPSQ_CQ_SHADOW_READ_THRESHOLD = GENMASK_ULL(17, 0);
inline constexpr uint64_t IRDMA_CQPSQ_CQ_CQCTX = GENMASK_ULL(62, 0);
inline constexpr uint64_t IRDMA_CQPSQ_CQ_CQID = GENMASK_ULL(18, 0);
inline constexpr uint64_t IRDMA_CQPSQ_CQ_CEQID = GENMASK_ULL(31, 22);
inline constexpr uint64_t IRDMA_CQPSQ_CQ_CHKOVERFLOW = BIT_ULL(46);
inline constexpr uint64_t IRDMA_CQPSQ_CQ_VIRTMAP = BIT_ULL(47);
inline constexpr uint64_t IRDMA_CQPSQ_CQ_ENCEQEMASK = BIT_ULL(48);
inline constexpr uint64_t IRDMA_CQPSQ_CQ_CEQIDVALID = BIT_ULL(49);
inline constexpr uint64_t IRDMA_CQPSQ_CQ_AVOIDMEMCNFLCT = BIT_ULL(61);
inline constexpr uint64_t IRDMA_CQPSQ_CQ_CQRESIZE = BIT_ULL(43);  // MODIFY_CQ

// CREATE_QP / DESTROY_QP and the RoCE QP host context.
inline constexpr uint64_t IRDMA_CQPSQ_QP_QPID = GENMASK_ULL(23, 0);
inline constexpr uint64_t IRDMA_CQPSQ_QP_CQNUMVALID = BIT_ULL(47);
inline constexpr uint64_t IRDMA_CQPSQ_QP_QPTYPE = GENMASK_ULL(50, 48);
// FLUSH_WQES (spec F.7): qword2 carries the RQ's major/minor, then the SQ's.
inline constexpr uint8_t IRDMA_CQP_OP_FLUSH_WQES = 0x22;
inline constexpr uint64_t IRDMA_CQPSQ_FWQE_RQMNERR = GENMASK_ULL(15, 0);
inline constexpr uint64_t IRDMA_CQPSQ_FWQE_RQMJERR = GENMASK_ULL(31, 16);
inline constexpr uint64_t IRDMA_CQPSQ_FWQE_SQMNERR = GENMASK_ULL(47, 32);
inline constexpr uint64_t IRDMA_CQPSQ_FWQE_SQMJERR = GENMASK_ULL(63, 48);
inline constexpr uint64_t IRDMA_CQPSQ_FWQE_USERFLCODE = BIT_ULL(60);
inline constexpr uint64_t IRDMA_CQPSQ_FWQE_FLUSHSQ = BIT_ULL(61);
inline constexpr uint64_t IRDMA_CQPSQ_FWQE_FLUSHRQ = BIT_ULL(62);
inline constexpr uint8_t IRDMA_QP_TYPE_ROCE_RC = 3;
inline constexpr uint8_t IRDMA_QP_TYPE_ROCE_UD = 4;
inline constexpr uint64_t IRDMAQPC_RQWQESIZE = GENMASK_ULL(9, 8);     // qword0
inline constexpr uint64_t IRDMAQPC_PDIDXHI = GENMASK_ULL(21, 20);     // qword0: PD bits 17:16
inline constexpr uint64_t IRDMAQPC_PDIDX = GENMASK_ULL(63, 48);       // qword7: PD bits 15:0
inline constexpr uint64_t IRDMAQPC_RQSIZE = GENMASK_ULL(11, 8);       // qword3
inline constexpr uint64_t IRDMAQPC_SQSIZE = GENMASK_ULL(15, 12);      // qword3
inline constexpr uint64_t IRDMAQPC_DESTQP = GENMASK_ULL(23, 0);       // qword8
inline constexpr uint64_t IRDMAQPC_QKEY = GENMASK_ULL(63, 32);        // qword8
inline constexpr uint64_t IRDMAQPC_TXCQNUM = GENMASK_ULL(18, 0);      // qword17
inline constexpr uint64_t IRDMAQPC_RXCQNUM = GENMASK_ULL(50, 32);     // qword17
inline constexpr unsigned IRDMAQPC_SQADDR_QWORD = 1;
inline constexpr unsigned IRDMAQPC_RQADDR_QWORD = 2;
inline constexpr unsigned IRDMAQPC_SIZES_QWORD = 3;
inline constexpr unsigned IRDMAQPC_PDIDX_QWORD = 7;
inline constexpr unsigned IRDMAQPC_DESTQP_QWORD = 8;
inline constexpr unsigned IRDMAQPC_CQNUM_QWORD = 17;
inline constexpr unsigned IRDMAQPC_QPCOMPCTX_QWORD = 21;

// SQ/RQ WQEs (GEN_2 fragment format).
inline constexpr uint64_t IRDMAQPSQ_REMSTAG = GENMASK_ULL(31, 0);
inline constexpr uint64_t IRDMAQPSQ_AHID = GENMASK_ULL(16, 0);       // UD, within REMSTAG
inline constexpr uint64_t IRDMAQPSQ_DESTQKEY = GENMASK_ULL(31, 0);   // qword2, UD
inline constexpr uint64_t IRDMAQPSQ_DESTQPN = GENMASK_ULL(55, 32);   // qword2, UD
inline constexpr uint64_t IRDMAQPSQ_OPCODE = GENMASK_ULL(37, 32);
inline constexpr uint64_t IRDMAQPSQ_ADDFRAGCNT = GENMASK_ULL(41, 38);
inline constexpr uint64_t IRDMAQPSQ_IMMDATAFLAG = BIT_ULL(47);
inline constexpr uint64_t IRDMAQPSQ_SIGCOMPL = BIT_ULL(62);
inline constexpr uint64_t IRDMAQPSQ_VALID = BIT_ULL(63);
inline constexpr uint64_t IRDMAQPSQ_LOCSTAG = GENMASK_ULL(31, 0);  // atomics, qword1
// FAST_REG_NSMR and BIND_MW (one quantum).
inline constexpr uint64_t IRDMAQPSQ_STAGKEY = GENMASK_ULL(7, 0);
inline constexpr uint64_t IRDMAQPSQ_STAGINDEX = GENMASK_ULL(31, 8);
inline constexpr uint64_t IRDMAQPSQ_LPBLSIZE = GENMASK_ULL(45, 44);
inline constexpr uint64_t IRDMAQPSQ_HPAGESIZE = GENMASK_ULL(47, 46);
inline constexpr uint64_t IRDMAQPSQ_STAGRIGHTS = GENMASK_ULL(52, 48);
inline constexpr uint64_t IRDMAQPSQ_VABASEDTO = BIT_ULL(53);
inline constexpr uint64_t IRDMAQPSQ_MEMWINDOWTYPE = BIT_ULL(54);
inline constexpr uint64_t IRDMAQPSQ_REMOTE_ATOMICS_EN = BIT_ULL(55);
inline constexpr uint64_t IRDMAQPSQ_FIRSTPMPBLIDXHI = GENMASK_ULL(11, 0);  // qword1
inline constexpr uint64_t IRDMAQPSQ_PBLADDR = GENMASK_ULL(63, 12);         // qword1
inline constexpr uint64_t IRDMAQPSQ_FIRSTPMPBLIDXLO = GENMASK_ULL(63, 48); // qword2
inline constexpr uint64_t IRDMAQPSQ_STAGLEN = GENMASK_ULL(40, 0);          // qword2
inline constexpr uint64_t IRDMAQPSQ_PARENTMRSTAG = GENMASK_ULL(63, 32);    // qword1
inline constexpr uint64_t IRDMAQPSQ_MWSTAG = GENMASK_ULL(31, 0);           // qword1

// irdma_access_privileges (STAGRIGHTS).
inline constexpr uint8_t IRDMA_ACCESS_FLAGS_LOCALREAD = 0x01;
inline constexpr uint8_t IRDMA_ACCESS_FLAGS_LOCALWRITE = 0x02;
inline constexpr uint8_t IRDMA_ACCESS_FLAGS_REMOTEREAD_ONLY = 0x04;
inline constexpr uint8_t IRDMA_ACCESS_FLAGS_REMOTEREAD = 0x05;
inline constexpr uint8_t IRDMA_ACCESS_FLAGS_REMOTEWRITE_ONLY = 0x08;
inline constexpr uint8_t IRDMA_ACCESS_FLAGS_REMOTEWRITE = 0x0a;
inline constexpr uint8_t IRDMA_ACCESS_FLAGS_BIND_WINDOW = 0x10;
inline constexpr uint64_t IRDMAQPSQ_FRAG_LEN = GENMASK_ULL(62, 32);
inline constexpr uint64_t IRDMAQPSQ_FRAG_STAG = GENMASK_ULL(31, 0);
inline constexpr uint64_t IRDMAQPSQ_FRAG_VALID = BIT_ULL(63);

enum irdma_op_type : uint8_t {
  IRDMA_OP_TYPE_RDMA_WRITE = 0x00,
  IRDMA_OP_TYPE_RDMA_READ = 0x01,
  IRDMA_OP_TYPE_SEND = 0x03,
  IRDMA_OP_TYPE_SEND_INV = 0x04,
  IRDMA_OP_TYPE_SEND_SOL = 0x05,
  IRDMA_OP_TYPE_SEND_SOL_INV = 0x06,
  IRDMA_OP_TYPE_BIND_MW = 0x08,
  IRDMA_OP_TYPE_FAST_REG_NSMR = 0x09,
  IRDMA_OP_TYPE_INV_STAG = 0x0a,
  IRDMA_OP_TYPE_RDMA_READ_INV_STAG = 0x0b,
  IRDMA_OP_TYPE_NOP = 0x0c,
  IRDMA_OP_TYPE_RDMA_WRITE_SOL = 0x0d,
  IRDMA_OP_TYPE_ATOMIC_FETCH_AND_ADD = 0x0f,
  IRDMA_OP_TYPE_ATOMIC_COMPARE_AND_SWAP = 0x11,
  IRDMA_OP_TYPE_REC = 0x3e,
  IRDMA_OP_TYPE_REC_IMM = 0x3f,
};

enum irdma_cmpl_status : uint8_t {
  IRDMA_COMPL_STATUS_SUCCESS = 0,
  IRDMA_COMPL_STATUS_FLUSHED = 1,
  IRDMA_COMPL_STATUS_UNKNOWN = 24,
};

enum irdma_flush_opcode : uint16_t {
  FLUSH_INVALID = 0,
  FLUSH_GENERAL_ERR = 1,
  FLUSH_PROT_ERR = 2,
  FLUSH_REM_ACCESS_ERR = 3,
  FLUSH_LOC_QP_OP_ERR = 4,
  FLUSH_REM_OP_ERR = 5,
  FLUSH_LOC_LEN_ERR = 6,
  FLUSH_FATAL_ERR = 7,
  FLUSH_RETRY_EXC_ERR = 8,
  FLUSH_MW_BIND_ERR = 9,
  FLUSH_REM_INV_REQ_ERR = 10,
  FLUSH_RNR_RETRY_EXC_ERR = 11,
};
inline constexpr uint16_t IRDMA_FLUSH_MAJOR_ERR = 1;
// GEN_3: a flush whose minor is an asynchronous event id (irdma_ae_to_qp_err_code).
inline constexpr uint16_t IRDMA_SRQFLUSH_RSVD_MAJOR_ERR = 0xFFFE;
// GEN_3: an SQ error whose major code carries this signature in its top nibble is a
// non-fatal notice (the "CIE signature"; spec D.4).
inline constexpr uint16_t IRDMA_CIE_SIGNATURE_MASK = 0xF000;
inline constexpr uint16_t IRDMA_CIE_SIGNATURE = 0xE000;

// irdma_cq_poll_info::q_type (the CQE's SQ bit).
inline constexpr uint8_t IRDMA_CQE_QTYPE_RQ = 0;
inline constexpr uint8_t IRDMA_CQE_QTYPE_SQ = 1;

enum irdma_cmpl_notify : uint8_t {
  IRDMA_CQ_COMPL_EVENT = 0,
  IRDMA_CQ_COMPL_SOLICITED = 1,
};

}  // namespace irdma
