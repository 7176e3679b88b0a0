// The transaction log behind trace.jsonl: one JSON object per event, in simulated-time
// order. Temporally decoupled initiators log at their local time, so events arrive
// slightly out of order: they wait in a reorder window until the simulation's global time
// has passed them (no initiator logs before the global time, so nothing can precede them
// any more), and are written out then. The window holds events of the last instants of
// simulated time, never the run.
#pragma once

#include <cstdint>
#include <cstdio>
#include <functional>
#include <deque>
#include <string>

#include "model/trace/coverage.h"
#include <vector>

namespace irdma_sim::trace {

class TraceLog {
 public:
  // A disabled log accepts events and drops them at no cost beyond the enabled() test.
  TraceLog() = default;
  ~TraceLog();
  TraceLog(const TraceLog&) = delete;
  TraceLog& operator=(const TraceLog&) = delete;

  // Starts writing to `path`; throws std::runtime_error when it cannot be opened.
  // `horizon` gives the simulation's global time: no event is logged before it.
  void open(const std::string& path, std::function<uint64_t()> horizon);
  bool enabled() const { return out_ != nullptr; }

  // Builds one event's fields; the event is stored when the builder goes out of scope.
  class Event {
   public:
    // Inline, so a disabled log costs one test per event and nothing per field.
    Event(TraceLog* log, uint64_t t_ps, const char* ev) : log_(log->enabled() ? log : nullptr), t_ps_(t_ps) {
      if (log_) begin(ev);
    }
    ~Event() {
      if (log_) commit();
    }
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event& num(const char* key, uint64_t value) {
      if (log_) put_num(key, value);
      return *this;
    }
    Event& addr(const char* key, uint64_t value) {  // as a "0x..." string
      if (log_) put_addr(key, value);
      return *this;
    }
    Event& str(const char* key, const char* value) {
      if (log_) put_str(key, value);
      return *this;
    }
    Event& hex(const char* key, const void* bytes, size_t len) {
      if (log_) put_hex(key, bytes, len);
      return *this;
    }

   private:
    void begin(const char* ev);
    void commit();
    void put_num(const char* key, uint64_t value);
    void put_addr(const char* key, uint64_t value);
    void put_str(const char* key, const char* value);
    void put_hex(const char* key, const void* bytes, size_t len);

    TraceLog* log_;  // null when the log is disabled
    uint64_t t_ps_;
    std::string json_;
  };
  Event event(uint64_t t_ps, const char* ev) { return Event(this, t_ps, ev); }

  // Writes every held event older than the global time.
  void flush();
  // Writes everything and closes the file.
  void close();
  uint64_t events_written() const { return written_; }
  size_t events_held() const { return pending_.size(); }
  // Events logged before one already written (a model bug): written at once, out of order.
  uint64_t late_events() const { return late_; }

  // What the components logging here exercised: counted whether or not the log is open.
  Coverage& coverage() { return coverage_; }

 private:
  struct Entry {
    uint64_t t_ps;
    std::string json;
  };
  void write_before(uint64_t t_ps);
  void write(std::string& json);  // appends the newline

  std::FILE* out_ = nullptr;
  std::function<uint64_t()> horizon_;
  // Held events in time order, equal times in logging order. Events come almost in order,
  // so each goes in at or near the back.
  std::deque<Entry> pending_;
  uint64_t written_ = 0;
  uint64_t written_before_ = 0;  // every event older than this is written
  uint64_t late_ = 0;
  Coverage coverage_;
};

}  // namespace irdma_sim::trace
