// A process's memory reached from another (ForeignMemory over process_vm_readv/writev):
// how the device host's device reads and writes an application's registered buffers,
// rings and shadow areas. The caller needs ptrace access to the process: the same user
// with Yama's ptrace_scope 0, or the process naming it with PR_SET_PTRACER (the shim
// does), or CAP_SYS_PTRACE. The memory is reached through any live thread of the process:
// its first thread may end (pthread_exit) while the others go on using it.
#pragma once

#include <sys/types.h>

#include "model/platform/foreign_memory.h"

namespace irdma_sim::platform {

class ProcessMemory final : public ForeignMemory {
 public:
  explicit ProcessMemory(pid_t pid) : pid_(pid), tid_(pid) {}
  bool read(uint64_t addr, void* dst, size_t len) override;
  bool write(uint64_t addr, const void* src, size_t len) override;
  // Whether every page of [addr, addr + len) can be read now (a byte of each).
  bool readable(uint64_t addr, uint64_t len);

 private:
  // One access through the thread in hand, then, should that thread be gone, through
  // another live one of the process.
  template <typename Access>
  bool through_live_thread(Access access);

  pid_t pid_;
  pid_t tid_;  // the thread accesses go through
};

}  // namespace irdma_sim::platform
