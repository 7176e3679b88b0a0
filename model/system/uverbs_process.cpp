#include "model/system/uverbs_process.h"

#include <fcntl.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

namespace irdma_sim::system {

namespace {

constexpr uint64_t kPage = 4096;
constexpr size_t kMaxEvent = 64;

// Pinned pages: mapped for the device until the registration that pinned them goes.
class ForeignUmem final : public ibcore::ib_umem {
 public:
  ForeignUmem(platform::HostMemory& memory, uint64_t iova) : memory_(memory), iova_(iova) {}
  ~ForeignUmem() override { memory_.free(iova_); }

 private:
  platform::HostMemory& memory_;
  uint64_t iova_;
};

uint64_t handle_of(const std::vector<uint8_t>& event) {
  uint64_t h = 0;
  std::memcpy(&h, event.data(), std::min(event.size(), sizeof h));
  return h;
}

}  // namespace

std::shared_ptr<SocketEventFile> SocketEventFile::make(pcie::UniqueFd& app_end) {
  int pair[2];
  if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair)) return nullptr;
  auto f = std::make_shared<SocketEventFile>();
  f->send_.reset(pair[0]);
  f->unread_.reset(::fcntl(pair[1], F_DUPFD_CLOEXEC, 0));
  if (!f->unread_.valid()) {
    ::close(pair[1]);
    return nullptr;
  }
  app_end.reset(pair[1]);
  return f;
}

void SocketEventFile::queue_event(const void* desc, size_t len) {
  const auto* p = static_cast<const uint8_t*>(desc);
  backlog_.emplace_back(p, p + len);
  flush();
}

bool SocketEventFile::flush() {
  while (!backlog_.empty()) {
    const std::vector<uint8_t>& e = backlog_.front();
    if (::send(send_.get(), e.data(), e.size(), MSG_DONTWAIT | MSG_NOSIGNAL) != ssize_t(e.size())) {
      // Full: it goes when the application has read some. Its end closed: nobody reads.
      if (errno == EAGAIN) return false;
      backlog_.clear();
      return true;
    }
    backlog_.pop_front();
  }
  return true;
}

// What the application has not read comes back through the host's handle on its end;
// the other objects' events go back in, in their order, ahead of the backlog.
uint32_t SocketEventFile::withdraw_events(uint64_t user_handle) {
  std::deque<std::vector<uint8_t>> kept;
  uint32_t withdrawn = 0;
  std::vector<uint8_t> buf(kMaxEvent);
  for (;;) {
    const ssize_t n = ::recv(unread_.get(), buf.data(), buf.size(), MSG_DONTWAIT);
    if (n <= 0) break;
    std::vector<uint8_t> e(buf.begin(), buf.begin() + n);
    if (handle_of(e) == user_handle)
      withdrawn++;
    else
      kept.push_back(std::move(e));
  }
  for (std::vector<uint8_t>& e : backlog_) {
    if (handle_of(e) == user_handle)
      withdrawn++;
    else
      kept.push_back(std::move(e));
  }
  backlog_ = std::move(kept);
  flush();
  return withdrawn;
}

// The application's own memory decides: a range it does not have fails as the kernel's
// pinning would. Its pages are mapped whole, one IOVA range for them all.
std::unique_ptr<ibcore::ib_umem> UverbsProcess::ib_umem_get(uint64_t addr, uint64_t length, bool writable,
                                                            int& err) {
  if (length == 0 || addr + length < addr) {
    err = -EINVAL;
    return nullptr;
  }
  if (!process_.readable(addr, length)) {
    err = -EFAULT;
    return nullptr;
  }
  const platform::HostMemory::Region r = memory_.map_foreign(process_, addr, length);
  if (!r.size) {
    err = -ENOMEM;
    return nullptr;
  }
  auto umem = std::make_unique<ForeignUmem>(memory_, r.iova);
  umem->address = addr;
  umem->length = length;
  umem->writable = writable;
  for (uint64_t off = 0; off < r.size; off += kPage) umem->dma_blocks.push_back(r.iova + off);
  return umem;
}

bool UverbsProcess::numbered(const int32_t* fds, uint32_t count) {
  if (count != unnumbered_.size()) return false;
  for (uint32_t i = 0; i < count; i++) {
    files_[fds[i]] = unnumbered_[i];
    all_files_.push_back(unnumbered_[i]);
  }
  unnumbered_.clear();
  return true;
}

std::shared_ptr<SocketEventFile> UverbsProcess::event_file(int fd) const {
  const auto it = files_.find(fd);
  return it == files_.end() ? nullptr : it->second;
}

bool UverbsProcess::flush_events() {
  bool done = true;
  for (auto it = all_files_.begin(); it != all_files_.end();) {
    if (const std::shared_ptr<SocketEventFile> f = it->lock()) {
      done &= f->flush();
      ++it;
    } else {
      it = all_files_.erase(it);
    }
  }
  return done;
}

const ibcore::ib_mmap_range* UverbsProcess::mapping(uint64_t offset) const {
  const auto it = mappings_.find(offset);
  return it == mappings_.end() ? nullptr : &it->second;
}

}  // namespace irdma_sim::system
