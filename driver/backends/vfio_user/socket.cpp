#include "driver/backends/vfio_user/socket.h"

#include <fcntl.h>
#include <poll.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/un.h>
#include <time.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <thread>

namespace pcie::vfio_user {
namespace {

int64_t now_ns() {
  timespec ts{};
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t{ts.tv_sec} * 1'000'000'000 + ts.tv_nsec;
}

int64_t deadline_after(int timeout_ms) { return timeout_ms < 0 ? -1 : now_ns() + int64_t{timeout_ms} * 1'000'000; }

// Milliseconds left for poll(), rounded up so that a wait never ends early; -1 = no limit.
int remaining_ms(int64_t deadline_ns) {
  if (deadline_ns < 0) return -1;
  int64_t left = deadline_ns - now_ns();
  if (left <= 0) return 0;
  return static_cast<int>(std::min<int64_t>((left + 999'999) / 1'000'000, 1 << 30));
}

[[noreturn]] void throw_errno(int error_no, const std::string& what) {
  if (error_no == ECONNRESET || error_no == EPIPE)
    throw VfioUserError(ECONNRESET, "vfio-user: peer closed the connection (" + what + ")");
  throw VfioUserError(error_no, "vfio-user: " + what + ": " + std::strerror(error_no));
}

// Waits for `events` on `fd` until the deadline; false on timeout.
bool poll_until(int fd, short events, int64_t deadline_ns) {
  for (;;) {
    pollfd p{fd, events, 0};
    int n = ::poll(&p, 1, remaining_ms(deadline_ns));
    if (n > 0) return true;
    if (n == 0) return false;
    if (errno != EINTR) throw_errno(errno, "poll");
  }
}

sockaddr_un unix_address(const std::string& path) {
  sockaddr_un address{};
  address.sun_family = AF_UNIX;
  if (path.empty() || path.size() >= sizeof(address.sun_path))
    throw VfioUserError(ENAMETOOLONG, "vfio-user: socket path '" + path + "' is empty or longer than " +
                                          std::to_string(sizeof(address.sun_path) - 1) + " bytes");
  std::memcpy(address.sun_path, path.c_str(), path.size() + 1);
  return address;
}

}  // namespace

MessageSocket::MessageSocket(UniqueFd fd, size_t max_message_size, size_t max_fds)
    : fd_(std::move(fd)), max_message_size_(max_message_size), max_fds_(std::min(max_fds, kMaxFdsPerMessage)) {
  int flags = ::fcntl(fd_.get(), F_GETFL);
  if (flags < 0 || ::fcntl(fd_.get(), F_SETFL, flags | O_NONBLOCK) < 0) throw_errno(errno, "fcntl(O_NONBLOCK)");
}

void MessageSocket::send(Header header, const void* payload, size_t payload_size, const std::vector<int>& fds,
                         int timeout_ms) {
  if (write_broken_) throw VfioUserError(EPIPE, "vfio-user: a message to the peer was cut off earlier");
  if (payload_size > max_message_size_ - kHeaderSize)
    throw VfioUserError(E2BIG, "vfio-user: a " + command_name(header.command) + " payload of " +
                                   std::to_string(payload_size) + " bytes exceeds the message limit");
  header.msg_size = static_cast<uint32_t>(kHeaderSize + payload_size);
  int64_t deadline = deadline_after(timeout_ms);

  std::vector<char> control(fds.empty() ? 0 : CMSG_SPACE(sizeof(int) * fds.size()));
  size_t total = header.msg_size;
  size_t sent = 0;
  while (sent < total) {
    iovec iov[2];
    int iovcnt = 0;
    if (sent < kHeaderSize) {
      iov[iovcnt++] = {reinterpret_cast<uint8_t*>(&header) + sent, kHeaderSize - sent};
      if (payload_size) iov[iovcnt++] = {const_cast<void*>(payload), payload_size};
    } else {
      iov[iovcnt++] = {static_cast<uint8_t*>(const_cast<void*>(payload)) + (sent - kHeaderSize), total - sent};
    }
    msghdr msg{};
    msg.msg_iov = iov;
    msg.msg_iovlen = iovcnt;
    if (sent == 0 && !fds.empty()) {  // the fds ride with the first byte of the message
      msg.msg_control = control.data();
      msg.msg_controllen = control.size();
      cmsghdr* cmsg = CMSG_FIRSTHDR(&msg);
      cmsg->cmsg_level = SOL_SOCKET;
      cmsg->cmsg_type = SCM_RIGHTS;
      cmsg->cmsg_len = CMSG_LEN(sizeof(int) * fds.size());
      std::memcpy(CMSG_DATA(cmsg), fds.data(), sizeof(int) * fds.size());
    }
    ssize_t n = ::sendmsg(fd_.get(), &msg, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n > 0) {
      sent += static_cast<size_t>(n);
      continue;
    }
    if (n < 0 && errno == EINTR) continue;
    if (n < 0 && (errno == EAGAIN || errno == EWOULDBLOCK)) {
      if (poll_until(fd_.get(), POLLOUT, deadline)) continue;
      write_broken_ = sent > 0;
      throw VfioUserError(ETIMEDOUT, "vfio-user: timed out after " + std::to_string(timeout_ms) + " ms sending " +
                                         command_name(header.command) + " (the peer is not reading)");
    }
    write_broken_ = sent > 0;
    throw_errno(n < 0 ? errno : EIO, "sending " + command_name(header.command));
  }
}

void MessageSocket::read_exact(uint8_t* data, size_t size, int64_t deadline_ns, std::vector<UniqueFd>& fds,
                               bool& fds_truncated) {
  size_t got = 0;
  while (got < size) {
    iovec iov{data + got, size - got};
    alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * kMaxFdsPerMessage)];
    msghdr msg{};
    msg.msg_iov = &iov;
    msg.msg_iovlen = 1;
    msg.msg_control = control;
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * max_fds_);
    ssize_t n = ::recvmsg(fd_.get(), &msg, MSG_CMSG_CLOEXEC | MSG_DONTWAIT);
    if (n > 0) {
      for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c)) {
        if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
        size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
        for (size_t i = 0; i < count; ++i) {
          int fd;
          std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
          fds.emplace_back(fd);
        }
      }
      if (msg.msg_flags & MSG_CTRUNC) fds_truncated = true;
      got += static_cast<size_t>(n);
      continue;
    }
    if (n == 0) {
      throw VfioUserError(ECONNRESET, "vfio-user: peer closed the connection");
    }
    if (errno == EINTR) continue;
    if (errno == EAGAIN || errno == EWOULDBLOCK) {
      if (poll_until(fd_.get(), POLLIN, deadline_ns)) continue;
      if (got > 0) read_broken_ = true;
      throw VfioUserError(ETIMEDOUT, "vfio-user: timed out waiting for a message from the peer");
    }
    read_broken_ = true;
    throw_errno(errno, "receiving a message");
  }
}

Message MessageSocket::receive(int timeout_ms) {
  if (read_broken_) throw VfioUserError(EPIPE, "vfio-user: a message from the peer was cut off earlier");
  int64_t deadline = deadline_after(timeout_ms);
  Message message;
  bool fds_truncated = false;
  read_exact(reinterpret_cast<uint8_t*>(&message.header), kHeaderSize, deadline, message.fds, fds_truncated);
  const Header& h = message.header;
  if (h.msg_size < kHeaderSize)
    throw MessageError(EINVAL, "vfio-user: " + command_name(h.command) + " message claims " +
                                   std::to_string(h.msg_size) + " bytes, less than its own 16-byte header",
                       h, true);
  if (h.msg_size > max_message_size_) {
    read_broken_ = true;  // its body cannot be skipped safely: nothing says where the next message starts
    throw MessageError(E2BIG, "vfio-user: " + command_name(h.command) + " message of " + std::to_string(h.msg_size) +
                                  " bytes exceeds the limit of " + std::to_string(max_message_size_),
                       h, false);
  }
  message.payload.resize(h.msg_size - kHeaderSize);
  try {
    read_exact(message.payload.data(), message.payload.size(), deadline, message.fds, fds_truncated);
  } catch (const VfioUserError&) {
    read_broken_ = true;  // half a message was taken
    throw;
  }
  if (fds_truncated || message.fds.size() > max_fds_)
    throw MessageError(EINVAL, "vfio-user: " + command_name(h.command) + " came with more than " +
                                   std::to_string(max_fds_) + " fds",
                       h, true);
  return message;
}

bool MessageSocket::wait_readable(int timeout_ms) { return poll_until(fd_.get(), POLLIN, deadline_after(timeout_ms)); }

UniqueFd listen_unix(const std::string& path) {
  sockaddr_un address = unix_address(path);
  UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
  if (!fd.valid()) throw_errno(errno, "socket(AF_UNIX)");
  struct stat st{};
  if (::lstat(path.c_str(), &st) == 0 && S_ISSOCK(st.st_mode)) {
    // A socket nobody listens on is a dead server's, taken over; a live one is refused
    // (binding over it would orphan its server, and unlinking it at the end, the path).
    UniqueFd probe(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!probe.valid()) throw_errno(errno, "socket(AF_UNIX)");
    const bool live = ::connect(probe.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 ||
                      errno == EAGAIN;
    if (live) throw VfioUserError(EADDRINUSE, "vfio-user: another server is listening at '" + path + "'");
    ::unlink(path.c_str());
  }
  if (::bind(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) < 0)
    throw_errno(errno, "bind to '" + path + "'");
  if (::listen(fd.get(), 4) < 0) throw_errno(errno, "listen on '" + path + "'");
  return fd;
}

UniqueFd connect_unix(const std::string& path, int timeout_ms) {
  sockaddr_un address = unix_address(path);
  int64_t deadline = deadline_after(timeout_ms);
  for (;;) {
    UniqueFd fd(::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC | SOCK_NONBLOCK, 0));
    if (!fd.valid()) throw_errno(errno, "socket(AF_UNIX)");
    if (::connect(fd.get(), reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0) return fd;
    int error = errno;
    // Nobody listening yet, or the backlog is full: the server may be starting.
    bool retry = error == ENOENT || error == ECONNREFUSED || error == EAGAIN || error == EINTR;
    if (!retry) throw_errno(error, "connect to '" + path + "'");
    if (remaining_ms(deadline) == 0)
      throw VfioUserError(error, "vfio-user: nobody accepted a connection at '" + path + "' within " +
                                     std::to_string(timeout_ms) + " ms (" + std::strerror(error) + ")");
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

}  // namespace pcie::vfio_user
