// What a device instance is: its generation, sizes, and the cycle costs of its stages.
#pragma once

#include <cstdint>
#include <optional>
#include <string>

namespace irdma_sim::device {

enum class FormatterKind { tlm, rtl };
enum class CqWriterKind { tlm, rtl };
// What the RTL CQ writer charges the engine: its own clock cycles, or the stage costs.
enum class CqWriterTiming { rtl, model };

// The CQ writer's costs are the RTL's cycles (rtl/cq_writer.v; rtl_bridge/README.md), each charged where the RTL spends it, so that a read or a write lands after the
// same cycles in both.
struct StageCycles {
  uint32_t doorbell = 4;     // decode a doorbell write, queue the work
  uint32_t cqp_wqe = 40;     // execute one control command
  uint32_t wqe_decode = 8;   // parse one SQ or RQ WQE
  uint32_t execute = 16;     // per message, on top of its DMA
  uint32_t cq_intake = 2;    // take a completion (and look up its ring) or an arm doorbell
  uint32_t cq_read = 1;      // issue a shadow-area read (before it)
  uint32_t cq_read_beat = 1; // each 8 bytes the read returns (after it)
  uint32_t cqe_format = 2;   // decide and format a CQE half (before its write)
  uint32_t cqe_write = 4;    // its address and data beats, side by side (before its write)
  uint32_t cq_respond = 3;   // the last write response or the decision, and the outcome
  uint32_t cq_context = 3;   // create, resize or destroy a CQ's context
};

struct DeviceConfig {
  uint8_t generation = 2;       // 2: GEN_2 (E810) rules; 3: GEN_3 (RQ opcodes, CQE rules)
  double clock_mhz = 500.0;
  StageCycles cycles;
  uint32_t max_cq = 1024;
  uint32_t max_qp = 1024;
  uint32_t max_stags = 16384;  // STag indexes 1 .. max_stags - 1
  uint32_t ceq_itr_us = 0;     // the interrupt moderation the driver programs (its ceq_itr)
  uint32_t num_ceqs = 1;
  uint32_t spare_msix = 0;     // MSI-X vectors beyond one per CEQ and one for the AEQ
  bool cq_resize = true;       // FEATURE_CQ_RESIZE: MODIFY_CQ may resize
  uint32_t msix_vectors() const { return num_ceqs + 1 + spare_msix; }
  uint32_t max_cqe = 1048574;   // largest CQ the device reports to ib-core
  // GLPE_CPUSTATUS0-2 read ready this long after power-on (the driver polls them 1 s apart).
  uint32_t ready_after_us = 0;
  // GLPCI_LBARCTRL's PE doorbell size: 1 = 4 MiB, 2 = 8 MiB; irdma refuses anything else.
  uint8_t pe_db_size = 2;
  bool cqe_64byte = false;
  // The CQ writer writes an extended CQE's main half before its extended half: with 32-byte
  // CQEs each half fills a slot of its own, written every pass, so the extended half's valid
  // bit tells the reader whether it landed. Off: the extended half first, so a reader that
  // sees the main half valid finds the rest valid too (which 64-byte CQEs need: a slot's
  // second half is written only for extended CQEs, and may be two passes old).
  bool cqe_main_half_first = false;
  uint32_t rnr_retry_cycles = 2000;  // until an SQ blocked on an empty peer RQ retries
  // A fault: the control QP wedges at the first command it takes this long after power-on,
  // and never completes it or any after it; unset: never.
  std::optional<uint64_t> cqp_hang_after_ns;
  // A fault: the function goes through a reset nobody on the host asked for this long after
  // power-on (as an E810 core reset, from firmware or the LAN function's driver, takes the
  // RDMA function's state with it): every queue and context gone, memory decode, bus
  // mastering and MSI-X off. Before the host enabled the function it strikes nothing.
  // Unset: never.
  std::optional<uint64_t> function_reset_at_ns;
  // What UD receives report about the (loopback) wire: the port's MAC, the VLAN tag
  // (0: untagged) and whether RoCEv2 runs over IPv4 (else IPv6).
  uint64_t mac = 0x001B21A0C0DEull;
  uint16_t ud_vlan_tci = 0;
  bool ud_ipv4 = true;
  // Whether a UD receive's buffer starts with the packet's 40-byte GRH, as RoCE hardware
  // writes it (rdma-core's UD consumers read the payload after it). Unset: no GRH, what
  // this project's own driver and workload read; the device host sets it.
  std::optional<bool> ud_grh;
  FormatterKind formatter = FormatterKind::tlm;
  // The RTL CQ writer (its own formatter inside) in lock-step with a TLM twin.
  CqWriterKind cq_writer = CqWriterKind::tlm;
  std::optional<CqWriterTiming> cq_writer_timing;  // unset: rtl
  // The RTL CQ writer counts toggle coverage as well as line coverage (many times slower).
  bool rtl_toggle_coverage = false;
  // A VCD file of the RTL block's pins (the CQ writer's, else the formatter's), in simulated
  // time ("": none). A scenario run puts a relative path in its output directory.
  std::string rtl_vcd;
};

// A setting of `d` that its choice of CQ writer and formatter would leave unused, said as
// "key 'NAME': why"; empty when every one is used.
inline std::string unused_rtl_setting(const DeviceConfig& d) {
  const bool rtl_writer = d.cq_writer == CqWriterKind::rtl;
  if (d.cq_writer_timing && !rtl_writer)
    return "key 'cq_writer_timing': it times the RTL CQ writer (device.cq_writer: rtl)";
  if (d.formatter == FormatterKind::rtl && rtl_writer)
    return "key 'formatter': the RTL CQ writer has its RTL formatter inside; 'formatter' chooses the TLM writer's";
  if (d.rtl_toggle_coverage && !rtl_writer)
    return "key 'rtl_toggle_coverage': coverage is counted by the RTL CQ writer (device.cq_writer: rtl)";
  if (d.cqe_main_half_first && rtl_writer)
    return "key 'cqe_main_half_first': the RTL CQ writer writes the extended half first, as its TLM twin must";
  if (!d.rtl_vcd.empty() && !rtl_writer && d.formatter != FormatterKind::rtl)
    return "key 'rtl_vcd': waveforms come from an RTL block (device.cq_writer: rtl or device.formatter: rtl)";
  return {};
}

}  // namespace irdma_sim::device
