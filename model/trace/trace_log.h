// The transaction log: trace.bin (model/trace/trace_format.h) or trace.jsonl, one event per
// record or line, in simulated-time order. Temporally decoupled initiators log at their
// local time, so events arrive slightly out of order: they wait, encoded, in a reorder
// window until the simulation's global time has passed them (no initiator logs before the
// global time, so nothing can precede them any more), and are written out then. The window
// holds events of the last instants of simulated time, never the run.
#pragma once

#include <cstdint>
#include <cstdio>
#include <cstring>
#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "model/trace/coverage.h"
#include "model/trace/trace_format.h"

namespace irdma_sim::trace {

class TraceLog {
 public:
  enum class Format { binary, jsonl };
  // trace.jsonl's format for a path ending in ".jsonl", the binary one for any other.
  static Format format_for(const std::string& path);

  // A disabled log accepts events and drops them at no cost beyond the enabled() test.
  TraceLog() = default;
  ~TraceLog();
  TraceLog(const TraceLog&) = delete;
  TraceLog& operator=(const TraceLog&) = delete;

  // Starts writing to `path`; throws std::runtime_error when it cannot be opened.
  // `horizon` gives the simulation's global time: no event is logged before it.
  void open(const std::string& path, std::function<uint64_t()> horizon, Format format);
  void open(const std::string& path, std::function<uint64_t()> horizon) {
    open(path, std::move(horizon), format_for(path));
  }
  bool enabled() const { return out_ != nullptr; }

  // Builds one event's fields; the event is stored when the builder goes out of scope.
  // Event names and keys are string literals: an event's shape is known by their addresses.
  class Event {
   public:
    // Inline, so a disabled log costs one test per event and nothing per field.
    Event(TraceLog* log, uint64_t t_ps, const char* ev) : log_(log->enabled() ? log : nullptr) {
      if (log_) begin(t_ps, ev);
    }
    ~Event() {
      if (log_) commit();
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event& num(const char* key, uint64_t value) {
      if (log_) put_number(key, format::Kind::num, value);
      return *this;
    }
    Event& addr(const char* key, uint64_t value) {  // as a "0x..." string
      if (log_) put_number(key, format::Kind::addr, value);
      return *this;
    }
    // Identifiers and hex: text needing no JSON escapes.
    Event& str(const char* key, const char* value);
    Event& hex(const char* key, const void* bytes, size_t len) {
      if (log_) put_bytes(key, format::Kind::hex, bytes, len);
      return *this;
    }

   private:
    friend class TraceLog;
    static constexpr size_t kMaxFields = 16;
    static constexpr size_t kInlineBytes = 192;

    void begin(uint64_t t_ps, const char* ev) {
      t_ps_ = t_ps;
      ev_ = ev;
      fields_ = 0;
      size_ = 0;
    }
    void commit();
    // Inline for the common case, a field that fits the inline buffer.
    void put_number(const char* key, format::Kind kind, uint64_t value) {
      if (fields_ == kMaxFields || size_ + format::kMaxVarintBytes > kInlineBytes || !spill_.empty())
        return put_number_spilling(key, kind, value);
      keys_[fields_] = key;
      kinds_[fields_++] = kind;
      size_ = size_t(format::put_varint(inline_ + size_, value) - inline_);
    }
    void put_number_spilling(const char* key, format::Kind kind, uint64_t value);
    void put_bytes(const char* key, format::Kind kind, const void* bytes, size_t len);
    void add_field(const char* key, format::Kind kind);
    uint8_t* reserve(size_t n);

    TraceLog* log_;  // null when the log is disabled
    uint64_t t_ps_;
    const char* ev_;
    size_t fields_;
    const char* keys_[kMaxFields];
    format::Kind kinds_[kMaxFields];
    // The values as the record holds them: here, or in spill_ once they outgrow it.
    uint8_t inline_[kInlineBytes];
    size_t size_;
    std::string spill_;
  };
  Event event(uint64_t t_ps, const char* ev) { return Event(this, t_ps, ev); }

  // Writes every held event older than the global time.
  void flush();
  // Writes everything and closes the file; throws std::runtime_error when a write failed
  // (a full disk): the file is short of events.
  void close();
  uint64_t events_written() const { return written_; }
  size_t events_held() const { return pending_.size(); }
  // Events logged before one already written (a model bug): written at once, out of order.
  uint64_t late_events() const { return late_; }

  // What the components logging here exercised: counted whether or not the log is open.
  Coverage& coverage() { return coverage_; }

 private:
  struct Shape {
    uint64_t hash;
    const char* ev;
    std::vector<const char*> keys;
    std::vector<format::Kind> kinds;
    format::Schema schema;
    uint32_t number = 0;  // its schema's in the file, once its record is there (from 1)
  };
  // A held event: its values are held_[offset, offset + size).
  struct Entry {
    uint64_t t_ps;
    uint32_t shape;
    uint32_t size;
    size_t offset;
  };

  uint32_t shape_of(const Event& e);
  void hold(uint64_t t_ps, uint32_t shape, const uint8_t* values, size_t size);
  void write(uint64_t t_ps, uint32_t shape, const uint8_t* values, size_t size);
  void write_before(uint64_t t_ps);  // UINT64_MAX: every held event
  void compact_held();
  void drain_out();

  std::FILE* out_ = nullptr;
  std::string path_;
  int write_error_ = 0;  // the first write's errno, said when the log closes
  Format format_ = Format::binary;
  std::function<uint64_t()> horizon_;
  std::vector<Shape> shapes_;
  uint32_t schemas_written_ = 0;
  std::vector<uint32_t> shape_slots_;  // open addressing by hash: index into shapes_ + 1, 0 empty
  uint32_t last_shape_[64] = {};       // by the name's address: the last shape seen, as above
  // Held events: the first sorted_ in time order (equal times in logging order), then those
  // logged since the last look, in logging order.
  std::vector<Entry> pending_;
  size_t sorted_ = 0;
  std::vector<Entry> out_of_order_, merged_;  // scratch of a look
  // Bytes appended without std::string's out-of-line append: a few per event.
  struct Bytes {
    std::unique_ptr<char[]> data;
    size_t size = 0, capacity = 0;
    void append(const void* p, size_t n) {
      if (!n) return;
      if (size + n > capacity) grow(size + n);
      std::memcpy(data.get() + size, p, n);
      size += n;
    }
    void append(const std::string& s) { append(s.data(), s.size()); }
    void grow(size_t at_least);
  };
  Bytes held_;
  size_t held_live_ = 0;  // the bytes of held_ that pending_ still refers to
  Bytes out_buf_;         // written a MiB at a time
  std::string scratch_;   // a record built whole: a schema, or an event's JSON
  uint64_t last_written_ps_ = 0;
  uint64_t written_ = 0;
  uint64_t written_before_ = 0;  // every event older than this is written
  uint64_t late_ = 0;
  Coverage coverage_;
};

}  // namespace irdma_sim::trace
