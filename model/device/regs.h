// The device's register map and descriptor fields as the silicon defines them (GEN_2
// PF BAR0; spec C, D.9, F). Kept apart from the driver's copy on purpose.
#pragma once

#include <cstdint>

namespace irdma_sim::device::regs {

// A field of a 64-bit register or descriptor word: bits hi down to lo. Every field the
// device reads or writes is named once (here and in descriptor_fields.h), never by number
// at the place it is used.
struct Field {
  unsigned hi, lo;
  constexpr unsigned width() const { return hi - lo + 1; }
  constexpr uint64_t mask() const { return (~0ull >> (63 - hi)) & (~0ull << lo); }
};
// A one-bit flag.
struct Flag {
  unsigned n;
};

constexpr uint64_t get(uint64_t word, Field f) { return (word & f.mask()) >> f.lo; }
constexpr bool bit(uint64_t word, Flag f) { return (word >> f.n) & 1; }
// `value` placed in its field, bits that do not fit dropped.
constexpr uint64_t put(Field f, uint64_t value) { return (value << f.lo) & f.mask(); }
constexpr uint64_t put(Flag f, bool value) { return uint64_t(value) << f.n; }

// BAR0 offsets.
inline constexpr uint64_t CQPDB = 0x00500800;
inline constexpr uint64_t CQPTAIL = 0x00500880;
inline constexpr uint64_t CQARM = 0x00502C00;
inline constexpr uint64_t CQACK = 0x00502C80;
inline constexpr uint64_t AEQALLOC = 0x00502D00;
inline constexpr uint64_t WQEALLOC = 0x00504400;
// The doorbell page user space maps, 64 KiB below the end of the PE doorbell space
// (GLPCI_LBARCTRL's size): an SQ doorbell at +0 and a CQ arm at +64, written as WQEALLOC and
// CQARM are.
inline constexpr uint64_t USER_DB_PAGE_4M = 0x003F0000;
inline constexpr uint64_t USER_DB_PAGE_8M = 0x007F0000;
inline constexpr uint64_t USER_DB_CQ_OFFSET = 64;
inline constexpr uint64_t GLINT_CEQCTL = 0x0015C000;   // + 4 n: CEQ n's MSI-X routing
inline constexpr uint64_t GLINT_DYN_CTL = 0x00160000;  // + 4 n: vector n's enable
inline constexpr uint64_t PFINT_AEQCTL = 0x0016CB00;   // the AEQ's MSI-X routing
inline constexpr uint64_t CCQPSTATUS = 0x0050A000;
inline constexpr uint64_t CCQPLOW = 0x0050A080;
inline constexpr uint64_t CCQPHIGH = 0x0050A100;
inline constexpr uint64_t CQPERRCODES = 0x0050A200;
inline constexpr uint64_t GLPE_CPUSTATUS0 = 0x0050BA5C;  // 1 and 2 follow, 4 bytes apart
inline constexpr uint64_t GLPCI_LBARCTRL = 0x0009DE74;
// Interrupt routing (GLINT_CEQCTL, PFINT_AEQCTL) and vector control (GLINT_DYN_CTL).
inline constexpr Field GLINT_CEQCTL_MSIX_INDX{10, 0};
inline constexpr Flag GLINT_CEQCTL_CAUSE_ENA{30};
inline constexpr Field PFINT_AEQCTL_MSIX_INDX{10, 0};
inline constexpr Flag PFINT_AEQCTL_CAUSE_ENA{30};
inline constexpr Flag GLINT_DYN_CTL_INTENA{0};
inline constexpr Flag GLINT_DYN_CTL_CLEARPBA{1};
inline constexpr Field GLINT_DYN_CTL_INTERVAL{16, 5};  // 2 us units
inline constexpr Field WQEALLOC_QPID{17, 0};
inline constexpr uint32_t CPUSTATUS_READY = 0x80;
inline constexpr unsigned LBARCTRL_PE_DB_SIZE_SHIFT = 4;  // bits 5:4: 1 = 4 MiB, 2 = 8 MiB
inline constexpr uint64_t BAR0_SIZE = 0x02000000;         // 32 MiB, as on E810
// BAR3: the MSI-X table (16-byte PCI entries) and its pending-bit array, as on E810.
inline constexpr uint8_t MSIX_BAR = 3;
inline constexpr uint64_t BAR3_SIZE = 0x10000;
inline constexpr uint32_t MSIX_TABLE_OFFSET = 0;
inline constexpr uint32_t MSIX_PBA_OFFSET = 0x8000;
inline constexpr unsigned MSIX_MAX_VECTORS = 2048;  // the table must end below the PBA

inline constexpr uint32_t CCQPSTATUS_DONE = 1u << 0;
inline constexpr uint32_t CCQPSTATUS_ERR = 1u << 31;
inline constexpr uint32_t CQPTAIL_OP_ERR = 1u << 31;

// CQP opcodes (WQE qword3 37:32).
enum CqpOp : uint8_t {
  OP_CREATE_QP = 0x00,
  OP_MODIFY_QP = 0x01,
  OP_DESTROY_QP = 0x02,
  OP_CREATE_CQ = 0x03,
  OP_MODIFY_CQ = 0x04,
  OP_DESTROY_CQ = 0x05,
  OP_ALLOC_STAG = 0x09,
  OP_REG_MR = 0x0a,
  OP_DEALLOC_STAG = 0x0d,
  OP_QUERY_RDMA_FEATURES = 0x12,
  OP_CREATE_CEQ = 0x16,
  OP_DESTROY_CEQ = 0x18,
  OP_CREATE_AEQ = 0x19,
  OP_DESTROY_AEQ = 0x1b,
  OP_UPDATE_PE_SDS = 0x1f,
  OP_QUERY_FPM_VAL = 0x20,
  OP_COMMIT_FPM_VAL = 0x21,
  OP_FLUSH_WQES = 0x22,
};

// HMC set-up (hmc.h). QUERY_FPM_VAL's qword at 120 holds the CEQ count.
inline constexpr uint32_t FPM_MAX_CEQS_OFFSET = 120;
inline constexpr uint64_t FPM_MAX_CEQS_MASK = 0x7FF;  // 10:0
inline constexpr uint64_t SD_CMD_VALID = 1ull << 63;  // entries 1 and 2 of a WQE
inline constexpr uint64_t SD_CMD_WRITE = 1ull << 31;
inline constexpr Field SD_CMD_INDEX{11, 0};
inline constexpr uint64_t SD_VALID = 1ull << 0;
inline constexpr uint64_t SD_TYPE_DIRECT = 1ull << 1;  // else paged
// QUERY_RDMA_FEATURES: qwords of type (63:48) and value (47:0); FW_INFO's 47:32 counts them.
enum FeatureType : uint16_t {
  FEATURE_FW_INFO = 0,
  FEATURE_FTN_FLAGS = 32,
  FEATURE_SIM_MAX_CQE = 0x8000,  // this model's: the largest CQ it reports to ib-core
};
inline constexpr uint64_t FTN_FLAG_ATOMICS = 1ull << 0;
inline constexpr uint64_t FTN_FLAG_CQ_RESIZE = 1ull << 1;   // this model's bit
inline constexpr uint64_t FTN_FLAG_64BYTE_CQE = 1ull << 2;  // this model's bit
inline constexpr uint64_t kFirmwareVersion = 1u << 16;      // 1.0: major 31:16, minor 15:0

inline constexpr uint8_t QP_TYPE_ROCE_UD = 4;  // CREATE_QP QPTYPE

// SQ WQE opcodes (WQE qword3 37:32) and what the RQ CQE's op field carries on RoCE: the
// BTH opcode of the message's last packet.
enum SqOp : uint8_t {
  SQ_RDMA_WRITE = 0x00,
  SQ_RDMA_READ = 0x01,
  SQ_SEND = 0x03,
  SQ_SEND_INV = 0x04,
  SQ_SEND_SOL = 0x05,
  SQ_SEND_SOL_INV = 0x06,
  SQ_BIND_MW = 0x08,
  SQ_FAST_REG_NSMR = 0x09,
  SQ_INV_STAG = 0x0a,
  SQ_RDMA_READ_INV_STAG = 0x0b,
  SQ_NOP = 0x0c,
  SQ_RDMA_WRITE_SOL = 0x0d,
  SQ_ATOMIC_FETCH_ADD = 0x0f,
  SQ_ATOMIC_COMPARE_SWAP = 0x11,
};
inline constexpr uint8_t BTH_SEND_ONLY = 0x04;
inline constexpr uint8_t BTH_SEND_ONLY_WITH_IMMEDIATE = 0x05;
inline constexpr uint8_t BTH_SEND_ONLY_WITH_INVALIDATE = 0x17;
inline constexpr uint8_t BTH_RDMA_WRITE_ONLY_WITH_IMMEDIATE = 0x0b;

// CQP completion codes. Majors and minors other than the spec's are this model's own.
inline constexpr uint16_t CQP_MAJOR_ERROR = 0xFFFF;
enum CqpMinor : uint16_t {
  CQP_MINOR_BAD_OPCODE = 0x0001,
  CQP_MINOR_BAD_ID = 0x0002,
  CQP_MINOR_ID_IN_USE = 0x0003,
  CQP_MINOR_NO_SUCH_OBJECT = 0x0004,
  CQP_MINOR_BAD_SIZE = 0x0005,
  CQP_MINOR_UNSUPPORTED = 0x0006,
  CQP_MINOR_DMA_ERROR = 0x0007,
  CQP_MINOR_IN_USE = 0x0008,
};

// A message that fails completes with this model's major code (not 1: a flush CQE stands
// for a whole queue on GEN_2) and a minor naming the reason with spec G.5's flush codes.
// The QP keeps running; moving it to the error state and flushing is not modelled yet.
inline constexpr uint16_t MSG_ERROR_MAJOR = 0x0002;
// Flush CQEs: major 1 with the QP's flush code; later ones of a GEN_3 flush carry the
// generic code.
inline constexpr uint16_t FLUSH_MAJOR = 1;
inline constexpr uint16_t FLUSH_GENERAL_ERR = 1;
inline constexpr uint16_t FLUSH_RETRY_EXC_ERR = 8;
inline constexpr uint16_t FLUSH_PROT_ERR = 2;
inline constexpr uint16_t FLUSH_REM_ACCESS_ERR = 3;
inline constexpr uint16_t FLUSH_LOC_QP_OP_ERR = 4;
inline constexpr uint16_t FLUSH_REM_OP_ERR = 5;
inline constexpr uint16_t FLUSH_LOC_LEN_ERR = 6;
inline constexpr uint16_t FLUSH_FATAL_ERR = 7;
inline constexpr uint16_t FLUSH_MW_BIND_ERR = 9;
inline constexpr uint16_t FLUSH_REM_INV_REQ_ERR = 10;

}  // namespace irdma_sim::device::regs
