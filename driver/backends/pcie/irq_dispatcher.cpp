#include "driver/backends/pcie/irq_dispatcher.h"

#include <pthread.h>
#include <sys/epoll.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <string>

namespace pcie {
namespace {

// epoll_event.data: the vector in the low half and its eventfd in the high half, so the
// thread reads the fd without taking the lock; all ones is the stop request.
constexpr uint64_t kWakeTag = ~0ull;
uint64_t tag(unsigned vector, int fd) { return (uint64_t(uint32_t(fd)) << 32) | vector; }

[[noreturn]] void os_failure(const char* what) {
  throw PciTransportError(std::string("pcie irq: ") + what + ": " + std::strerror(errno));
}

}  // namespace

IrqDispatcher::IrqDispatcher(PciTransport& transport, hal::PciConfig& config)
    : transport_(transport), config_(config) {
  epoll_.reset(::epoll_create1(EPOLL_CLOEXEC));
  if (!epoll_.valid()) os_failure("epoll_create1");
  wake_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_.valid()) os_failure("eventfd");
  epoll_event event{EPOLLIN, {}};
  event.data.u64 = kWakeTag;
  if (::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, wake_.get(), &event) != 0) os_failure("epoll_ctl");
  thread_ = std::thread([this] { run(); });
}

IrqDispatcher::~IrqDispatcher() {
  const uint64_t one = 1;
  if (::write(wake_.get(), &one, sizeof(one)) != sizeof(one)) std::terminate();  // cannot happen to an eventfd
  thread_.join();
  if (msix_cap_) disable_msix(msix_cap_, msix_flags_);
  if (error_eventfd_.valid()) disable_error_irq();
}

void IrqDispatcher::disable_error_irq() {
  try {
    transport_.disable_irqs(vfio::kErrIrqIndex);
  } catch (const PciTransportError&) {
    // A transport that is gone reports nothing any more either.
  }
  error_eventfd_ = UniqueFd();  // closed: out of the epoll set
}

int IrqDispatcher::request_error_irq(std::function<void()> handler) {
  std::unique_lock lock(mutex_);
  if (!handler) {
    if (!error_eventfd_.valid()) return 0;
    disable_error_irq();
    error_handler_.reset();
    if (std::this_thread::get_id() != thread_.get_id())
      handler_returned_.wait(lock, [&] { return running_ != kErrorVector; });
    return 0;
  }
  if (!error_eventfd_.valid()) {
    IrqInfo info;
    try {
      info = transport_.irq_info(vfio::kErrIrqIndex);
    } catch (const PciTransportError&) {
      return -EIO;
    }
    if (info.count == 0 || !(info.flags & vfio::kIrqInfoEventfd)) return -EOPNOTSUPP;
    UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    epoll_event event{EPOLLIN, {}};
    event.data.u64 = tag(kErrorVector, fd.get());
    if (!fd.valid() || ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &event) != 0) return -errno;
    try {
      transport_.set_irq_eventfds(vfio::kErrIrqIndex, 0, {fd.get()});
    } catch (const PciTransportError&) {
      return -EIO;
    }
    error_eventfd_ = std::move(fd);
  }
  error_handler_ = std::make_shared<const std::function<void()>>(std::move(handler));
  return 0;
}

void IrqDispatcher::disable_msix(uint8_t cap, uint16_t flags) {
  try {
    transport_.disable_irqs(vfio::kMsixIrqIndex);
  } catch (const PciTransportError&) {
    // A transport that is gone signals nothing any more either.
  }
  config_.write(cap + hal::PCI_MSIX_FLAGS, 2, flags & ~hal::PCI_MSIX_FLAGS_ENABLE);
}

int IrqDispatcher::alloc_irq_vectors(unsigned min, unsigned max) {
  std::lock_guard lock(mutex_);
  if (msix_cap_ || max < min) return -EINVAL;
  const uint8_t cap = config_.find_capability(hal::PCI_CAP_ID_MSIX);
  if (!cap) return -ENODEV;
  const uint16_t flags = config_.read16(cap + hal::PCI_MSIX_FLAGS);
  IrqInfo info;
  try {
    info = transport_.irq_info(vfio::kMsixIrqIndex);
  } catch (const PciTransportError&) {
    return -EIO;
  }
  if (!(info.flags & vfio::kIrqInfoEventfd)) return -ENODEV;
  // The function's table size, as far as the transport can signal.
  const unsigned available = std::min((flags & hal::PCI_MSIX_FLAGS_QSIZE) + 1u, info.count);
  if (available < std::max(min, 1u)) return -ENOSPC;
  const unsigned count = std::min(available, max);

  std::vector<UniqueFd> eventfds;
  std::vector<int> fds;
  for (unsigned v = 0; v < count; ++v) {
    UniqueFd fd(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
    epoll_event event{EPOLLIN, {}};
    event.data.u64 = tag(v, fd.get());
    if (!fd.valid() || ::epoll_ctl(epoll_.get(), EPOLL_CTL_ADD, fd.get(), &event) != 0) return -errno;
    fds.push_back(fd.get());
    eventfds.push_back(std::move(fd));  // closing an fd takes it out of the epoll set
  }
  config_.write(cap + hal::PCI_MSIX_FLAGS, 2, (flags | hal::PCI_MSIX_FLAGS_ENABLE) & ~hal::PCI_MSIX_FLAGS_MASKALL);
  try {
    transport_.set_irq_eventfds(vfio::kMsixIrqIndex, 0, fds);
  } catch (const PciTransportError&) {
    disable_msix(cap, flags);
    return -EIO;
  }
  eventfds_ = std::move(eventfds);
  handlers_.assign(count, nullptr);
  msix_cap_ = cap;
  msix_flags_ = flags;
  return int(count);
}

void IrqDispatcher::free_irq_vectors() {
  std::lock_guard lock(mutex_);
  if (!msix_cap_) return;
  disable_msix(msix_cap_, msix_flags_);
  eventfds_.clear();  // closed: out of the epoll set
  handlers_.clear();
  msix_cap_ = 0;
}

unsigned IrqDispatcher::num_vectors() const {
  std::lock_guard lock(mutex_);
  return unsigned(handlers_.size());
}

int IrqDispatcher::request_irq(unsigned vector, Handler handler) {
  std::lock_guard lock(mutex_);
  if (vector >= handlers_.size() || handlers_[vector] || !handler) return -EINVAL;
  handlers_[vector] = std::make_shared<const Handler>(std::move(handler));
  return 0;
}

void IrqDispatcher::free_irq(unsigned vector) {
  std::unique_lock lock(mutex_);
  if (vector >= handlers_.size() || !handlers_[vector]) return;
  handlers_[vector].reset();
  // A handler that frees its own vector cannot wait for itself; it is not called again.
  if (std::this_thread::get_id() != thread_.get_id())
    handler_returned_.wait(lock, [&] { return running_ != vector; });
}

void IrqDispatcher::run() {
  pthread_setname_np(pthread_self(), "pcie-irq");
  epoll_event events[16];
  for (;;) {
    const int n = ::epoll_wait(epoll_.get(), events, 16, -1);
    if (n < 0 && errno != EINTR) std::terminate();  // only a bad epoll fd fails, and ours is good
    for (int i = 0; i < n; ++i) {
      if (events[i].data.u64 == kWakeTag) return;
      // Signals that arrived since the last read coalesce into one interrupt, as an edge
      // MSI-X message does while its vector is pending.
      uint64_t count;
      if (::read(int(events[i].data.u64 >> 32), &count, sizeof(count)) != sizeof(count)) continue;
      dispatch(unsigned(events[i].data.u64 & 0xFFFFFFFF));
    }
  }
}

void IrqDispatcher::dispatch(unsigned vector) {
  std::shared_ptr<const Handler> handler;
  std::shared_ptr<const std::function<void()>> error_handler;
  {
    std::lock_guard lock(mutex_);
    if (vector == kErrorVector)
      error_handler = error_handler_;
    else if (vector < handlers_.size())
      handler = handlers_[vector];
    if (!handler && !error_handler) {
      spurious_.fetch_add(1, std::memory_order_relaxed);
      return;
    }
    running_ = vector;
    if (handler) delivered_.fetch_add(1, std::memory_order_relaxed);
  }
  // Our reference keeps it alive even if free_irq or request_error_irq dropped it meanwhile.
  if (handler)
    (*handler)(vector);
  else
    (*error_handler)();
  {
    std::lock_guard lock(mutex_);
    running_ = kNoVector;
  }
  handler_returned_.notify_all();
}

}  // namespace pcie
