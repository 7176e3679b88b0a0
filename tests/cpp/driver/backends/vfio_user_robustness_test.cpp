// The bad paths: malformed messages sent raw to the server each get an error reply and the
// server goes on; clients that vanish or cut a message off are dropped with their maps and
// eventfds while the device keeps its state; a server that dies or hangs gives the client a
// clear error within its timeout; the server stops from another thread or a signal.
#include <gtest/gtest.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstring>
#include <thread>

#include "driver/backends/vfio_user/client.h"
#include "driver/backends/vfio_user/socket.h"
#include "tests/cpp/driver/backends/vfio_user_toy_device.h"

namespace {

using namespace vfio_user_test;
using namespace pcie::vfio_user;
using Clock = std::chrono::steady_clock;

template <typename T>
std::vector<uint8_t> bytes_of(const T& value) {
  std::vector<uint8_t> bytes;
  append(bytes, value);
  return bytes;
}

// A client that speaks raw messages, lies included.
class RawClient {
 public:
  explicit RawClient(const std::string& path, bool negotiate = true)
      : socket_(connect_unix(path, 2000), 1 << 21, kMaxFdsPerMessage) {
    if (negotiate) {
      Message reply = call(Command::kVersion, encode_version({0, 2, {}}));
      EXPECT_EQ(error_of(reply), 0);
    }
  }

  Message call(Command command, const std::vector<uint8_t>& payload, const std::vector<int>& fds = {},
               uint32_t flags = kTypeCommand) {
    send(command, payload, fds, flags);
    return receive();
  }
  uint16_t send(Command command, const std::vector<uint8_t>& payload, const std::vector<int>& fds = {},
                uint32_t flags = kTypeCommand) {
    uint16_t id = next_id_++;
    socket_.send(Header{id, static_cast<uint16_t>(command), 0, flags, 0}, payload.data(), payload.size(), fds, 2000);
    return id;
  }
  void send_bytes(const void* data, size_t size) {
    ASSERT_EQ(::send(socket_.fd(), data, size, MSG_NOSIGNAL), static_cast<ssize_t>(size));
  }
  void send_header(uint16_t id, uint16_t command, uint32_t msg_size) {
    Header h{id, command, msg_size, kTypeCommand, 0};
    send_bytes(&h, sizeof(h));
  }
  Message receive(int timeout_ms = 2000) { return socket_.receive(timeout_ms); }

  static int error_of(const Message& m) {
    EXPECT_TRUE(m.is_reply());
    return (m.header.flags & kFlagError) ? static_cast<int>(m.header.error_no) : 0;
  }
  int error_of_call(Command command, const std::vector<uint8_t>& payload, const std::vector<int>& fds = {}) {
    return error_of(call(command, payload, fds));
  }

  // The server still answers, and the next message it sends is that answer.
  bool still_served() {
    uint16_t id = send(Command::kDeviceGetInfo, bytes_of(DeviceInfoPayload{16, 0, 0, 0}));
    Message reply = receive();
    return reply.header.msg_id == id && error_of(reply) == 0 && reply.payload.size() == 16;
  }

  int fd() const { return socket_.fd(); }

 private:
  MessageSocket socket_;
  uint16_t next_id_ = 100;
};

std::vector<uint8_t> region_read(uint32_t region, uint64_t offset, uint32_t count) {
  return bytes_of(RegionAccessPayload{offset, region, count});
}

std::vector<uint8_t> dma_map(uint64_t iova, uint64_t size, uint32_t flags = 3, uint64_t offset = 0) {
  return bytes_of(DmaMapPayload{32, flags, offset, iova, size});
}

std::vector<uint8_t> dma_unmap(uint64_t iova, uint64_t size) { return bytes_of(DmaUnmapPayload{24, 0, iova, size}); }

bool eventually(const std::function<bool()>& condition, int timeout_ms = 3000) {
  auto deadline = Clock::now() + std::chrono::milliseconds(timeout_ms);
  while (!condition()) {
    if (Clock::now() > deadline) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(2));
  }
  return true;
}

TEST(VfioUserServerRobustness, MessageSizeBelowTheHeaderGetsEinval) {
  ServedToy toy;
  RawClient raw(toy.path());
  raw.send_header(7, static_cast<uint16_t>(Command::kDeviceGetInfo), 8);
  Message reply = raw.receive();
  EXPECT_EQ(reply.header.msg_id, 7);
  EXPECT_EQ(RawClient::error_of(reply), EINVAL);
  EXPECT_TRUE(raw.still_served());
}

TEST(VfioUserServerRobustness, PayloadsThatDisagreeWithTheirSizesGetEinval) {
  ServedToy toy;
  RawClient raw(toy.path());
  EXPECT_EQ(raw.error_of_call(Command::kDeviceGetInfo, std::vector<uint8_t>(8)), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceGetRegionInfo, std::vector<uint8_t>(31)), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kRegionRead, std::vector<uint8_t>(20)), EINVAL);
  std::vector<uint8_t> write = bytes_of(RegionAccessPayload{reg::kScratch, 0, 100});
  write.resize(write.size() + 4);  // 4 data bytes for a count of 100
  EXPECT_EQ(raw.error_of_call(Command::kRegionWrite, write), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kDmaUnmap, std::vector<uint8_t>(23)), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceReset, std::vector<uint8_t>(1)), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceGetInfo, bytes_of(DeviceInfoPayload{8, 0, 0, 0})), EINVAL) << "argsz";
  EXPECT_TRUE(raw.still_served());
}

TEST(VfioUserServerRobustness, OversizedMessageGetsE2bigThenTheServerHangsUpAndServesTheNextClient) {
  ServedToy toy;
  {
    RawClient raw(toy.path());
    raw.send_header(9, static_cast<uint16_t>(Command::kRegionWrite), 0x7FFFFFFF);
    Message reply = raw.receive();
    EXPECT_EQ(reply.header.msg_id, 9);
    EXPECT_EQ(RawClient::error_of(reply), E2BIG);
    try {
      raw.receive();
      FAIL() << "the server kept a connection it cannot find the next message on";
    } catch (const VfioUserError& e) {
      EXPECT_EQ(e.error_no(), ECONNRESET);
    }
  }
  RawClient next(toy.path());
  EXPECT_TRUE(next.still_served());
}

TEST(VfioUserServerRobustness, BadRegionIndexesAndOffsetsGetEinval) {
  ServedToy toy;
  RawClient raw(toy.path());
  EXPECT_EQ(raw.error_of_call(Command::kRegionRead, region_read(42, 0, 4)), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kRegionRead, region_read(1, 0, 4)), EINVAL) << "absent BAR";
  EXPECT_EQ(raw.error_of_call(Command::kDeviceGetRegionInfo, bytes_of(RegionInfoPayload{32, 0, 100, 0, 0, 0})), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kRegionRead, region_read(0, kPage - 2, 4)), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kRegionRead, region_read(0, UINT64_MAX - 1, 4)), EINVAL) << "wraps";
  EXPECT_EQ(raw.error_of_call(Command::kRegionRead, region_read(0, 0, 0)), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kRegionRead, region_read(7, 250, 8)), EINVAL) << "past config space";
  EXPECT_EQ(raw.error_of_call(Command::kDeviceGetIrqInfo, bytes_of(IrqInfoPayload{16, 0, 5, 0})), EINVAL);
  EXPECT_TRUE(raw.still_served());
}

TEST(VfioUserServerRobustness, RegionInfoNeedsRoomForItsCapabilitiesBeforeSendingThemAndTheFd) {
  ServedToy toy;
  RawClient raw(toy.path());
  Message small = raw.call(Command::kDeviceGetRegionInfo, bytes_of(RegionInfoPayload{32, 0, 2, 0, 0, 0}));
  auto info = load<RegionInfoPayload>(small.payload, 0, "reply");
  EXPECT_EQ(small.payload.size(), 32u);
  EXPECT_EQ(info.argsz, 32u + 8 + 8 + 16) << "room for one sparse area";
  EXPECT_FALSE(info.flags & pcie::vfio::kRegionFlagCaps);
  EXPECT_TRUE(small.fds.empty());
  Message full = raw.call(Command::kDeviceGetRegionInfo, bytes_of(RegionInfoPayload{info.argsz, 0, 2, 0, 0, 0}));
  EXPECT_EQ(full.payload.size(), info.argsz);
  EXPECT_EQ(full.fds.size(), 1u);
  EXPECT_TRUE(load<RegionInfoPayload>(full.payload, 0, "reply").flags & pcie::vfio::kRegionFlagCaps);
}

TEST(VfioUserServerRobustness, DmaMapTableRefusesOverlapsAndUnknownUnmaps) {
  ServedToy toy;
  RawClient raw(toy.path());
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x10000, 0x2000)), 0);
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x10000, 0x2000)), EEXIST) << "duplicate";
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0xF000, 0x2000)), EEXIST) << "overlaps the start";
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x11000, 0x100)), EEXIST) << "inside";
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x12000, 0)), EINVAL) << "empty";
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(UINT64_MAX - 10, 0x100)), EINVAL) << "wraps";
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x20000, 0x1000, 0x8)), EINVAL) << "unknown flag";
  EXPECT_EQ(raw.error_of_call(Command::kDmaUnmap, dma_unmap(0x50000, 0x1000)), ENOENT);
  EXPECT_EQ(raw.error_of_call(Command::kDmaUnmap, dma_unmap(0x10000, 0x1000)), EINVAL) << "half a map";
  EXPECT_EQ(toy.server.dma_map_count(), 1u);

  int memfd = ::memfd_create("dma", MFD_CLOEXEC);
  ASSERT_EQ(::ftruncate(memfd, 0x4000), 0);
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x40000, 0x1000, 3, 100), {memfd}), EINVAL)
      << "an fd offset mmap cannot take";
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x40000, 0x1000), {memfd, memfd}), EINVAL) << "two fds";
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x40000, 0x2000, 3, 0x3000), {memfd}), EINVAL)
      << "past the fd's end: a DMA there would be SIGBUS";
  EXPECT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x40000, 0x1000, 3, 0x1000), {memfd}), 0);
  ::close(memfd);
  EXPECT_NE(toy.server.dma_pointer(0x40000, 0x1000), nullptr);

  Message unmapped = raw.call(Command::kDmaUnmap, dma_unmap(0x10000, 0x2000));
  EXPECT_EQ(RawClient::error_of(unmapped), 0);
  EXPECT_EQ(load<DmaUnmapPayload>(unmapped.payload, 0, "reply").size, 0x2000u) << "the reply is the entry";
  EXPECT_EQ(toy.server.dma_map_count(), 1u);
  EXPECT_TRUE(raw.still_served());
}

TEST(VfioUserServerRobustness, UnknownCommandsGetEnosys) {
  ServedToy toy;
  RawClient raw(toy.path());
  EXPECT_EQ(raw.error_of_call(static_cast<Command>(99), {}), ENOSYS);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceGetRegionIoFds, std::vector<uint8_t>(16)), ENOSYS);
  EXPECT_EQ(raw.error_of_call(Command::kRegionWriteMulti, std::vector<uint8_t>(8)), ENOSYS);
  EXPECT_EQ(raw.error_of_call(Command::kDmaRead, std::vector<uint8_t>(16)), ENOSYS) << "goes the other way";
  EXPECT_TRUE(raw.still_served());
}

TEST(VfioUserServerRobustness, VersionComesFirstOnceAndMustBeWellFormed) {
  ServedToy toy;
  RawClient raw(toy.path(), false);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceGetInfo, bytes_of(DeviceInfoPayload{16, 0, 0, 0})), EINVAL);
  std::vector<uint8_t> bad_json = bytes_of(VersionPayload{0, 2});
  for (char c : std::string("{\"capabilities\":{\"max_msg_fds\":-4}}")) bad_json.push_back(static_cast<uint8_t>(c));
  bad_json.push_back(0);
  EXPECT_EQ(raw.error_of_call(Command::kVersion, bad_json), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kVersion, encode_version({1, 0, {}})), ENOTSUP);

  Message reply = raw.call(Command::kVersion, encode_version({0, 9, {}}));
  ASSERT_EQ(RawClient::error_of(reply), 0);
  EXPECT_EQ(decode_version(reply.payload).minor, 2) << "the lower of the two minors";
  EXPECT_EQ(raw.error_of_call(Command::kVersion, encode_version({0, 2, {}})), EINVAL) << "twice";
  EXPECT_TRUE(raw.still_served());
}

TEST(VfioUserServerRobustness, FdsOnAMessageThatTakesNoneAreClosed) {
  ServedToy toy;
  RawClient raw(toy.path());
  int pipe_fds[2];
  ASSERT_EQ(::pipe(pipe_fds), 0);
  EXPECT_EQ(raw.error_of_call(Command::kRegionRead, region_read(0, reg::kId, 4), {pipe_fds[1]}), 0);
  ::close(pipe_fds[1]);
  // Once the server's copy of the write end is closed too, the read end sees end-of-file.
  pollfd p{pipe_fds[0], POLLIN, 0};
  ASSERT_EQ(::poll(&p, 1, 2000), 1);
  char c;
  EXPECT_EQ(::read(pipe_fds[0], &c, 1), 0);
  ::close(pipe_fds[0]);
}

TEST(VfioUserServerRobustness, MoreFdsThanNegotiatedGetEinval) {
  ServedToy toy;  // max_msg_fds 8
  RawClient raw(toy.path());
  std::vector<int> fds;
  for (int i = 0; i < 9; ++i) fds.push_back(::eventfd(0, EFD_CLOEXEC));
  IrqSetPayload set{20, kIrqSetDataEventfd | kIrqSetActionTrigger, pcie::vfio::kMsixIrqIndex, 0, 9};
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, bytes_of(set), fds), EINVAL);
  for (int fd : fds) ::close(fd);
  EXPECT_TRUE(raw.still_served());
}

TEST(VfioUserServerRobustness, MalformedSetIrqsIsRefused) {
  ServedToy toy;
  RawClient raw(toy.path());
  int efd = ::eventfd(0, EFD_CLOEXEC);
  auto set = [](uint32_t flags, uint32_t index, uint32_t start, uint32_t count) {
    return bytes_of(IrqSetPayload{20, flags, index, start, count});
  };
  constexpr uint32_t kMsix = pcie::vfio::kMsixIrqIndex;
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, set(kIrqSetDataEventfd | kIrqSetDataNone | kIrqSetActionTrigger, kMsix, 0, 1), {efd}), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, set(kIrqSetDataEventfd | kIrqSetActionTrigger, kMsix, 0, 2), {efd}), EINVAL) << "1 fd for 2 vectors";
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, set(kIrqSetDataEventfd | kIrqSetActionTrigger, 7, 0, 1), {efd}), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, set(kIrqSetDataEventfd | kIrqSetActionTrigger, kMsix, kMsixVectors, 1), {efd}), EINVAL);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, set(kIrqSetDataNone | kIrqSetActionMask, kMsix, 0, 1)), ENOTSUP);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, set(kIrqSetDataBool | kIrqSetActionTrigger, kMsix, 0, 4)), EINVAL) << "bools missing";
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, set(kIrqSetDataNone | kIrqSetActionTrigger, kMsix, 3, 0)), EINVAL);

  // The client may fire a vector itself: DATA_BOOL picks which.
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, set(kIrqSetDataEventfd | kIrqSetActionTrigger, kMsix, 2, 1), {efd}), 0);
  std::vector<uint8_t> fire = set(kIrqSetDataBool | kIrqSetActionTrigger, kMsix, 1, 2);
  fire.push_back(0);
  fire.push_back(1);
  EXPECT_EQ(raw.error_of_call(Command::kDeviceSetIrqs, fire), 0);
  uint64_t count = 0;
  EXPECT_EQ(::read(efd, &count, sizeof(count)), 8);
  EXPECT_EQ(count, 1u);
  ::close(efd);
  EXPECT_TRUE(raw.still_served());
}

TEST(VfioUserServerRobustness, RepliesAndNoReplyErrorsGetNoAnswer) {
  ServedToy toy;
  RawClient raw(toy.path());
  raw.send(Command::kDeviceGetInfo, bytes_of(DeviceInfoPayload{16, 0, 0, 0}), {}, kTypeReply);
  raw.send(Command::kRegionRead, region_read(42, 0, 4), {}, kTypeCommand | kFlagNoReply);
  EXPECT_TRUE(raw.still_served()) << "the next message is the answer to still_served's request";
}

TEST(VfioUserServerRobustness, ClientCutOffMidMessageIsDroppedAndTheNextServed) {
  VfioUserServerOptions options;
  options.message_timeout_ms = 200;
  ServedToy toy(options);
  {
    RawClient raw(toy.path());
    ASSERT_EQ(raw.error_of_call(Command::kDmaMap, dma_map(0x10000, 0x1000)), 0);
    raw.send_header(1, static_cast<uint16_t>(Command::kRegionWrite), 48);
    raw.send_bytes("0123456789", 10);
  }  // closed 22 bytes short
  EXPECT_TRUE(eventually([&] { return toy.server.dma_map_count() == 0; }));
  {
    RawClient stalled(toy.path());
    stalled.send_bytes("012345", 6);  // half a header, then silence
    auto start = Clock::now();
    EXPECT_THROW(stalled.receive(3000), VfioUserError) << "the server hangs up on a stalled message";
    EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(2000));
  }
  RawClient next(toy.path());
  EXPECT_TRUE(next.still_served());
}

TEST(VfioUserServerRobustness, VanishedClientLeavesNoMapsOrEventfdsButTheDeviceKeepsItsState) {
  ServedToy toy;
  int memfd = ::memfd_create("dma", MFD_CLOEXEC);
  ASSERT_EQ(::ftruncate(memfd, kPage), 0);
  int efd = ::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK);
  std::vector<uint8_t> memory(kPage);
  {
    VfioUserClient client(toy.path());
    client.dma_map(nullptr, kPage, 0x100000, memfd, 0);
    client.dma_map(memory.data(), memory.size(), 0x200000, -1, 0);
    client.set_irq_eventfds(pcie::vfio::kMsixIrqIndex, 0, {efd, efd});
    uint32_t value = 77;
    client.region_write(0, reg::kScratch, &value, 4);
    EXPECT_TRUE(toy.server.trigger_irq(pcie::vfio::kMsixIrqIndex, 1));
  }
  EXPECT_TRUE(eventually([&] { return !toy.server.client_connected(); }));
  EXPECT_EQ(toy.server.dma_map_count(), 0u);
  EXPECT_EQ(toy.device.unmaps_seen, 2);
  EXPECT_FALSE(toy.server.trigger_irq(pcie::vfio::kMsixIrqIndex, 1)) << "its eventfds are gone";
  ::close(memfd);
  ::close(efd);

  VfioUserClient next(toy.path());
  uint32_t value = 0;
  next.region_read(0, reg::kScratch, &value, 4);
  EXPECT_EQ(value, 77u) << "device state outlives the client";
}

TEST(VfioUserServerRobustness, WithoutServeNextClientRunEndsWhenTheClientLeaves) {
  ToyDevice device;
  VfioUserServerOptions options;
  options.serve_next_client = false;
  VfioUserServer server(device, socket_path("once"), options);
  device.attach(&server);
  std::atomic<bool> returned{false};
  std::thread serving([&] {
    server.run();
    returned = true;
  });
  { VfioUserClient client(server.socket_path()); }
  EXPECT_TRUE(eventually([&] { return returned.load(); }));
  serving.join();
  EXPECT_FALSE(server.serve_one_message(0));
}

VfioUserServer* g_signalled_server = nullptr;
extern "C" void stop_on_signal(int) { g_signalled_server->stop(); }

TEST(VfioUserServerRobustness, StopsFromASignalHandler) {
  ToyDevice device;
  VfioUserServer server(device, socket_path("signal"));
  device.attach(&server);
  g_signalled_server = &server;
  struct sigaction action {};
  action.sa_handler = stop_on_signal;
  struct sigaction old {};
  ASSERT_EQ(::sigaction(SIGUSR1, &action, &old), 0);
  std::atomic<bool> returned{false};
  std::thread serving([&] {
    server.run();  // blocked in poll with no timeout
    returned = true;
  });
  std::this_thread::sleep_for(std::chrono::milliseconds(50));
  ::pthread_kill(serving.native_handle(), SIGUSR1);
  EXPECT_TRUE(eventually([&] { return returned.load(); }, 2000));
  serving.join();
  ::sigaction(SIGUSR1, &old, nullptr);
}

// A server in a child process, to be killed or to die.
pid_t fork_server(const std::string& path, bool die_on_hook) {
  pid_t pid = ::fork();
  if (pid != 0) return pid;
  try {
    ToyDevice device;
    VfioUserServer server(device, path);
    device.attach(&server);
    if (die_on_hook) device.on_hook = [] { ::_exit(3); };
    server.run();
  } catch (...) {
    ::_exit(2);
  }
  ::_exit(0);
}

TEST(VfioUserServerDeath, KilledServerIsAClearErrorNotAHang) {
  std::string path = socket_path("killed");
  pid_t child = fork_server(path, false);
  ASSERT_GT(child, 0);
  VfioUserClientOptions options;
  options.reply_timeout_ms = 1000;
  VfioUserClient client(path, options);
  uint32_t id = 0;
  client.region_read(0, reg::kId, &id, 4);
  EXPECT_EQ(id, kToyId);
  ::kill(child, SIGKILL);
  ::waitpid(child, nullptr, 0);
  auto start = Clock::now();
  try {
    client.region_read(0, reg::kId, &id, 4);
    FAIL() << "a dead server answered";
  } catch (const pcie::PciTransportError& e) {
    EXPECT_NE(std::string(e.what()).find("peer closed the connection"), std::string::npos) << e.what();
  }
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1000));
  EXPECT_THROW(client.device_info(), pcie::PciTransportError) << "and stays dead";
}

TEST(VfioUserServerDeath, ServerDyingMidRequestIsAClearErrorWithinTheTimeout) {
  std::string path = socket_path("dies");
  pid_t child = fork_server(path, true);
  ASSERT_GT(child, 0);
  VfioUserClientOptions options;
  options.reply_timeout_ms = 1000;
  VfioUserClient client(path, waiting_writes(options));
  auto start = Clock::now();
  uint32_t one = 1;
  EXPECT_THROW(client.region_write(0, reg::kHook, &one, 4), pcie::PciTransportError);
  EXPECT_LT(Clock::now() - start, std::chrono::milliseconds(1000));
  int status = 0;
  ::waitpid(child, &status, 0);
  EXPECT_EQ(WEXITSTATUS(status), 3);
}

TEST(VfioUserServerDeath, HungServerTimesOutAndItsLateReplyIsNotTakenForAnother) {
  ServedToy toy;
  toy.device.on_hook = [] { std::this_thread::sleep_for(std::chrono::milliseconds(600)); };
  VfioUserClientOptions options;
  options.reply_timeout_ms = 200;
  VfioUserClient client(toy.path(), waiting_writes(options));
  auto start = Clock::now();
  uint32_t one = 1;
  try {
    client.region_write(0, reg::kHook, &one, 4);
    FAIL() << "no timeout";
  } catch (const VfioUserError& e) {
    EXPECT_EQ(e.error_no(), ETIMEDOUT);
  }
  auto took = Clock::now() - start;
  EXPECT_GE(took, std::chrono::milliseconds(200));
  EXPECT_LT(took, std::chrono::milliseconds(550));
  std::this_thread::sleep_for(std::chrono::milliseconds(500));
  uint32_t id = 0;
  client.region_read(0, reg::kId, &id, 4);  // the late REGION_WRITE reply arrives first and is skipped
  EXPECT_EQ(id, kToyId);
}

}  // namespace
