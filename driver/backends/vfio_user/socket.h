// vfio-user messages over an AF_UNIX stream socket: one whole message in or out at a time,
// fds as SCM_RIGHTS, every wait bounded by poll(). A received message is only framed and
// size-checked here; what its payload means is the reader's business.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "driver/backends/unique_fd.h"
#include "driver/backends/vfio_user/protocol.h"

namespace pcie::vfio_user {

struct Message {
  Header header;
  std::vector<uint8_t> payload;
  std::vector<UniqueFd> fds;  // closed with the message unless the reader takes them

  bool is_reply() const { return (header.flags & kFlagTypeMask) == kTypeReply; }
};

// A message that cannot be taken. `header` is what arrived (to address an error reply);
// `in_sync` says whether the stream still starts at a message boundary, that is whether the
// connection can go on.
class MessageError : public VfioUserError {
 public:
  MessageError(int error_no, const std::string& message, const Header& header, bool in_sync)
      : VfioUserError(error_no, message), header_(header), in_sync_(in_sync) {}
  const Header& header() const { return header_; }
  bool in_sync() const { return in_sync_; }

 private:
  Header header_;
  bool in_sync_;
};

// The most fds either end here takes in one message.
constexpr size_t kMaxFdsPerMessage = 16;

class MessageSocket {
 public:
  // Messages larger than `max_message_size` (header included) or with more than `max_fds`
  // (at most kMaxFdsPerMessage) fds are refused.
  MessageSocket(UniqueFd fd, size_t max_message_size, size_t max_fds);

  // Fills in header.msg_size. Throws VfioUserError: ECONNRESET when the peer has gone,
  // ETIMEDOUT when the peer does not take the bytes within `timeout_ms` (-1 = no limit).
  void send(Header header, const void* payload, size_t payload_size, const std::vector<int>& fds, int timeout_ms);
  void send(const Header& header, const std::vector<uint8_t>& payload, int timeout_ms) {
    send(header, payload.data(), payload.size(), {}, timeout_ms);
  }

  // One whole message within `timeout_ms` (-1 = no limit). Throws VfioUserError
  // (ECONNRESET, ETIMEDOUT) or MessageError for a message that breaks the framing rules.
  Message receive(int timeout_ms);

  // Whether a message has started to arrive (or the peer has closed) within `timeout_ms`.
  bool wait_readable(int timeout_ms);

  // After a send or receive stopped halfway, that direction of the stream no longer starts
  // at a message boundary and refuses further use.
  bool broken() const { return read_broken_ || write_broken_; }
  int fd() const { return fd_.get(); }

 private:
  void read_exact(uint8_t* data, size_t size, int64_t deadline_ns, std::vector<UniqueFd>& fds, bool& fds_truncated);

  UniqueFd fd_;
  size_t max_message_size_;
  size_t max_fds_;
  bool read_broken_ = false;
  bool write_broken_ = false;
};

// A listening socket at `path` (a stale socket file there is replaced).
UniqueFd listen_unix(const std::string& path);
// Connects to `path`, retrying for up to `timeout_ms` while nobody listens there yet.
UniqueFd connect_unix(const std::string& path, int timeout_ms);

}  // namespace pcie::vfio_user
