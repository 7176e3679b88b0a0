// The fields of the descriptors the device reads and writes in host memory: SQ and RQ
// WQEs, the QP host context, CQP WQEs, the CQ shadow area, CQEs, CEQEs and AEQEs (spec C,
// F). Named after Linux's irdma names, restated here apart from the driver's copy.
#pragma once

#include "model/device/regs.h"

namespace irdma_sim::device::regs {

// SQ and RQ WQEs: the header in qword3, fragment slots of (address, qword with the length).
inline constexpr Field WQE_ADDFRAGCNT{41, 38};  // fragment slots after the first
inline constexpr Flag WQE_VALID{63};            // the pass polarity the WQE was posted in
inline constexpr Field WQE_FRAG_LEN{62, 32};
inline constexpr Field WQE_FRAG_STAG{31, 0};

// SQ WQE header (qword3).
inline constexpr Field SQ_WQE_OPCODE{37, 32};
inline constexpr Field SQ_WQE_REMSTAG{31, 0};
inline constexpr Flag SQ_WQE_IMMDATAFLAG{47};  // immediate data in qword0, not a fragment
inline constexpr Flag SQ_WQE_SIGCOMPL{62};
// UD SEND (qword2).
inline constexpr Field SQ_WQE_DESTQKEY{31, 0};
inline constexpr Field SQ_WQE_DESTQPN{55, 32};
// INV_STAG (qword1).
inline constexpr Field SQ_WQE_LOCSTAG{31, 0};
// FAST_REG_NSMR and BIND_MW: qword3 unless said.
inline constexpr Field SQ_WQE_STAG{31, 0};  // FAST_REG_NSMR: STAGINDEX 31:8 and STAGKEY 7:0
inline constexpr Field SQ_WQE_LPBLSIZE{45, 44};
inline constexpr Field SQ_WQE_HPAGESIZE{47, 46};
inline constexpr Field SQ_WQE_STAGRIGHTS{52, 48};
inline constexpr Flag SQ_WQE_VABASEDTO{53};
inline constexpr Flag SQ_WQE_MEMWINDOWTYPE{54};
inline constexpr Flag SQ_WQE_REMOTE_ATOMICS_EN{55};
inline constexpr Field SQ_WQE_FIRSTPMPBLIDXHI{11, 0};   // qword1
inline constexpr Field SQ_WQE_FIRSTPMPBLIDXLO{63, 48};  // qword2
inline constexpr Field SQ_WQE_STAGLEN{40, 0};           // qword2
inline constexpr Field SQ_WQE_MWSTAG{31, 0};            // qword1
inline constexpr Field SQ_WQE_PARENTMRSTAG{63, 32};     // qword1

// QP host context (RoCE): the qwords holding whole values, then fields by qword.
inline constexpr unsigned QPC_SQADDR_QWORD = 1;
inline constexpr unsigned QPC_RQADDR_QWORD = 2;
inline constexpr unsigned QPC_SIZES_QWORD = 3;
inline constexpr unsigned QPC_PDIDX_QWORD = 7;
inline constexpr unsigned QPC_DESTQP_QWORD = 8;
inline constexpr unsigned QPC_CQNUM_QWORD = 17;
inline constexpr unsigned QPC_QPCOMPCTX_QWORD = 21;  // echoed in each CQE's qword1
inline constexpr Field QPC_RQWQESIZE{9, 8};          // qword0: RQ WQE = 32 << this bytes
inline constexpr Field QPC_PDIDXHI{21, 20};           // qword0: PD bits 17:16
inline constexpr Field QPC_PDIDX{63, 48};             // qword7: PD bits 15:0
inline constexpr Field QPC_RQSIZE{11, 8};            // sizes are log2(quanta) - 2
inline constexpr Field QPC_SQSIZE{15, 12};
inline constexpr Field QPC_DESTQP{23, 0};
inline constexpr Field QPC_QKEY{63, 32};
inline constexpr Field QPC_TXCQNUM{18, 0};
inline constexpr Field QPC_RXCQNUM{50, 32};

// CQP host context.
inline constexpr Field CQPHC_SQSIZE{11, 8};     // qword0: log2(entries) - 1
inline constexpr Field CQPHC_HW_MAJVER{31, 16};  // qword4: GEN_2 is 1, GEN_3 is 2

// CQP WQEs: the header in qword3.
inline constexpr Field CQP_WQE_OPCODE{37, 32};
inline constexpr Flag CQP_WQE_VALID{63};
inline constexpr Field CQP_WQE_BUFSIZE{31, 0};  // COMMIT_FPM_VAL, QUERY_RDMA_FEATURES
// CREATE_CQ, MODIFY_CQ, DESTROY_CQ: qword3 unless said.
inline constexpr Field CQP_CQ_CQID{18, 0};
inline constexpr Field CQP_CQ_CQCTX{62, 0};                 // qword1
inline constexpr Field CQP_CQ_SHADOW_READ_THRESHOLD{17, 0};  // qword2
inline constexpr Field CQP_CQ_CEQID{31, 22};
inline constexpr Flag CQP_CQ_CQRESIZE{43};  // MODIFY_CQ
inline constexpr Flag CQP_CQ_CHKOVERFLOW{46};
inline constexpr Flag CQP_CQ_VIRTMAP{47};  // a PBL-mapped ring
inline constexpr Flag CQP_CQ_ENCEQEMASK{48};
inline constexpr Flag CQP_CQ_CEQIDVALID{49};
inline constexpr Flag CQP_CQ_AVOIDMEMCNFLCT{61};  // 64-byte CQEs
// CREATE_QP, MODIFY_QP, DESTROY_QP (qword3; qword2 the host context's address).
inline constexpr Field CQP_QP_QPID{23, 0};
inline constexpr Field CQP_QP_QPTYPE{50, 48};
// FLUSH_WQES: the QP as CQP_QP_QPID, flags in qword3, the minor codes in qword2.
inline constexpr Field CQP_FWQE_RQMNERR{15, 0};
inline constexpr Field CQP_FWQE_SQMNERR{47, 32};
inline constexpr Flag CQP_FWQE_USERFLCODE{60};
inline constexpr Flag CQP_FWQE_FLUSHSQ{61};
inline constexpr Flag CQP_FWQE_FLUSHRQ{62};
// ALLOC_STAG, DEALLOC_STAG.
inline constexpr Field CQP_STAG_STAGLEN{45, 0};  // qword1
inline constexpr Field CQP_STAG_PDID{63, 46};    // qword1 (GEN_2: 18 bits)
inline constexpr Field CQP_STAG_KEY{7, 0};       // qword2
inline constexpr Field CQP_STAG_IDX{31, 8};      // qword2
inline constexpr Field CQP_STAG_FIRSTPMPBLIDX{27, 0};  // qword6 (REG_MR with a page list)
inline constexpr Field CQP_STAG_LPBLSIZE{45, 44};  // qword3: 0 = one address in qword4, 1 = a page list
inline constexpr Field CQP_STAG_HPAGESIZE{47, 46};  // qword3: 0 = 4 KiB
inline constexpr Field CQP_STAG_ARIGHTS{52, 48};    // qword3
inline constexpr Flag CQP_STAG_VABASEDTO{59};       // qword3
inline constexpr Flag CQP_STAG_MWTYPE{42};       // qword3: 1 = type 1 window
inline constexpr Flag CQP_STAG_MR{43};           // qword3: 1 = region, 0 = window
// CREATE_CEQ, DESTROY_CEQ; CREATE_AEQ follows its layout (this model's choice).
inline constexpr Field CQP_CEQ_CEQID{9, 0};     // qword3
inline constexpr Field CQP_CEQ_CEQSIZE{21, 0};  // qword2
inline constexpr Field CQP_AEQ_AEQSIZE{31, 0};  // qword2
// UPDATE_PE_SDS (qword3): SD entries beyond the WQE's three, in a buffer.
inline constexpr Field CQP_UPESD_ENTRY_COUNT{3, 0};

// CQ shadow area qword4: the driver's arm request. Qword0 is the driver's head.
inline constexpr Field CQ_DBSA_SW_CQ_SELECT{13, 0};  // rings retired by resizes, as drained
inline constexpr Flag CQ_DBSA_ARM_NEXT{14};
inline constexpr Flag CQ_DBSA_ARM_NEXT_SE{15};
inline constexpr Field CQ_DBSA_ARM_SEQ_NUM{17, 16};

// CQE: the main half's qword0, qword2 and qword3; qword1 is the QP's completion context.
inline constexpr Field CQE_PAYLDLEN{31, 0};
inline constexpr Field CQE_TCPSEQNUMRTT{63, 32};
inline constexpr Field CQE_INVSTAG_OR_UDSRCQPN{31, 0};
inline constexpr Field CQE_QPID{55, 32};
inline constexpr Field CQE_MINERR{15, 0};
inline constexpr Field CQE_MAJERR{31, 16};
inline constexpr Field CQE_WQEIDX{46, 32};
inline constexpr Flag CQE_EXTCQE{50};
inline constexpr Flag CQE_PSHDROP{51};
inline constexpr Flag CQE_STAG_OR_IPV4{53};
inline constexpr Flag CQE_SOEVENT{54};
inline constexpr Flag CQE_ERROR{55};
inline constexpr Field CQE_OP{61, 56};
inline constexpr Flag CQE_SQ{62};
inline constexpr Flag CQE_VALID{63};  // in qword3 of each half
// The extended half's qword0, qword2 and qword3.
inline constexpr Field CQE_IMMDATALOW32{31, 0};
inline constexpr Field CQE_UDSMAC{47, 0};
inline constexpr Field CQE_UDVLAN{63, 48};
inline constexpr Flag CQE_UDVLANVALID{60};
inline constexpr Flag CQE_UDSMACVALID{61};
inline constexpr Flag CQE_IMMVALID{62};

// CEQE: one qword.
inline constexpr Field CEQE_CQCTX{62, 0};
inline constexpr Flag CEQE_VALID{63};

// AEQE (GEN_2 layout): qword0 the object's context, qword1 these.
inline constexpr Field AEQE_QPCQID_LOW{17, 0};
inline constexpr Field AEQE_AECODE{45, 34};
inline constexpr Field AEQE_QPCQID_HI{46, 46};  // the id's next bit
inline constexpr Field AEQE_AESRC{53, 50};
inline constexpr Flag AEQE_VALID{63};

}  // namespace irdma_sim::device::regs
