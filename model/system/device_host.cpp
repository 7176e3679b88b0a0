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

constexpr uint64_t kDeviceSlicePs = 100'000'000;  // 100 us of the device's time between looks at the sockets

// The application a command came from: what the command writes to its memory and the
// files it installs, gathered into the reply.
class reply_builder final : public ibcore::uverbs::ib_uverbs_user {
 public:
  explicit reply_builder(UverbsProcess* process = nullptr) : process_(process) {}
  bool copy_to_user(uint64_t addr, const void* src, size_t len) override {
    const uverbs_wire::copy c{addr, uint32_t(len), 0};
    append(&c, sizeof c);
    append(src, len);
    bytes_.resize((bytes_.size() + 7) & ~size_t(7));
    copies_++;
    return true;
  }
  std::shared_ptr<ib_uverbs_event_file> install_event_file(uint64_t fd_addr) override {
    pcie::UniqueFd app_end;
    std::shared_ptr<SocketEventFile> f;
    if (fds_.size() == uverbs_wire::kMaxFds || !(f = SocketEventFile::make(app_end))) return nullptr;
    fds_.push_back(std::move(app_end));
    fd_addrs_.push_back(fd_addr);
    installed_.push_back(f);
    return f;
  }
  std::shared_ptr<ib_uverbs_event_file> fget_event_file(int fd) override { return process_->event_file(fd); }
  ibcore::ib_user_mm& mm() override { return *process_; }

  // Sends the reply with `ret`; false when the application has gone. The files it
  // installed wait for their numbers in the application.
  bool send(int conn, int64_t ret) {
    uverbs_wire::reply r{ret, copies_, uint32_t(fds_.size())};
    if (ret < 0) r.copies = r.fds = 0;  // a failed command writes nothing the caller sees
    std::vector<uint8_t> msg(sizeof r);
    std::memcpy(msg.data(), &r, sizeof r);
    if (ret >= 0) {
      msg.insert(msg.end(), bytes_.begin(), bytes_.end());
      for (uint64_t a : fd_addrs_) msg.insert(msg.end(), reinterpret_cast<uint8_t*>(&a), reinterpret_cast<uint8_t*>(&a) + 8);
      if (!installed_.empty()) process_->installed(std::move(installed_));
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
  UverbsProcess* process_;
  std::vector<uint8_t> bytes_;
  uint32_t copies_ = 0;
  std::vector<pcie::UniqueFd> fds_;  // the application's ends, closed here once sent
  std::vector<uint64_t> fd_addrs_;
  std::vector<std::shared_ptr<SocketEventFile>> installed_;
};

}  // namespace

struct DeviceHost::client {
  pcie::UniqueFd conn;
  std::unique_ptr<UverbsProcess> process;  // once it said hello
  bool broke_protocol = false;
  // After the process: what the file pinned in its memory goes first.
  std::unique_ptr<ibcore::uverbs::ib_uverbs_file> file;
};

DeviceHost::DeviceHost(Simulation& host, const std::string& socket_path)
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
  // The device's own events (DEVICE_FATAL once the driver gives it up) reach every context.
  host_.run_on_host([this] {
    host_.driver().event_handler = [this](const ibcore::ib_event& e) {
      for (const auto& c : clients_)
        if (c->file) c->file->device_event(e);
    };
  });
}

DeviceHost::~DeviceHost() {
  host_.run_on_host([this] { host_.driver().event_handler = nullptr; });
  while (!clients_.empty()) drop(clients_.size() - 1);
  ::unlink(socket_path_.c_str());
}

// While the device has work it runs between looks at the sockets; idle, the host sleeps in
// poll() until an application speaks (or an event backlog may drain).
void DeviceHost::serve(const std::function<bool()>& stop) {
  bool device_busy = false;
  while (!stop()) {
    bool backlog = false;
    for (const auto& c : clients_)
      if (c->process) backlog |= !c->process->flush_events();
    std::vector<pollfd> fds{{listener_.get(), POLLIN, 0}};
    for (const auto& c : clients_) fds.push_back({c->conn.get(), POLLIN, 0});
    const int ready = ::poll(fds.data(), fds.size(), device_busy ? 0 : backlog ? 10 : 100);
    if (ready <= 0) {
      device_busy = host_.run_device(kDeviceSlicePs);
      continue;
    }
    if (fds[0].revents & POLLIN) accept_client();
    // Newest last: dropping one leaves the indexes before it valid.
    for (size_t i = fds.size() - 1; i >= 1; i--) {
      if (!fds[i].revents) continue;
      client& c = *clients_[i - 1];
      if (serve_message(c)) continue;
      if (c.broke_protocol) served_.protocol_errors++;
      drop(i - 1);
    }
    device_busy = host_.run_device(kDeviceSlicePs);
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
  if (!c.process) {
    uverbs_wire::hello hi;
    if (type != uverbs_wire::op::hello || msg.size() != sizeof hi) return broken();
    std::memcpy(&hi, msg.data(), sizeof hi);
    if (hi.version != uverbs_wire::kVersion || hi.pid <= 0) {
      reply_builder().send(c.conn.get(), -EPROTO);
      return broken();
    }
    c.process = std::make_unique<UverbsProcess>(hi.pid, host_.memory());
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
      reply_builder reply(c.process.get());
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
        c.process->mapped(req.offset, range);
      }
      return ::send(c.conn.get(), &r, sizeof r, MSG_NOSIGNAL | MSG_DONTWAIT) == ssize_t(sizeof r);
    }
    case uverbs_wire::op::doorbell: {
      uverbs_wire::doorbell d;
      if (msg.size() < sizeof d) return broken();
      std::memcpy(&d, msg.data(), sizeof d);
      if (d.count > uverbs_wire::kMaxStores || msg.size() != sizeof d + d.count * sizeof(uverbs_wire::doorbell_store))
        return broken();
      std::vector<uverbs_wire::doorbell_store> stores(d.count);
      std::memcpy(stores.data(), msg.data() + sizeof d, d.count * sizeof(uverbs_wire::doorbell_store));
      return ring(c, stores);
    }
    case uverbs_wire::op::files: {
      uverbs_wire::files f;
      if (msg.size() != sizeof f) return broken();
      std::memcpy(&f, msg.data(), sizeof f);
      return f.count <= uverbs_wire::kMaxFds && c.process->numbered(f.fd, f.count) ? true : broken();
    }
    case uverbs_wire::op::closed: {
      uverbs_wire::closed f;
      if (msg.size() != sizeof f) return broken();
      std::memcpy(&f, msg.data(), sizeof f);
      c.process->closed(f.fd);
      return true;
    }
    default: return broken();
  }
}

// Stores to a page the application mapped: the MMIO writes its CPU would post. A store
// outside every page it mapped breaks the protocol (its CPU would have faulted first).
bool DeviceHost::ring(client& c, const std::vector<uverbs_wire::doorbell_store>& stores) {
  for (const uverbs_wire::doorbell_store& s : stores) {
    const ibcore::ib_mmap_range* range = c.process->mapping(s.map_offset);
    if (!range || range->bar != 0 || uint64_t(s.offset) + 4 > range->length) {
      c.broke_protocol = true;
      return false;
    }
  }
  served_.doorbells += stores.size();
  host_.run_on_host([&] {
    hal::Bar& bar0 = host_.driver().hw().bar0;
    for (const uverbs_wire::doorbell_store& s : stores)
      bar0.write32(c.process->mapping(s.map_offset)->offset + s.offset, s.value);
  });
  return true;
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
      .num("doorbells", served.doorbells)
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
