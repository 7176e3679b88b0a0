#include "model/system/device_host.h"

#include <poll.h>
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <stdexcept>

#include "driver/backends/uverbs_shim/wire.h"
#include "driver/core/uverbs/uverbs_file.h"
#include "model/testbench/json_writer.h"

namespace irdma_sim::system {

namespace {

using ibcore::uverbs::ib_uverbs_event_file;

// An event file's host end, a datagram socket whose peer the application reads; closing it
// ends the application's reads.
class socket_event_file final : public ib_uverbs_event_file {
 public:
  explicit socket_event_file(pcie::UniqueFd fd) : fd_(std::move(fd)) {}

 private:
  pcie::UniqueFd fd_;
};

// The application a command came from: what the command writes to its memory and the
// files it installs, gathered into the reply.
class reply_builder final : public ibcore::uverbs::ib_uverbs_user {
 public:
  bool copy_to_user(uint64_t addr, const void* src, size_t len) override {
    const uverbs_wire::copy c{addr, uint32_t(len), 0};
    append(&c, sizeof c);
    append(src, len);
    bytes_.resize((bytes_.size() + 7) & ~size_t(7));
    copies_++;
    return true;
  }
  std::shared_ptr<ib_uverbs_event_file> install_event_file(uint64_t fd_addr) override {
    int pair[2];
    if (fds_.size() == uverbs_wire::kMaxFds ||
        ::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair))
      return nullptr;
    fds_.emplace_back(pair[1]);
    fd_addrs_.push_back(fd_addr);
    return std::make_shared<socket_event_file>(pcie::UniqueFd(pair[0]));
  }
  // Sends the reply with `ret`; false when the application has gone.
  bool send(int conn, int64_t ret) {
    uverbs_wire::reply r{ret, copies_, uint32_t(fds_.size())};
    if (ret < 0) r.copies = r.fds = 0;  // a failed command writes nothing the caller sees
    std::vector<uint8_t> msg(sizeof r);
    std::memcpy(msg.data(), &r, sizeof r);
    if (ret >= 0) {
      msg.insert(msg.end(), bytes_.begin(), bytes_.end());
      for (uint64_t a : fd_addrs_) msg.insert(msg.end(), reinterpret_cast<uint8_t*>(&a), reinterpret_cast<uint8_t*>(&a) + 8);
    }
    iovec iov{msg.data(), msg.size()};
    msghdr m{};
    m.msg_iov = &iov;
    m.msg_iovlen = 1;
    std::vector<int> fds;
    for (const pcie::UniqueFd& fd : fds_) fds.push_back(fd.get());
    std::vector<char> control(r.fds ? CMSG_SPACE(sizeof(int) * r.fds) : 0);
    if (r.fds) {
      m.msg_control = control.data();
      m.msg_controllen = control.size();
      cmsghdr* c = CMSG_FIRSTHDR(&m);
      c->cmsg_level = SOL_SOCKET;
      c->cmsg_type = SCM_RIGHTS;
      c->cmsg_len = CMSG_LEN(sizeof(int) * r.fds);
      std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * r.fds);
    }
    // A client waits for each reply before its next request: one whose replies pile up
    // unread is not following the protocol, and is dropped rather than waited for.
    return ::sendmsg(conn, &m, MSG_NOSIGNAL | MSG_DONTWAIT) == ssize_t(msg.size());
  }

 private:
  void append(const void* p, size_t n) {
    bytes_.insert(bytes_.end(), static_cast<const uint8_t*>(p), static_cast<const uint8_t*>(p) + n);
  }
  std::vector<uint8_t> bytes_;
  uint32_t copies_ = 0;
  std::vector<pcie::UniqueFd> fds_;  // the application's ends, closed here once sent
  std::vector<uint64_t> fd_addrs_;
};

}  // namespace

struct DeviceHost::client {
  pcie::UniqueFd conn;
  int pid = 0;  // 0 until its hello
  bool broke_protocol = false;
  std::unique_ptr<ibcore::uverbs::ib_uverbs_file> file;
};

DeviceHost::DeviceHost(testbench::Host& host, const std::string& socket_path)
    : host_(host), socket_path_(socket_path) {
  sockaddr_un addr{};
  if (socket_path.size() >= sizeof addr.sun_path) throw std::runtime_error("socket path too long: " + socket_path);
  addr.sun_family = AF_UNIX;
  std::strcpy(addr.sun_path, socket_path.c_str());
  listener_.reset(::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0));
  ::unlink(socket_path.c_str());
  if (!listener_.valid() || ::bind(listener_.get(), reinterpret_cast<sockaddr*>(&addr), sizeof addr) ||
      ::listen(listener_.get(), 64))
    throw std::runtime_error("cannot listen at " + socket_path + ": " + std::strerror(errno));
}

DeviceHost::~DeviceHost() {
  while (!clients_.empty()) drop(clients_.size() - 1);
  ::unlink(socket_path_.c_str());
}

void DeviceHost::serve(const std::function<bool()>& stop) {
  while (!stop()) {
    std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
    for (const auto& c : clients_) fds.push_back({c->conn.get(), POLLIN, 0});
    if (::poll(fds.data(), fds.size(), 100) <= 0) continue;
    if (fds[0].revents & POLLIN) accept_client();
    // Newest last: dropping one leaves the indexes before it valid.
    for (size_t i = fds.size() - 1; i >= 1; i--) {
      if (!fds[i].revents) continue;
      client& c = *clients_[i - 1];
      if (serve_message(c)) continue;
      if (c.broke_protocol) served_.protocol_errors++;
      drop(i - 1);
    }
  }
}

void DeviceHost::accept_client() {
  pcie::UniqueFd conn(::accept4(listener_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!conn.valid()) return;
  auto c = std::make_unique<client>();
  c->conn = std::move(conn);
  clients_.push_back(std::move(c));
}

bool DeviceHost::serve_message(client& c) {
  std::vector<uint8_t> msg(uverbs_wire::kMaxMessage);
  const ssize_t n = ::recv(c.conn.get(), msg.data(), msg.size(), MSG_DONTWAIT);
  if (n < 0 && (errno == EAGAIN || errno == EINTR)) return true;
  if (n <= 0) return false;  // gone
  const auto broken = [&c] {
    c.broke_protocol = true;
    return false;
  };
  if (n < ssize_t(sizeof(uverbs_wire::op))) return broken();
  msg.resize(size_t(n));
  uverbs_wire::op type;
  std::memcpy(&type, msg.data(), sizeof type);
  if (!c.pid) {
    uverbs_wire::hello hi;
    if (type != uverbs_wire::op::hello || msg.size() != sizeof hi) return broken();
    std::memcpy(&hi, msg.data(), sizeof hi);
    if (hi.version != uverbs_wire::kVersion || hi.pid <= 0) {
      reply_builder().send(c.conn.get(), -EPROTO);
      return broken();
    }
    c.pid = hi.pid;
    served_.clients++;
    host_.run_on_host([&] { c.file = std::make_unique<ibcore::uverbs::ib_uverbs_file>(host_.driver()); });
    return reply_builder().send(c.conn.get(), 0);
  }
  switch (type) {
    case uverbs_wire::op::write: {
      uverbs_wire::write_request req;
      if (msg.size() < sizeof req) return broken();
      std::memcpy(&req, msg.data(), sizeof req);
      if (req.length != msg.size() - sizeof req) return broken();
      reply_builder reply;
      long ret = 0;
      host_.run_on_host([&] { ret = c.file->write(msg.data() + sizeof req, req.length, reply); });
      served_.commands++;
      if (ret < 0) served_.commands_failed++;
      return reply.send(c.conn.get(), ret);
    }
    case uverbs_wire::op::mmap: {
      uverbs_wire::mmap_request req;
      if (msg.size() != sizeof req) return broken();
      std::memcpy(&req, msg.data(), sizeof req);
      served_.mmaps++;
      ibcore::ib_mmap_range range;
      uverbs_wire::mmap_reply r{};
      host_.run_on_host([&] { r.ret = c.file->mmap(req.offset, req.length, &range); });
      if (!r.ret) {
        r.bar = range.bar;
        r.offset = range.offset;
      }
      return ::send(c.conn.get(), &r, sizeof r, MSG_NOSIGNAL | MSG_DONTWAIT) == ssize_t(sizeof r);
    }
    default: return broken();
  }
}

// The file closes with the connection, as the kernel's last fput closes it.
void DeviceHost::drop(size_t index) {
  std::unique_ptr<client> c = std::move(clients_[index]);
  clients_.erase(clients_.begin() + long(index));
  if (c->file) host_.run_on_host([&] { c->file.reset(); });
}

std::string device_host_report(const DeviceHost::counters& served, const testbench::SystemCounters& sys,
                               double wall_s) {
  const backends::DeviceCounters dev = sys.device.value_or(backends::DeviceCounters{});
  testbench::JsonWriter j;
  j.begin_object()
      .str("kind", "device_host")
      .num("sim_time_ps", sys.now_ps)
      .real("wall_time_s", wall_s)
      .begin_object("served")
      .num("clients", served.clients)
      .num("protocol_errors", served.protocol_errors)
      .num("commands", served.commands)
      .num("commands_failed", served.commands_failed)
      .num("mmaps", served.mmaps)
      .end_object()
      .begin_object("device")
      .num("cqp_commands", dev.cqp_commands)
      .num("mmio_writes", dev.mmio_writes)
      .num("mmio_reads", dev.mmio_reads)
      .num("bad_mmio", dev.bad_mmio)
      .num("cq_arms", dev.cq_arm_doorbells)
      .num("cqes_written", dev.cqes_written)
      .end_object()
      .begin_object("host")
      .num("dma_errors", sys.host.dma_errors)
      .num("mmio_errors", sys.host.mmio_errors)
      .num("msix_delivered", sys.host.msix_delivered)
      .end_object()
      .end_object();
  return j.text() + "\n";
}

}  // namespace irdma_sim::system
