// The PCIe link and root complex between the host and the device: MMIO and configuration
// accesses from the host to the device's regions, DMA from the device into host memory, and MSI-X writes routed to the
// host's interrupt controller. Adds link latency, serialisation at the link bandwidth with
// per-TLP overhead, and logs every transaction it carries.
#pragma once

#include <array>
#include <cstdint>
#include <deque>
#include <functional>
#include <optional>
#include <vector>

#include <systemc>

#include "model/sc_compat.h"
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

#include "model/device/dmi_terms.h"
#include "model/platform/link_config.h"
#include "model/platform/host_memory.h"
#include "model/platform/link_faults.h"
#include "model/trace/trace_log.h"

namespace irdma_sim::platform {

// x86 MSI window: writes here are interrupts, not memory.
inline constexpr uint64_t kMsiBase = 0xFEE00000ull;
inline constexpr uint64_t kMsiSize = 0x100000ull;

// DMI into host memory is granted on the link's terms (device/dmi_terms.h): a direct access
// costs the time and leaves the log entry a transported one does. With posted writes
// deferred, only reads are direct, and only those no queued write overlaps.
//
// Deferred posted writes land each at its arrival, by a method of the link's; or, once the
// host memory is told to hold them (land_when_host_looks), when anything could see them:
// the host CPU resuming, a device read of their bytes, a CPU spinning on memory waking at
// the next arrival. What every observer sees at every time is the same; the kernel is
// spared an activation per write.
class PcieLink : public sc_core::sc_module, private device::DmiTerms, private PostedWrites {
 public:
  IRDMA_SC_HAS_PROCESS(PcieLink);
  tlm_utils::simple_target_socket<PcieLink> host_mmio;   // from host CPUs
  tlm_utils::simple_initiator_socket<PcieLink> dev_bar;  // to the device's BARs and config space
  tlm_utils::simple_target_socket<PcieLink> dev_dma;     // from the device
  tlm_utils::simple_initiator_socket<PcieLink> host_mem; // to host memory

  // `defer_posted_writes`: make a posted write visible in host memory when it arrives
  // (timing-accurate) rather than when it is issued (loosely timed, faster). Faults on
  // posted writes need it (std::invalid_argument otherwise).
  PcieLink(sc_core::sc_module_name name, const LinkConfig& cfg, bool defer_posted_writes,
           trace::TraceLog& trace);

  // Where MSI writes go: (data, arrival time).
  std::function<void(uint32_t data, sc_core::sc_time at)> on_msi;
  // Told of every read and write the faults refused or poisoned, as it happens (for the
  // test bench).
  std::function<void(const device::DmaPurpose&)> on_struck_access;
  // The root port's report of an uncorrectable error (a write the faults refused or
  // poisoned), at `at`: the host's AER.
  std::function<void(sc_core::sc_time at)> on_pci_error;

  // For a host that takes interrupts by vector rather than as writes (a served model's
  // vfio-user server): sends MSI-X `vector` through `send` as the link's faults have it,
  // lost (reported sent) or twice; what `send` returns. Late delivery needs the writes.
  bool msi_by_vector(unsigned vector, const std::function<bool(unsigned)>& send);

  // From now on the deferred posted writes land when `memory`'s host looks.
  void land_when_host_looks(HostMemory& memory);
  // When the next queued write to land arrives (absolute), if any is queued.
  std::optional<sc_core::sc_time> next_arrival() const override;
  // The earliest arrival among the queued writes, in ps (~0 when none): no write the link
  // logs can be older (the trace's horizon).
  uint64_t unlanded_from_ps() const;

  // Link time of moving `bytes` of payload in TLPs of at most `max_tlp` bytes.
  sc_core::sc_time serialisation(uint32_t bytes, uint32_t max_tlp) const;

  uint64_t dma_errors() const { return dma_errors_; }
  uint64_t mmio_errors() const { return mmio_errors_; }
  // What the link's faults did; null when it injects none.
  const LinkFaultCounters* fault_counters() const { return faults_ ? &faults_->counters() : nullptr; }

 private:
  // serialisation() of a payload in max-payload TLPs, from a table for the usual sizes.
  sc_core::sc_time payload_time(uint32_t bytes) const;
  void mmio_b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  // Holds a completion back (`delay` ahead of the kernel) until the posted writes queued
  // before it have landed.
  void behind_posted_writes(sc_core::sc_time& delay) const;
  void trace_event(uint64_t t_ps, const char* kind, uint64_t region, uint64_t off, uint32_t len, uint64_t value);
  void dma_b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  bool dma_get_dmi(tlm::tlm_generic_payload& trans, tlm::tlm_dmi& dmi);
  void dma_invalidate_dmi(sc_dt::uint64 start, sc_dt::uint64 end);
  bool read(uint64_t addr, uint32_t len, sc_core::sc_time& delay) override;
  void written(uint64_t addr, uint32_t len, sc_core::sc_time& delay) override;
  // A read the faults refuse: answered with Completer Abort, `delay` past its completion.
  bool aborted_read(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  // A posted write the faults refuse or poison, arriving at `arrival`: dropped, and reported.
  bool dropped_write(tlm::tlm_generic_payload& trans, sc_core::sc_time arrival);
  // A read issued `delay` past the kernel's time reaches host memory at the returned offset.
  sc_core::sc_time read_at_host(const sc_core::sc_time& delay) const;
  // Logs a read that reached host memory; `delay` becomes when its data is back.
  void read_done(uint64_t addr, uint32_t len, bool ok, sc_core::sc_time& delay);
  void log_dma(uint64_t t_ps, bool write, bool ok, uint64_t addr, uint32_t len);
  void msi(uint32_t data, sc_core::sc_time arrival);
  // Queues a posted write (whole, or in the pieces a split fault makes) to land at `arrival`.
  void queue_write(sc_core::sc_time arrival, uint64_t addr, const uint8_t* data, uint32_t len);
  void apply_write(uint64_t addr, const uint8_t* data, uint32_t len, uint64_t t_ps);
  void land_due_writes() override;
  // The method that lands each write at its arrival while no host memory holds them.
  void land_on_arrival();
  // Out of posted-request credits: the initiator (at `delay` ahead of the kernel) waits
  // until the oldest queued write has landed and frees one.
  void wait_for_posted_credit(sc_core::sc_time& delay);
  // A thread may wait for a credit; a method (or a caller outside any process) may not, and
  // its write is queued past the credits instead.
  static bool initiator_can_wait();
  // One past the last queued write touching [addr, addr + len), or 0.
  size_t last_posted_overlapping(uint64_t addr, uint32_t len) const;
  bool overlaps_posted(uint64_t addr, uint32_t len) const;
  // Lands, in order, every queued write up to the last one touching [addr, addr + len),
  // first waiting out the initiator's `delay` (then zero) if there are any.
  void apply_writes_overlapping(uint64_t addr, uint32_t len, sc_core::sc_time& delay);

  LinkConfig cfg_;
  bool defer_;
  trace::TraceLog& trace_;
  sc_core::sc_time mmio_latency_, dma_latency_;
  double byte_ps_;  // link time of one byte, in the kernel's 1 ps resolution
  sc_core::sc_time read_request_;  // a read request TLP (no payload)
  std::array<sc_core::sc_time, 4097> payload_times_;
  struct PostedWrite {
    sc_core::sc_time arrival;
    uint64_t addr;
    std::vector<uint8_t> data;
  };
  // The root complex's posted-request credits: a device that has that many writes in
  // flight waits for one to land, as on a real link; and the queue stays bounded.
  static constexpr size_t kPostedCredits = 256;
  std::deque<PostedWrite> posted_;
  tlm::tlm_generic_payload write_;  // reused for every write the link applies
  std::vector<std::vector<uint8_t>> spare_;  // buffers of applied writes, for reuse
  sc_core::sc_event posted_due_;
  device::DmiTerms* memory_terms_ = nullptr;  // host memory's, behind the link's
  HostMemory* holder_ = nullptr;  // whose host lands the queued writes when it looks (null: the link, at arrival)
  uint64_t dma_errors_ = 0;
  uint64_t mmio_errors_ = 0;
  std::optional<LinkFaults> faults_;
};

}  // namespace irdma_sim::platform
