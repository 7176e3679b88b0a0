// The irdma device as a PCIe endpoint: configuration space (identity, BAR sizes, MSI-X and
// PCI Express capabilities), one target socket for BAR and configuration accesses
// (addressed as VFIO regions: BAR0 registers and doorbells, BAR3 the MSI-X table and PBA,
// region 7 the configuration space), a DMA initiator socket into host memory, and MSI-X
// raised as memory writes. One engine thread executes the work doorbells queue, in
// arrival order.
#pragma once

#include <cstdint>
#include <memory>
#include <deque>
#include <functional>
#include <queue>
#include <set>
#include <utility>
#include <vector>

#include <systemc>

#include "model/sc_compat.h"
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/device/aeq_engine.h"
#include "model/device/ceq_engine.h"
#include "model/device/msix_vectors.h"
#include "model/device/cq_engine.h"
#include "model/device/cqp_engine.h"
#include "model/device/device_config.h"
#include "model/device/dma_port.h"
#include "model/device/engine_time.h"
#include "model/device/hmc.h"
#include "model/device/pci_config.h"
#include "model/device/qp_engine.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::device {

struct DeviceCounters {
  uint64_t mmio_writes = 0;
  uint64_t mmio_reads = 0;
  uint64_t bad_mmio = 0;       // refused: no such register, a bad width, or memory decode off
  uint64_t sq_doorbells = 0;   // WQEALLOC writes
  uint64_t cq_arms = 0;
  uint64_t cq_acks = 0;        // CQACK writes, whether or not their CQ still exists
  uint64_t msix_sent = 0;
  uint64_t msix_masked = 0;          // not sent when raised: masked (then held pending) or no host
  uint64_t msix_sent_on_unmask = 0;  // of the held ones, sent when their entry or the function was unmasked
  uint64_t bad_doorbells = 0;  // CQARM for a CQ that does not exist
  uint64_t function_resets = 0;
  uint64_t first_function_reset_ps = 0;  // when the first struck (0: none)
  uint64_t mmio_refused_in_reset = 0;  // BAR accesses refused from a reset until the host enables memory again (not in bad_mmio)
};

class IrdmaDevice : public sc_core::sc_module {
 public:
  IRDMA_SC_HAS_PROCESS(IrdmaDevice);
  tlm_utils::simple_target_socket<IrdmaDevice> pci;
  tlm_utils::simple_initiator_socket<IrdmaDevice> dma;

  // Vendor 0x1234 (assigned to no silicon; QEMU's edu and other emulated devices use it),
  // so no host driver binds to the model for a real device; device 0x1D00 + generation.
  static constexpr uint16_t kPciVendor = 0x1234;
  static constexpr uint16_t kPciDeviceBase = 0x1D00;

  IrdmaDevice(sc_core::sc_module_name name, const DeviceConfig& cfg, sc_core::sc_time quantum,
              trace::TraceLog& trace, const CqWriterFactory& make_cq_writer);

  // The MSI-X output. Unset, a vector leaves as its table entry's memory write through the
  // DMA socket (a host that programs the table, as a PCI core does); set, it leaves as the
  // vector itself (a host that delivers interrupts by vector, as a vfio-user server does),
  // which returns false for a vector it has masked.
  std::function<bool(unsigned vector)> msix_out;

  // Sends MSI-X `vector` now, as its table entry says; a masked or unprogrammed vector is
  // counted and not sent.
  void schedule_msix(unsigned vector) { msix_at(vector, sc_core::sc_time_stamp().value()); }

  // Function level reset (PCIe's FLR), as the Device Control register's Initiate FLR, the
  // host's VFIO DEVICE_RESET or DeviceConfig::function_reset_at_ns asks: memory decode, bus
  // mastering and MSI-X off at once (nothing more leaves the function), every engine's
  // queues and contexts gone once the engine is done with the work in hand. The function
  // answers BAR accesses again when the host enables memory decode, and reads ready
  // (GLPE_CPUSTATUS) ready_after_us later. `cause` names it in the transaction log.
  void function_reset(const char* cause);

  // Error injection (see QpEngine::inject_fault).
  bool inject_fault(uint32_t qp_id, uint64_t nth_request, uint16_t flush_minor) {
    return qp_.inject_fault(qp_id, nth_request, flush_minor);
  }

  const DeviceConfig& config() const { return cfg_; }
  const DeviceCounters& counters() const { return counters_; }
  const CqEngine& cq_engine() const { return cq_; }
  CqEngine& cq_engine() { return cq_; }
  const CeqEngine& ceq_engine() const { return ceq_; }
  const AeqEngine& aeq_engine() const { return aeq_; }
  const MsixVectors& vectors() const { return vectors_; }
  const QpEngine& qp_engine() const { return qp_; }
  const CqpEngine& cqp_engine() const { return cqp_; }
  uint64_t dma_errors() const { return dma_port_.errors(); }
  uint64_t dma_reads_aborted() const { return dma_port_.aborted_reads(); }  // of dma_errors
  uint64_t dma_blocked() const { return dma_port_.blocked(); }

 private:
  // Register writes that touch device state the engine owns run on it, in arrival order.
  enum class WorkKind {
    cqp_start, cqp_stop, cqp_doorbell, sq_doorbell, sq_retry, cq_arm, cq_ack, dyn_ctl, aeq_alloc
  };
  struct Work {
    uint64_t due_ps;
    uint64_t seq;
    WorkKind kind;
    uint64_t arg;
    bool operator>(const Work& o) const {
      return due_ps != o.due_ps ? due_ps > o.due_ps : seq > o.seq;
    }
  };
  struct MsixEntry {
    uint64_t addr = 0;
    uint32_t data = 0;
    uint32_t ctrl = 1;  // masked until programmed
    bool pending = false;  // its PBA bit: raised while masked
  };

  void pci_b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  void invalidate_dma_dmi(sc_dt::uint64 start, sc_dt::uint64 end) { dma_port_.invalidate_dmi(start, end); }
  bool config_access(tlm::tlm_generic_payload& trans, uint64_t offset);
  bool msix_access(tlm::tlm_generic_payload& trans, uint64_t offset);
  uint32_t read_reg(uint64_t offset);
  void write_reg(uint64_t offset, uint32_t value, uint64_t due_ps);
  void queue(WorkKind kind, uint64_t arg, uint64_t due_ps);
  void queue_sq(WorkKind kind, uint64_t qp_id, uint64_t due_ps);
  // Arms, acknowledgements and interrupt enables: served in arrival order as soon as they
  // are due, between the SQ engine's WQEs too, as a block of their own would.
  void control(WorkKind kind, uint64_t arg, uint64_t due_ps);
  void run_due_control();
  void engine_thread();
  void run(const Work& w);
  // The interrupt block: an MSI-X due now goes out from the engine, right behind the CEQE
  // or AEQE that caused it; one that moderation holds back goes out at its due time
  // (msix_at) from a process of its own, whatever the engine is busy with.
  void msix_at(unsigned vector, uint64_t due_ps);
  void send_due_msix();
  void raise_msix(unsigned vector, bool from_engine);
  // Sends the messages held for entries no longer masked (PCIe's MSI-X pending bits).
  void send_unmasked_pending();
  // The engines' half of a function reset, run by the engine between work items.
  void reset_engines();
  void reset_fault_thread();

  DeviceConfig cfg_;
  trace::TraceLog& trace_;
  PciConfigSpace config_;
  EngineTime time_;
  DmaPort dma_port_;
  Hmc hmc_;
  MsixVectors vectors_;
  CeqEngine ceq_;
  AeqEngine aeq_;
  CqEngine cq_;
  StagTable stags_;
  QpEngine qp_;
  CqpEngine cqp_;
  std::priority_queue<Work, std::vector<Work>, std::greater<Work>> work_;
  std::deque<Work> control_;
  std::set<std::pair<uint64_t, WorkKind>> sq_queued_;  // (QP, sq_doorbell or sq_retry) in work_
  uint64_t work_seq_ = 0;
  sc_core::sc_event work_ev_;
  std::priority_queue<std::pair<uint64_t, unsigned>, std::vector<std::pair<uint64_t, unsigned>>,
                      std::greater<>>
      msix_due_;  // (due time, vector), oldest first
  sc_core::sc_event msix_timer_;
  bool engines_reset_pending_ = false;  // function_reset ran, reset_engines not yet
  bool refusing_since_reset_ = false;   // reset, and memory decode not enabled again since
  uint64_t ready_at_ps_;  // GLPE_CPUSTATUS reads ready from then on
  uint32_t ccqp_high_ = 0;
  uint32_t ccqp_low_ = 0;
  std::vector<MsixEntry> msix_;
  DeviceCounters counters_;
};

}  // namespace irdma_sim::device
