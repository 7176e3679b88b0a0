// stimulus.jsonl: what a replay of a run needs (`--record`), written as the run goes. The
// host side's accesses to the device (MMIO and configuration, at the times the host issued
// them, with the bytes written; the test hooks it used through the backdoor) and the bytes
// host memory gave the device's reads, which are the device's inputs; the device's writes
// to host memory and its MSI-X messages, which are its outputs, in the order the host saw
// them. One object per line:
//   {"ev":"mmio","t_ps":N,"cmd":"write"|"read","addr":"0x..","len":N,"ok":true|false,"data":"hex"}
//       (data: what a write wrote, what a read the device took returned; ok: the device took it)
//   {"ev":"fault","t_ps":N,"qp":N,"nth":N,"code":N}     (DeviceBackdoor::inject_fault)
//   {"ev":"force_msix","t_ps":N,"vector":N}            (DeviceBackdoor::force_msix)
//   {"ev":"dma_read","addr":"0x..","len":N,"ok":true|false,"data":"hex"}           (data: when ok)
//   {"ev":"dma_write","addr":"0x..","len":N,"ok":true|false,"data":"hex"}
//   {"ev":"msix","data":N}
// `addr` of an mmio is the link's (region << 40 | offset, pci_config.h).
#pragma once

#include <cstdint>
#include <cstdio>
#include <deque>
#include <string>
#include <vector>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_initiator_socket.h>
#include <tlm_utils/simple_target_socket.h>

namespace irdma_sim::system {

struct StimulusEvent {
  enum Kind { mmio, fault, force_msix, dma_read, dma_write, msix } kind = mmio;
  bool host() const { return kind == mmio || kind == fault || kind == force_msix; }
  uint64_t t_ps = 0;  // the host's: when it issued it
  bool write = false;  // mmio: a write
  bool ok = true;      // mmio: the device took it; dma: host memory answered OK
  bool answered = true;  // mmio: the device's answer was recorded (recordings before 2026-12-02 lack it)
  uint64_t addr = 0;
  uint32_t len = 0;
  uint32_t msi_data = 0;  // msix; force_msix: the vector
  uint32_t qp = 0;        // fault
  uint64_t nth = 0;
  uint16_t code = 0;
  std::vector<uint8_t> data;
  uint64_t line = 0;  // in the file, for messages

  std::string describe() const;
};

// Writes stimulus.jsonl. Sits between the host's MMIO initiator and the link, and between
// the link and host memory; offers no DMI, so every device access passes through it.
class StimulusRecorder : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<StimulusRecorder> mmio_in;      // from the host's CPUs
  tlm_utils::simple_initiator_socket<StimulusRecorder> mmio_out;  // to the link
  tlm_utils::simple_target_socket<StimulusRecorder> memory_in;    // from the link
  tlm_utils::simple_initiator_socket<StimulusRecorder> memory_out;  // to host memory

  // Throws std::runtime_error when `path` cannot be created.
  StimulusRecorder(sc_core::sc_module_name name, const std::string& path);
  ~StimulusRecorder() override;
  void msix(uint32_t data);  // the link's MSI-X, as it reaches the host
  // The host's test hooks (DeviceBackdoor), at the simulation's time.
  void fault(uint32_t qp, uint64_t nth, uint16_t code);
  void force_msix(unsigned vector);
  // Throws std::runtime_error when the recording could not be written whole.
  void close();

 private:
  void mmio_b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  void memory_b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);
  void invalidate(sc_dt::uint64 start, sc_dt::uint64 end) { memory_in->invalidate_direct_mem_ptr(start, end); }
  void put(const StimulusEvent& ev);

  std::string path_;
  std::FILE* out_ = nullptr;
  std::string line_;
};

// Reads stimulus.jsonl as a stream, with two lookahead queues: the host's accesses, and the
// device's reads and writes (in file order each). Malformed lines throw std::runtime_error
// naming the file and line.
class StimulusReader {
 public:
  explicit StimulusReader(const std::string& path);
  ~StimulusReader();
  StimulusReader(const StimulusReader&) = delete;
  StimulusReader& operator=(const StimulusReader&) = delete;

  // The next host access (mmio or a test hook), the next device access (dma or msix); false
  // at the end.
  bool next_mmio(StimulusEvent& ev);
  bool next_device(StimulusEvent& ev);
  // The line a killed run left unfinished (the recording ends before it), or 0.
  uint64_t cut_at_line() const { return cut_at_line_; }

 private:
  bool read_one();  // one more line into its queue; false at the end of the file
  StimulusEvent parse(const std::string& line) const;

  std::string path_;
  std::FILE* in_ = nullptr;
  uint64_t line_no_ = 0;
  uint64_t cut_at_line_ = 0;
  std::deque<StimulusEvent> mmio_, device_;
};

}  // namespace irdma_sim::system
