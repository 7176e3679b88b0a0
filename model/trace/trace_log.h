// The transaction log behind trace.jsonl: one JSON object per event, in simulated-time
// order. Events may be logged slightly out of order (temporally decoupled initiators log
// at their local time), so they are buffered and sorted before they are written; events
// older than the global simulated time can no longer be overtaken and are flushed early.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>
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
  void open(const std::string& path);
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

  // Writes every buffered event older than `t_ps` (no later event can precede it).
  void flush_before(uint64_t t_ps);
  // Writes everything and closes the file.
  void close();
  uint64_t events_written() const { return written_; }

 private:
  struct Entry {
    uint64_t t_ps;
    uint64_t seq;
    std::string json;
  };
  void write_sorted(size_t count);

  std::FILE* out_ = nullptr;
  std::vector<Entry> pending_;
  uint64_t seq_ = 0;
  uint64_t written_ = 0;
};

}  // namespace irdma_sim::trace
