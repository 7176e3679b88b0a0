// An application the device host serves, as the kernel half sees it (ib_uverbs_user): its
// memory, which its registrations map for the device (ib_umem_get: its pages at IOVAs of
// the host's memory, reached with process_vm_readv/writev), the event files the kernel
// half installed in it and the numbers it holds them by, and the device pages it mapped.
#pragma once

#include <sys/types.h>

#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <vector>

#include "driver/backends/unique_fd.h"
#include "driver/core/uverbs/uverbs_file.h"
#include "model/platform/host_memory.h"
#include "model/platform/process_memory.h"

namespace irdma_sim::system {

// An event file's host end: a datagram socket pair whose one end the application reads.
// The host keeps a second handle on that end too, to take back what the application has
// not read when the kernel half withdraws a destroyed object's events.
class SocketEventFile final : public ibcore::uverbs::ib_uverbs_event_file {
 public:
  // Null when the OS gives no more sockets; `app_end` is then untouched.
  static std::shared_ptr<SocketEventFile> make(pcie::UniqueFd& app_end);
  void queue_event(const void* desc, size_t len) override;
  uint32_t withdraw_events(uint64_t user_handle) override;
  // Sends what the socket had no room for before; true when nothing is left waiting.
  bool flush();

 private:
  pcie::UniqueFd send_, unread_;
  std::deque<std::vector<uint8_t>> backlog_;  // events queued, not yet in the socket
};

class UverbsProcess final : public ibcore::ib_user_mm {
 public:
  UverbsProcess(pid_t pid, platform::HostMemory& memory) : pid_(pid), process_(pid), memory_(memory) {}

  pid_t pid() const { return pid_; }
  std::unique_ptr<ibcore::ib_umem> ib_umem_get(uint64_t addr, uint64_t length, bool writable, int& err) override;

  // The files of the last reply that installed any, numbered by the application's `files`
  // message (in the reply's order); false when the counts differ.
  void installed(std::vector<std::shared_ptr<SocketEventFile>> files) { unnumbered_ = std::move(files); }
  bool numbered(const int32_t* fds, uint32_t count);
  void closed(int fd) { files_.erase(fd); }
  std::shared_ptr<SocketEventFile> event_file(int fd) const;
  // Sends every file's backlog; true when none is left.
  bool flush_events();

  void mapped(uint64_t offset, const ibcore::ib_mmap_range& range) { mappings_[offset] = range; }
  const ibcore::ib_mmap_range* mapping(uint64_t offset) const;

 private:
  pid_t pid_;
  platform::ProcessMemory process_;
  platform::HostMemory& memory_;
  std::vector<std::shared_ptr<SocketEventFile>> unnumbered_;
  std::map<int, std::shared_ptr<SocketEventFile>> files_;  // by the application's number
  std::vector<std::weak_ptr<SocketEventFile>> all_files_;
  std::map<uint64_t, ibcore::ib_mmap_range> mappings_;     // by mmap offset
};

}  // namespace irdma_sim::system
