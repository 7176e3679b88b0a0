// The device's register map and descriptor fields as the silicon defines them (GEN_2
// PF BAR0; spec C, D.9, F). Kept apart from the driver's copy on purpose.
#pragma once

#include <cstdint>

namespace irdma_sim::device::regs {

constexpr uint64_t mask(unsigned hi, unsigned lo) { return (~0ull >> (63 - hi)) & (~0ull << lo); }
constexpr uint64_t get(uint64_t word, unsigned hi, unsigned lo) { return (word & mask(hi, lo)) >> lo; }
constexpr bool bit(uint64_t word, unsigned n) { return (word >> n) & 1; }

// BAR0 offsets.
inline constexpr uint64_t CQPDB = 0x00500800;
inline constexpr uint64_t CQPTAIL = 0x00500880;
inline constexpr uint64_t CQARM = 0x00502C00;
inline constexpr uint64_t CQACK = 0x00502C80;
inline constexpr uint64_t AEQALLOC = 0x00502D00;
inline constexpr uint64_t WQEALLOC = 0x00504400;
inline constexpr uint64_t GLINT_CEQCTL = 0x0015C000;   // + 4 n: CEQ n's MSI-X routing
inline constexpr uint64_t GLINT_DYN_CTL = 0x00160000;  // + 4 n: vector n's enable
inline constexpr uint64_t PFINT_AEQCTL = 0x0016CB00;   // the AEQ's MSI-X routing
inline constexpr uint64_t CCQPSTATUS = 0x0050A000;
inline constexpr uint64_t CCQPLOW = 0x0050A080;
inline constexpr uint64_t CCQPHIGH = 0x0050A100;
inline constexpr uint64_t CQPERRCODES = 0x0050A200;
// This model's stand-in for the HMC's page-list (PBLE) object, which irdma sets up through
// HMC segment descriptors: the host address of an array of 8-byte page addresses and its
// length in entries. FAST_REG_NSMR's FIRSTPMPBLIDX indexes it.
inline constexpr uint64_t PBLE_BASE_LO = 0x0050A300;
inline constexpr uint64_t PBLE_BASE_HI = 0x0050A380;
inline constexpr uint64_t PBLE_COUNT = 0x0050A400;
// This model's MSI-X table (16-byte PCI MSI-X entries); the real E810 keeps it in another
// BAR, which the model folds into BAR0 above the register space.
inline constexpr uint64_t MSIX_TABLE = 0x00800000;
inline constexpr uint64_t BAR0_SIZE = 0x01000000;

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
  OP_DEALLOC_STAG = 0x0d,
  OP_CREATE_CEQ = 0x16,
  OP_DESTROY_CEQ = 0x18,
  OP_CREATE_AEQ = 0x19,
  OP_DESTROY_AEQ = 0x1b,
  OP_FLUSH_WQES = 0x22,
};

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
inline constexpr uint16_t FLUSH_MW_BIND_ERR = 9;
inline constexpr uint16_t FLUSH_REM_INV_REQ_ERR = 10;

}  // namespace irdma_sim::device::regs
