// The uverbs shim: preloaded into an unmodified rdma-core application, it plays the part of
// the kernel's side of /dev/infiniband/uverbs0. The device itself, and the kernel half that
// answers commands, live in the device host, which IRDMA_SIM_HOST names (its socket);
// libibverbs finds the device through SYSFS_PATH, which the host writes.
//   - socket(AF_NETLINK, NETLINK_RDMA): refused, so libibverbs reads sysfs instead.
//   - open/stat of /dev/infiniband/uverbs0: a connection to the host, behind a descriptor of
//     /dev/null, the character device (1:3) that sysfs names, so fstat's check passes.
//   - ioctl on it: ENOTTY, so libibverbs speaks write().
//   - write: the command goes to the host; the reply's bytes land where the host says, with
//     the files it installs (event files) received as descriptors.
//   - mmap: the doorbell page, as anonymous memory the provider stores to. After every
//     verb that may ring (the context's post_send, post_recv, req_notify_cq and bind_mw,
//     wrapped once ibv_open_device returns) the words it stored there go to the host as the
//     MMIO writes they are, in one posted message, and the page is cleared again. A store
//     of zero would go unseen; no doorbell is zero (queue ids start above it).
//   - the event files a reply installs: their numbers go back to the host (CREATE_CQ names
//     a channel by its number), and so does their close.
//   - the host may read and write this process's memory (PR_SET_PTRACER), as the device's
//     DMA into what it registers.
// Without IRDMA_SIM_HOST every call passes straight through.
#include <dlfcn.h>
#include <fcntl.h>
#include <infiniband/verbs.h>
#include <linux/netlink.h>
#include <sys/prctl.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/uio.h>
#include <sys/un.h>
#include <unistd.h>

#include <cerrno>
#include <cstdarg>
#include <cstdlib>
#include <cstring>
#include <algorithm>
#include <map>
#include <memory>
#include <mutex>
#include <vector>

#include "driver/backends/uverbs_shim/wire.h"

namespace {

constexpr const char* kDevicePath = "/dev/infiniband/uverbs0";
constexpr int kNetlinkRdma = 20;  // NETLINK_RDMA
constexpr uint32_t kExtendedCommand = 0x80000000u;  // IB_USER_VERBS_CMD_FLAG_EXTENDED

template <typename F>
F real(const char* name) {
  return reinterpret_cast<F>(dlsym(RTLD_NEXT, name));
}

// An open of the device: the descriptor the application holds (of /dev/null) and the
// connection to the host behind it, and the device pages mapped through it.
struct device_file {
  int conn = -1;
  std::mutex lock;  // one command at a time per file, as the host takes them
  struct page {
    uint32_t* words = nullptr;  // 1024
    uint64_t map_offset = 0;
  };
  std::mutex db_lock;  // one ringing verb at a time: its stores are told apart from another's
  std::vector<page> pages;  // under db_lock
  ~device_file() { real<int (*)(int)>("close")(conn); }
};

// Shared: a thread may close a descriptor while another is in a write on it, which then
// finishes on the connection it started with, as a write on a closed file does. Never
// destroyed: close() may be called by exit handlers that run after static destructors.
std::mutex& files_lock = *new std::mutex;
std::map<int, std::shared_ptr<device_file>>& files = *new std::map<int, std::shared_ptr<device_file>>;

// The event files replies installed, by number, and the device file each came through.
std::map<int, std::weak_ptr<device_file>>& event_files = *new std::map<int, std::weak_ptr<device_file>>;

// The shared owner of `f`, under files_lock (it is in `files`: a command is running on it).
std::shared_ptr<device_file> file_of_locked(device_file* f) {
  for (const auto& [fd, owner] : files)
    if (owner.get() == f) return owner;
  return nullptr;
}

std::shared_ptr<device_file> file_of(int fd) {
  std::lock_guard<std::mutex> guard(files_lock);
  const auto it = files.find(fd);
  return it == files.end() ? nullptr : it->second;
}

const char* host_socket() {
  const char* p = std::getenv("IRDMA_SIM_HOST");
  return p && *p ? p : nullptr;
}

bool is_device(const char* path) { return path && host_socket() && std::strcmp(path, kDevicePath) == 0; }

bool send_all(int conn, const void* data, size_t len) {
  return ::send(conn, data, len, MSG_NOSIGNAL) == ssize_t(len);
}

// One datagram and the descriptors that came with it; false when the host is gone.
bool receive(int conn, std::vector<uint8_t>& buf, std::vector<int>& fds) {
  buf.resize(uverbs_wire::kMaxMessage);
  alignas(cmsghdr) char control[CMSG_SPACE(sizeof(int) * uverbs_wire::kMaxFds)];
  iovec iov{buf.data(), buf.size()};
  msghdr msg{};
  msg.msg_iov = &iov;
  msg.msg_iovlen = 1;
  msg.msg_control = control;
  msg.msg_controllen = sizeof control;
  ssize_t n;
  do n = ::recvmsg(conn, &msg, MSG_CMSG_CLOEXEC);
  while (n < 0 && errno == EINTR);
  if (n <= 0) return false;
  buf.resize(size_t(n));
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); c; c = CMSG_NXTHDR(&msg, c))
    if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_RIGHTS) {
      const size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
      for (size_t i = 0; i < count; i++) {
        int fd;
        std::memcpy(&fd, CMSG_DATA(c) + i * sizeof(int), sizeof fd);
        fds.push_back(fd);
      }
    }
  return true;
}

void close_all(const std::vector<int>& fds) {
  for (int fd : fds) real<int (*)(int)>("close")(fd);
}

// The kernel's copy_from_user and copy_to_user on the application's own memory: an address
// it does not have (or cannot write) gives false, where a plain copy would crash it.
bool copy_from_self(void* dst, const void* src, size_t len) {
  const iovec local{dst, len}, remote{const_cast<void*>(src), len};
  return ::process_vm_readv(::getpid(), &local, 1, &remote, 1, 0) == ssize_t(len);
}

bool copy_to_self(void* dst, const void* src, size_t len) {
  const iovec local{const_cast<void*>(src), len}, remote{dst, len};
  return ::process_vm_writev(::getpid(), &local, 1, &remote, 1, 0) == ssize_t(len);
}

// Whether [addr, addr + len) can take a write: its bytes read, then written back as they were.
bool writable(uint64_t addr, size_t len) {
  std::vector<uint8_t> now(len);
  return copy_from_self(now.data(), reinterpret_cast<void*>(addr), len) &&
         copy_to_self(reinterpret_cast<void*>(addr), now.data(), len);
}

// Applies a reply: its copies, then the numbers of the files it installed. A reply that
// does not parse is the host's fault: the command fails with EIO and its files are closed.
// A copy to memory the application cannot write fails it with EFAULT before anything lands
// (what the command made stays the host's until the file closes).
long apply_reply(const std::vector<uint8_t>& buf, const std::vector<int>& fds) {
  uverbs_wire::reply r;
  if (buf.size() < sizeof r) return -EIO;
  std::memcpy(&r, buf.data(), sizeof r);
  size_t pos = sizeof r;
  std::vector<std::pair<uint64_t, std::vector<uint8_t>>> copies;
  for (uint32_t i = 0; i < r.copies; i++) {
    uverbs_wire::copy c;
    if (buf.size() - pos < sizeof c) return -EIO;
    std::memcpy(&c, buf.data() + pos, sizeof c);
    pos += sizeof c;
    const size_t padded = (size_t(c.len) + 7) & ~size_t(7);
    if (buf.size() - pos < padded) return -EIO;
    copies.emplace_back(c.addr, std::vector<uint8_t>(buf.begin() + long(pos), buf.begin() + long(pos + c.len)));
    pos += padded;
  }
  if (r.fds != fds.size() || buf.size() - pos != size_t(r.fds) * 8) return -EIO;
  std::vector<uint64_t> fd_addrs(fds.size());
  for (size_t i = 0; i < fds.size(); i++) std::memcpy(&fd_addrs[i], buf.data() + pos + 8 * i, 8);
  for (const auto& [addr, bytes] : copies)
    if (!writable(addr, bytes.size())) return -EFAULT;
  for (uint64_t addr : fd_addrs)
    if (!writable(addr, sizeof(uint32_t))) return -EFAULT;
  for (const auto& [addr, bytes] : copies) copy_to_self(reinterpret_cast<void*>(addr), bytes.data(), bytes.size());
  for (size_t i = 0; i < fds.size(); i++) {
    const uint32_t fd = uint32_t(fds[i]);
    copy_to_self(reinterpret_cast<void*>(fd_addrs[i]), &fd, sizeof fd);
  }
  return r.ret;
}

int open_device(int flags) {
  const int conn = ::socket(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0);
  if (conn < 0) return -1;
  sockaddr_un addr{};
  addr.sun_family = AF_UNIX;
  std::strncpy(addr.sun_path, host_socket(), sizeof addr.sun_path - 1);
  const uverbs_wire::hello hi{uverbs_wire::op::hello, uverbs_wire::kVersion, int32_t(::getpid()), 0};
  std::vector<uint8_t> buf;
  std::vector<int> fds;
  const bool connected = ::connect(conn, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0;
  // The host's device reads and writes what this process registers (Yama's ptrace_scope 1
  // otherwise allows it only to ancestors). Refused where there is no Yama: not needed.
  ucred host{};
  socklen_t host_len = sizeof host;
  if (connected && ::getsockopt(conn, SOL_SOCKET, SO_PEERCRED, &host, &host_len) == 0)
    ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(host.pid), 0, 0, 0);
  if (!connected || !send_all(conn, &hi, sizeof hi) || !receive(conn, buf, fds) || apply_reply(buf, fds) != 0) {
    close_all(fds);
    real<int (*)(int)>("close")(conn);
    errno = ENODEV;  // as an open of a device whose driver is gone
    return -1;
  }
  const int fd = real<int (*)(const char*, int, ...)>("open")("/dev/null", (flags & O_CLOEXEC) | O_RDWR);
  if (fd < 0) {
    real<int (*)(int)>("close")(conn);
    return -1;
  }
  auto f = std::make_shared<device_file>();
  f->conn = conn;
  std::lock_guard<std::mutex> guard(files_lock);
  files[fd] = std::move(f);
  return fd;
}

// The reply buffer a command names (its `response` and out words), as the kernel reads them.
uint64_t reply_range(const uint8_t* cmd, size_t count, size_t* len) {
  *len = 0;
  uint32_t command;
  uint16_t out_words, provider_out_words;
  uint64_t response;
  if (count < 16) return 0;
  std::memcpy(&command, cmd, 4);
  std::memcpy(&out_words, cmd + 6, 2);
  std::memcpy(&response, cmd + 8, 8);
  if (command & kExtendedCommand) {
    if (count < 24) return 0;
    std::memcpy(&provider_out_words, cmd + 18, 2);
    *len = (size_t(out_words) + provider_out_words) * 8;
  } else {
    *len = size_t(out_words) * 4;
  }
  return response;
}

long device_write(device_file* f, const void* buf, size_t count) {
  if (count > uverbs_wire::kMaxMessage - sizeof(uverbs_wire::write_request)) return -EINVAL;
  size_t reply_len = 0;
  std::vector<uint8_t> msg(sizeof(uverbs_wire::write_request) + count);
  const uverbs_wire::write_request req{uverbs_wire::op::write, uint32_t(count)};
  std::memcpy(msg.data(), &req, sizeof req);
  if (!copy_from_self(msg.data() + sizeof req, buf, count)) return -EFAULT;
  // Where the reply goes must take it before the host acts: a kernel whose copy_to_user
  // fails undoes the command, so the same command with a good address succeeds after.
  const uint64_t response = reply_range(msg.data() + sizeof req, count, &reply_len);
  if (reply_len && !writable(response, reply_len)) return -EFAULT;
  std::lock_guard<std::mutex> guard(f->lock);
  std::vector<uint8_t> reply;
  std::vector<int> fds;
  if (!send_all(f->conn, msg.data(), msg.size()) || !receive(f->conn, reply, fds)) return -EIO;
  const long ret = apply_reply(reply, fds);
  if (ret < 0) {
    close_all(fds);
    return ret;
  }
  if (!fds.empty()) {
    // The host learns the numbers before the next command can name one.
    uverbs_wire::files numbers{uverbs_wire::op::files, uint32_t(fds.size()), {}};
    for (size_t i = 0; i < fds.size(); i++) numbers.fd[i] = fds[i];
    if (!send_all(f->conn, &numbers, sizeof numbers)) return -EIO;
    std::lock_guard<std::mutex> guard(files_lock);
    for (int fd : fds) event_files[fd] = file_of_locked(f);
  }
  return ret;
}

// After a verb that may have rung: the words stored to the device's pages, as one posted
// message, the pages cleared for the next verb. Under the file's db_lock.
void forward_doorbells(device_file* f) {
  uverbs_wire::doorbell_store stores[uverbs_wire::kMaxStores];
  uint32_t n = 0;
  for (const device_file::page& p : f->pages)
    for (uint32_t i = 0; i < 1024 && n < uverbs_wire::kMaxStores; i++)
      if (const uint32_t v = __atomic_load_n(&p.words[i], __ATOMIC_RELAXED)) {
        stores[n++] = {p.map_offset, i * 4, v};
        __atomic_store_n(&p.words[i], 0, __ATOMIC_RELAXED);
      }
  if (n == 0) return;
  std::vector<uint8_t> msg(sizeof(uverbs_wire::doorbell) + n * sizeof stores[0]);
  const uverbs_wire::doorbell d{uverbs_wire::op::doorbell, n};
  std::memcpy(msg.data(), &d, sizeof d);
  std::memcpy(msg.data() + sizeof d, stores, n * sizeof stores[0]);
  send_all(f->conn, msg.data(), msg.size());  // a host gone fails the next command
}

void* device_mmap(device_file* f, size_t length, int prot, uint64_t offset) {
  const uverbs_wire::mmap_request req{uverbs_wire::op::mmap, 0, offset, length};
  std::lock_guard<std::mutex> guard(f->lock);
  std::vector<uint8_t> reply;
  std::vector<int> fds;
  uverbs_wire::mmap_reply r{};
  if (!send_all(f->conn, &req, sizeof req) || !receive(f->conn, reply, fds) || reply.size() != sizeof r) {
    close_all(fds);
    errno = EIO;
    return MAP_FAILED;
  }
  std::memcpy(&r, reply.data(), sizeof r);
  if (r.ret) {
    errno = int(-r.ret);
    return MAP_FAILED;
  }
  void* page = real<void* (*)(void*, size_t, int, int, int, off_t)>("mmap")(nullptr, length, prot,
                                                                             MAP_SHARED | MAP_ANONYMOUS, -1, 0);
  if (page != MAP_FAILED) {
    std::lock_guard<std::mutex> db_guard(f->db_lock);
    f->pages.push_back({static_cast<uint32_t*>(page), offset});
  }
  return page;
}

// The verbs that may ring, wrapped on every context the application opens: each runs the
// provider's own, then forwards what it stored to the device's pages.
struct wrapped_ops {
  int (*post_send)(ibv_qp*, ibv_send_wr*, ibv_send_wr**);
  int (*post_recv)(ibv_qp*, ibv_recv_wr*, ibv_recv_wr**);
  int (*req_notify_cq)(ibv_cq*, int);
  int (*bind_mw)(ibv_qp*, ibv_mw*, ibv_mw_bind*);
};

std::mutex& contexts_lock = *new std::mutex;
std::map<ibv_context*, wrapped_ops>& contexts = *new std::map<ibv_context*, wrapped_ops>;

template <typename Call>
int ringing(ibv_context* ctx, Call call) {
  wrapped_ops ops;
  {
    std::lock_guard<std::mutex> guard(contexts_lock);
    ops = contexts.at(ctx);
  }
  const std::shared_ptr<device_file> f = file_of(ctx->cmd_fd);
  if (!f) return call(ops);
  std::lock_guard<std::mutex> db_guard(f->db_lock);
  const int ret = call(ops);
  forward_doorbells(f.get());
  return ret;
}

int shim_post_send(ibv_qp* qp, ibv_send_wr* wr, ibv_send_wr** bad) {
  return ringing(qp->context, [&](const wrapped_ops& o) { return o.post_send(qp, wr, bad); });
}
int shim_post_recv(ibv_qp* qp, ibv_recv_wr* wr, ibv_recv_wr** bad) {
  return ringing(qp->context, [&](const wrapped_ops& o) { return o.post_recv(qp, wr, bad); });
}
int shim_req_notify_cq(ibv_cq* cq, int solicited) {
  return ringing(cq->context, [&](const wrapped_ops& o) { return o.req_notify_cq(cq, solicited); });
}
int shim_bind_mw(ibv_qp* qp, ibv_mw* mw, ibv_mw_bind* bind) {
  return ringing(qp->context, [&](const wrapped_ops& o) { return o.bind_mw(qp, mw, bind); });
}

// libibverbs's own entry points: the application's reference may be to a copy loaded
// privately (a Python extension's), so they are looked up in the library loaded, by version.
template <typename F>
F verbs_entry(const char* name) {
  void* lib = dlopen("libibverbs.so.1", RTLD_NOLOAD | RTLD_LAZY);
  F fn = lib ? reinterpret_cast<F>(dlvsym(lib, name, "IBVERBS_1.1")) : nullptr;
  if (lib) dlclose(lib);
  return fn;
}

}  // namespace

extern "C" {

int socket(int domain, int type, int protocol) {
  if (host_socket() && domain == AF_NETLINK && protocol == kNetlinkRdma) {
    errno = EPROTONOSUPPORT;
    return -1;
  }
  return real<int (*)(int, int, int)>("socket")(domain, type, protocol);
}

int open(const char* path, int flags, ...) {
  if (is_device(path)) return open_device(flags);
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
  va_end(ap);
  return real<int (*)(const char*, int, ...)>("open")(path, flags, mode);
}

int open64(const char* path, int flags, ...) {
  if (is_device(path)) return open_device(flags);
  va_list ap;
  va_start(ap, flags);
  const mode_t mode = (flags & (O_CREAT | O_TMPFILE)) ? va_arg(ap, mode_t) : 0;
  va_end(ap);
  return real<int (*)(const char*, int, ...)>("open64")(path, flags, mode);
}

int __open_2(const char* path, int flags) {
  if (is_device(path)) return open_device(flags);
  return real<int (*)(const char*, int)>("__open_2")(path, flags);
}

int __open64_2(const char* path, int flags) {
  if (is_device(path)) return open_device(flags);
  return real<int (*)(const char*, int)>("__open64_2")(path, flags);
}

int stat(const char* path, struct stat* st) {
  return real<int (*)(const char*, struct stat*)>("stat")(is_device(path) ? "/dev/null" : path, st);
}

int stat64(const char* path, struct stat64* st) {
  return real<int (*)(const char*, struct stat64*)>("stat64")(is_device(path) ? "/dev/null" : path, st);
}

ssize_t write(int fd, const void* buf, size_t count) {
  if (const std::shared_ptr<device_file> f = file_of(fd)) {
    const long ret = device_write(f.get(), buf, count);
    if (ret < 0) {
      errno = int(-ret);
      return -1;
    }
    return ret;
  }
  return real<ssize_t (*)(int, const void*, size_t)>("write")(fd, buf, count);
}

int ioctl(int fd, unsigned long request, ...) {
  va_list ap;
  va_start(ap, request);
  void* arg = va_arg(ap, void*);
  va_end(ap);
  if (file_of(fd)) {
    errno = ENOTTY;
    return -1;
  }
  return real<int (*)(int, unsigned long, void*)>("ioctl")(fd, request, arg);
}

void* mmap(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  if (const std::shared_ptr<device_file> f = file_of(fd)) return device_mmap(f.get(), length, prot, uint64_t(offset));
  return real<void* (*)(void*, size_t, int, int, int, off_t)>("mmap")(addr, length, prot, flags, fd, offset);
}

void* mmap64(void* addr, size_t length, int prot, int flags, int fd, off_t offset) {
  return mmap(addr, length, prot, flags, fd, offset);
}

int close(int fd) {
  std::shared_ptr<device_file> owner;
  {
    std::lock_guard<std::mutex> guard(files_lock);
    files.erase(fd);  // the connection closes with its last user
    const auto it = event_files.find(fd);
    if (it != event_files.end()) {
      owner = it->second.lock();
      event_files.erase(it);
    }
  }
  if (owner) {
    const uverbs_wire::closed c{uverbs_wire::op::closed, fd};
    send_all(owner->conn, &c, sizeof c);
  }
  return real<int (*)(int)>("close")(fd);
}

int munmap(void* addr, size_t length) {
  {
    std::lock_guard<std::mutex> guard(files_lock);
    for (const auto& [fd, f] : files) {
      std::lock_guard<std::mutex> db_guard(f->db_lock);
      auto& pages = f->pages;
      pages.erase(std::remove_if(pages.begin(), pages.end(),
                                 [addr](const device_file::page& p) { return p.words == addr; }),
                  pages.end());
    }
  }
  return real<int (*)(void*, size_t)>("munmap")(addr, length);
}

ibv_context* ibv_open_device(ibv_device* device) {
  static const auto open = verbs_entry<ibv_context* (*)(ibv_device*)>("ibv_open_device");
  ibv_context* ctx = open ? open(device) : nullptr;
  if (!ctx || !file_of(ctx->cmd_fd)) return ctx;
  std::lock_guard<std::mutex> guard(contexts_lock);
  contexts[ctx] = {ctx->ops.post_send, ctx->ops.post_recv, ctx->ops.req_notify_cq, ctx->ops.bind_mw};
  ctx->ops.post_send = shim_post_send;
  ctx->ops.post_recv = shim_post_recv;
  ctx->ops.req_notify_cq = shim_req_notify_cq;
  ctx->ops.bind_mw = shim_bind_mw;
  return ctx;
}

int ibv_close_device(ibv_context* ctx) {
  static const auto close_device = verbs_entry<int (*)(ibv_context*)>("ibv_close_device");
  {
    std::lock_guard<std::mutex> guard(contexts_lock);
    contexts.erase(ctx);
  }
  return close_device ? close_device(ctx) : -1;
}

}  // extern "C"
