// libFuzzer target: the vfio-user client's handling of what a server sends (replies, its
// own DMA requests, anything). A fake server on a thread sends the input as a stream of
// chunks, [flags][length, 2 bytes LE][bytes], then hangs up, and reads whatever the client
// sends until it goes. Flags: bit 0 makes the chunk's header the reply to the client's
// n-th message (n: the replies before it; the client numbers its messages from 0), bit 1
// sets its msg_size to the chunk's length. The stream is whole before the client reads it:
// every run of an input is the same. The client, bringing the function up as the PCIe
// backend does, must end every call in a PciTransportError or a result, never crash, hang
// or read past what it was sent.
#include <sys/socket.h>
#include <sys/un.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "driver/backends/pci_transport.h"
#include "driver/backends/unique_fd.h"
#include "driver/backends/vfio_user/client.h"
#include "driver/backends/vfio_user/protocol.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace pcie::vfio_user;

struct Chunk {
  uint8_t flags;
  std::vector<uint8_t> bytes;
};

std::vector<Chunk> chunks_of(const uint8_t* data, size_t size) {
  std::vector<Chunk> chunks;
  while (size >= 3) {
    const size_t len = std::min<size_t>(size - 3, size_t(data[1]) | size_t(data[2]) << 8);
    chunks.push_back({data[0], std::vector<uint8_t>(data + 3, data + 3 + len)});
    data += 3 + len;
    size -= 3 + len;
  }
  return chunks;
}

void serve(int listener, const std::vector<Chunk>& chunks) {
  pcie::UniqueFd conn(::accept(listener, nullptr, nullptr));
  if (!conn.valid()) return;
  uint16_t replies = 0;
  for (const Chunk& c : chunks) {
    std::vector<uint8_t> out = c.bytes;
    if (out.size() >= sizeof(Header)) {
      Header h;
      std::memcpy(&h, out.data(), sizeof h);
      if (c.flags & 1) {
        h.msg_id = replies++;
        h.flags = (h.flags & ~kFlagTypeMask) | kTypeReply;
      }
      if (c.flags & 2) h.msg_size = uint32_t(out.size());
      std::memcpy(out.data(), &h, sizeof h);
    }
    if (::send(conn.get(), out.data(), out.size(), MSG_NOSIGNAL) != ssize_t(out.size())) break;
  }
  ::shutdown(conn.get(), SHUT_WR);
  // Whatever the client sends goes unread but never blocks it (its fds are dropped too).
  uint8_t sink[4096];
  while (::read(conn.get(), sink, sizeof sink) > 0) {
  }
}

// One socket per process, gone when it ends.
std::string listen_path() {
  static std::string path = "/tmp/irdma-sim-fuzz-client-" + std::to_string(::getpid()) + ".sock";
  std::atexit([] { ::unlink(path.c_str()); });
  return path;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static const std::string path = listen_path();
  static const int listener = [] {
    ::unlink(path.c_str());
    const int fd = ::socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
    sockaddr_un addr{};
    addr.sun_family = AF_UNIX;
    std::strncpy(addr.sun_path, path.c_str(), sizeof addr.sun_path - 1);
    if (fd < 0 || ::bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) || ::listen(fd, 4))
      irdma_sim::fuzz::broken("fuzz_vfio_user_client", "cannot listen at " + path);
    return fd;
  }();
  const std::vector<Chunk> chunks = chunks_of(data, size);
  std::thread server(serve, listener, std::cref(chunks));
  std::vector<uint8_t> memory(4096);  // outlives the client, which may be asked to DMA into it
  try {
    VfioUserClientOptions options;
    options.reply_timeout_ms = 2000;  // the server hangs up when its chunks end: never waited out
    options.connect_timeout_ms = 2000;
    VfioUserClient client(path, options);
    const pcie::DeviceInfo info = client.device_info();
    (void)info;
    const pcie::RegionInfo& bar0 = client.region(0);
    uint32_t value = 0;
    if (bar0.size >= 4) client.region_read(0, 0, &value, 4);
    client.region_write(0, 0, &value, 4);
    client.irq_info(pcie::vfio::kMsixIrqIndex);
    client.dma_map(memory.data(), memory.size(), 0x10000, -1, 0);
    client.process_server_requests(0);
    client.dma_unmap(0x10000, memory.size());
    client.reset();
  } catch (const pcie::PciTransportError&) {
    // what a malformed or vanished server must come to
  }
  server.join();
  return 0;
}
