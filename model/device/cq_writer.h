// The CQ writer: the part of the CQ engine that holds each CQ's ring state (tail and pass
// polarity, the driver's head as last read, overflow, the arm) and writes CQEs into the
// host ring (spec C.3-C.7): the extended half first (the next slot, across the wrap too, or
// the same 64-byte slot), the overflow check against the driver's head (re-read from the
// shadow area when the known space runs low), and the decision that an armed CQ's event is
// due. The CQ engine around it keeps the counters, the trace and the CEQ and AEQ sides.
//
// Two implementations: TlmCqWriter here, and the Verilog one (rtl_bridge/rtl_cq_writer.h),
// which the CQ engine runs in lock-step with a TlmCqWriter (cq_lockstep.h). No SystemC
// here: this is irdma_cq_datapath, which the RTL bridge and its tests link bare.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <unordered_map>

#include "model/device/cqe_format.h"
#include "model/device/device_config.h"
#include "model/device/ring_pos.h"

namespace irdma_sim::device {

// What a CQ writer reaches of the device: host memory through its DMA master, and the
// engine's clock.
class CqWriterPort {
 public:
  virtual ~CqWriterPort() = default;
  virtual bool read(uint64_t addr, void* dst, uint32_t len) = 0;  // false: nothing read
  virtual bool write(uint64_t addr, const void* src, uint32_t len) = 0;  // false: refused
  virtual void cycles(uint32_t n) = 0;  // the writer spent n clock cycles
  virtual uint64_t now_ps() const = 0;
};

// A CQ's ring, as CREATE_CQ and MODIFY_CQ give it.
struct CqRing {
  uint64_t base = 0;
  uint64_t shadow = 0;                // create only: a resize keeps it
  uint32_t size = 0;                  // entries, 2 .. 2^21 - 1
  uint32_t shadow_read_threshold = 0;
  bool check_overflow = false;
  bool ceqe_enable = false;           // its events are CEQEs (ENCEQEMASK, with a valid CEQ)
  bool cqe_64byte = false;            // create only
};

struct CqWriteOutcome {
  enum Status : uint8_t { written, overflowed, no_cq };
  Status status = no_cq;
  uint32_t slot = 0;            // written: the main half's
  bool wrapped = false;         // written: the tail wrapped, the polarity flipped
  bool head_read = false;       // the driver's head was re-read from the shadow area
  bool overflow_began = false;  // overflowed: this completion put the CQ in error
  bool event = false;           // the CQ was armed for this completion: it is disarmed
  bool ceqe = false;            // ... and the event is a CEQE
  bool solicited_only = false;  // event: the arm it consumed was solicited-only
  bool write_error = false;     // a half's write was refused
  CqeHalf main{}, ext{};        // written: the halves (ext when extended)
  bool operator==(const CqWriteOutcome& o) const;
};

struct CqArmOutcome {
  enum Status : uint8_t { armed, stale, failed, no_cq };  // failed: shadow area unreadable
  Status status = no_cq;
  bool arms = false;            // armed: the arm takes effect (ARM_NEXT or ARM_NEXT_SE)
  bool solicited_only = false;  // armed, stale: the arm is for solicited completions only
  bool event = false;           // armed: it fired at once (unconsumed CQEs were there)
  bool ceqe = false;            // ... as a CEQE
  bool operator==(const CqArmOutcome& o) const;
};

class CqWriter {
 public:
  virtual ~CqWriter() = default;
  virtual void create(uint32_t cq, const CqRing& ring) = 0;
  // A new ring, written from slot 0 with polarity 1; the arm and overflow state stay.
  virtual void resize(uint32_t cq, const CqRing& ring) = 0;
  virtual void destroy(uint32_t cq) = 0;
  virtual CqWriteOutcome write(uint32_t cq, const CqeFields& fields) = 0;
  // The CQARM doorbell: the arm the driver left in shadow qword4 (spec C.7, D.5).
  virtual CqArmOutcome arm(uint32_t cq) = 0;
  // Clock cycles the last request took by this writer's own measure.
  virtual uint64_t last_cycles() const = 0;
};

// Builds a CQ writer on the port it is given.
using CqWriterFactory = std::function<std::unique_ptr<CqWriter>(CqWriterPort&)>;

// The transaction-level writer: each request costs the stage cycles of the configuration,
// charged where the hardware spends them, so that its reads and writes land after the
// cycles the RTL's would.
class TlmCqWriter final : public CqWriter {
 public:
  // `main_half_first`: DeviceConfig::cqe_main_half_first.
  TlmCqWriter(CqWriterPort& port, const StageCycles& cycles, std::unique_ptr<CqeFormatter> formatter,
              bool main_half_first = false);

  void create(uint32_t cq, const CqRing& ring) override;
  void resize(uint32_t cq, const CqRing& ring) override;
  void destroy(uint32_t cq) override;
  CqWriteOutcome write(uint32_t cq, const CqeFields& fields) override;
  CqArmOutcome arm(uint32_t cq) override;
  uint64_t last_cycles() const override { return last_cycles_; }

  // A CQ's state here (public for the model's state budget).
  struct Cq {
    CqRing ring;
    RingPos tail;
    uint32_t head_seen = 0;   // the driver's head as last read (shadow qword0)
    bool overflowed = false;  // CHKOVERFLOW found it full: in error, writes nothing more
    bool armed = false;
    bool solicited_only = false;
    int arm_seq = -1;         // ARM_SEQ_NUM of the arm last taken
    uint32_t resizes = 0;     // rings retired
  };

 private:
  // CHKOVERFLOW: room for `slots` more slots; false (and the CQ in error) when there is none.
  bool room(Cq& cq, uint32_t slots, CqWriteOutcome& out);
  void write_half(const Cq& cq, uint32_t slot, uint32_t offset, const CqeHalf& half, CqWriteOutcome& out);
  // `len` bytes of the CQ's shadow area (whole 8-byte beats); false when the read failed.
  bool read_shadow(const Cq& cq, void* dst, uint32_t len);
  void spend(uint32_t n) {
    port_.cycles(n);
    last_cycles_ += n;
  }

  CqWriterPort& port_;
  const StageCycles cycles_;
  std::unique_ptr<CqeFormatter> formatter_;
  const bool main_half_first_;
  std::unordered_map<uint32_t, Cq> cqs_;
  uint64_t last_cycles_ = 0;
};

}  // namespace irdma_sim::device
