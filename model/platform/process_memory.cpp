#include "model/platform/process_memory.h"

#include <dirent.h>
#include <sys/uio.h>

#include <cerrno>
#include <cstdlib>
#include <string>

#include <algorithm>
#include <vector>

namespace irdma_sim::platform {

namespace {

constexpr uint64_t kPage = 4096;
constexpr size_t kIovMax = 1024;  // UIO_MAXIOV

}  // namespace

template <typename Access>
bool ProcessMemory::through_live_thread(Access access) {
  if (access(tid_)) return true;
  if (errno != ESRCH) return false;
  DIR* dir = ::opendir(("/proc/" + std::to_string(pid_) + "/task").c_str());
  if (!dir) return false;
  bool ok = false;
  while (const dirent* e = ::readdir(dir)) {
    const pid_t tid = pid_t(std::atoi(e->d_name));
    if (tid > 0 && tid != tid_ && access(tid)) {
      tid_ = tid;
      ok = true;
      break;
    }
  }
  ::closedir(dir);
  return ok;
}

bool ProcessMemory::read(uint64_t addr, void* dst, size_t len) {
  const iovec local{dst, len}, remote{reinterpret_cast<void*>(addr), len};
  return through_live_thread(
      [&](pid_t tid) { return ::process_vm_readv(tid, &local, 1, &remote, 1, 0) == ssize_t(len); });
}

// Two remote pieces, copied in order by one call: what the owner's CPUs can see first is
// the body, never the last qword without it.
bool ProcessMemory::write(uint64_t addr, const void* src, size_t len) {
  const iovec local{const_cast<void*>(src), len};
  iovec remote[2] = {{reinterpret_cast<void*>(addr), len}, {}};
  unsigned pieces = 1;
  if (len > 8) {
    remote[0].iov_len = len - 8;
    remote[1] = {reinterpret_cast<void*>(addr + len - 8), 8};
    pieces = 2;
  }
  return through_live_thread(
      [&](pid_t tid) { return ::process_vm_writev(tid, &local, 1, remote, pieces, 0) == ssize_t(len); });
}

bool ProcessMemory::readable(uint64_t addr, uint64_t len) {
  if (len == 0) return false;
  const uint64_t first = addr & ~(kPage - 1);
  const uint64_t pages = (addr + len - first + kPage - 1) / kPage;
  std::vector<uint8_t> sink(std::min<uint64_t>(pages, kIovMax));
  std::vector<iovec> local, remote;
  for (uint64_t done = 0; done < pages;) {
    const size_t n = size_t(std::min<uint64_t>(pages - done, kIovMax));
    local.assign(1, iovec{sink.data(), n});
    remote.clear();
    for (size_t i = 0; i < n; i++) {
      const uint64_t page = first + (done + i) * kPage;
      remote.push_back({reinterpret_cast<void*>(std::max(page, addr)), 1});
    }
    if (!through_live_thread(
            [&](pid_t tid) { return ::process_vm_readv(tid, local.data(), 1, remote.data(), n, 0) == ssize_t(n); }))
      return false;
    done += n;
  }
  return true;
}

}  // namespace irdma_sim::platform
