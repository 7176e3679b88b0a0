// Execution services: time, waiting, workers. In simulation these are SystemC threads of a
// simulated CPU and simulated time; on silicon, OS threads and the wall clock.
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace hal {

// A one-shot-or-repeatable wake-up: wait() blocks until signal() has been called since the
// last wait() returned.
class Event {
 public:
  virtual ~Event() = default;
  virtual void signal() = 0;
  virtual void wait() = 0;
  // Returns false on timeout.
  virtual bool wait_for(uint64_t timeout_ns) = 0;
};

class Lock {
 public:
  virtual ~Lock() = default;
  virtual void lock() = 0;
  virtual void unlock() = 0;
};

class Exec {
 public:
  virtual ~Exec() = default;
  virtual uint64_t now_ns() = 0;
  // One iteration of a busy-poll loop (cpu_relax): costs time, lets the device progress.
  virtual void cpu_relax() = 0;
  virtual void delay_ns(uint64_t ns) = 0;
  // Starts `body` on its own worker, pinned to `cpu` (modulo the CPUs there are).
  virtual void spawn(const std::string& name, unsigned cpu, std::function<void()> body) = 0;
  virtual std::unique_ptr<Event> make_event() = 0;
  virtual std::unique_ptr<Lock> make_lock() = 0;
  virtual unsigned num_cpus() const = 0;
};

}  // namespace hal
