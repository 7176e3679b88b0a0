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
    Event(TraceLog* log, uint64_t t_ps, const char* ev);
    ~Event();
    Event(const Event&) = delete;
    Event& operator=(const Event&) = delete;
    Event& num(const char* key, uint64_t value);
    Event& addr(const char* key, uint64_t value);  // as a "0x..." string
    Event& str(const char* key, const std::string& value);
    Event& hex(const char* key, const void* bytes, size_t len);

   private:
    TraceLog* log_;
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
