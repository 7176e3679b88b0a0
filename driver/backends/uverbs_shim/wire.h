// What the uverbs shim (in an application) and the device host say to each other: one
// AF_UNIX SOCK_SEQPACKET connection per open of /dev/infiniband/uverbs0, one datagram per
// message. The connection is the open file: when it closes, the host closes the file.
#pragma once

#include <cstddef>
#include <cstdint>

namespace uverbs_wire {

inline constexpr uint32_t kVersion = 2;
inline constexpr size_t kMaxMessage = 64 * 1024;
inline constexpr size_t kMaxFds = 4;  // files one reply may install

enum class op : uint32_t {
  hello = 1,     // first, once: who is asking; answered by a reply
  write = 2,     // a command's bytes follow; answered by a reply
  mmap = 3,      // answered by an mmap_reply
  doorbell = 4,  // stores to mapped device pages: posted, never answered
  files = 5,     // the numbers the last reply's files got in the application: not answered
  closed = 6,    // the application closed one of those files: not answered
};

struct hello {
  op type;
  uint32_t version;
  int32_t pid;
  uint32_t reserved;
};

struct write_request {
  op type;
  uint32_t length;  // the command's bytes, after this header
};

// After it: `copies` records of {copy, then `len` bytes padded to 8}, then `fds` u64 user
// addresses, the i-th receiving the number of the i-th fd passed with the datagram
// (SCM_RIGHTS) as a u32, after every copy.
struct reply {
  int64_t ret;  // the write's result: its length, or a negative errno
  uint32_t copies;
  uint32_t fds;
};

struct copy {
  uint64_t addr;
  uint32_t len;
  uint32_t reserved;
};

struct mmap_request {
  op type;
  uint32_t reserved;
  uint64_t offset;
  uint64_t length;
};

// After it, `count` stores, in the order the application made them.
struct doorbell {
  op type;
  uint32_t count;
};

struct doorbell_store {
  uint64_t map_offset;  // the mmap offset the page was mapped at
  uint32_t offset;      // in the page
  uint32_t value;       // a 32-bit store
};

inline constexpr size_t kMaxStores = 256;  // per doorbell message

struct files {
  op type;
  uint32_t count;
  int32_t fd[kMaxFds];
};

struct closed {
  op type;
  int32_t fd;
};

struct mmap_reply {
  int64_t ret;  // 0, or a negative errno
  uint32_t bar;
  uint32_t reserved;
  uint64_t offset;  // of the device pages in the BAR
};

}  // namespace uverbs_wire
