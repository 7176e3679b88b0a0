#include "driver/backends/vfio_user/client.h"

#include <sys/mman.h>

#include <algorithm>
#include <cerrno>
#include <chrono>
#include <cstring>

#include "driver/backends/coherent_dma.h"

namespace pcie::vfio_user {
namespace {

using Clock = std::chrono::steady_clock;

// fds this client takes in one message (a region's fd is the only one a server sends).
constexpr uint32_t kClientMaxMsgFds = 8;
// A region info reply with a capability chain longer than this is not believed.
constexpr uint32_t kMaxRegionInfoSize = 64 * 1024;

template <typename T>
std::vector<uint8_t> bytes_of(const T& value) {
  std::vector<uint8_t> bytes;
  append(bytes, value);
  return bytes;
}

[[noreturn]] void bad_reply(Command command, const std::string& why) {
  throw VfioUserError(EPROTO, "vfio-user: server's " + command_name(static_cast<uint16_t>(command)) +
                                  " reply is malformed: " + why);
}

// Rounded up, so that a timeout never fires early.
int ms_left(Clock::time_point deadline) {
  auto left = std::chrono::ceil<std::chrono::milliseconds>(deadline - Clock::now()).count();
  return static_cast<int>(std::max<int64_t>(left, 0));
}

}  // namespace

VfioUserClient::VfioUserClient(const std::string& socket_path, VfioUserClientOptions options)
    : options_(options), socket_path_(socket_path) {
  if (options_.max_data_xfer_size == 0) throw PciTransportError("vfio-user: max_data_xfer_size must not be 0");
  // The largest message a server may send us: a DMA_WRITE or REGION_READ reply of the
  // largest count we take, or a region info reply.
  size_t max_message = kHeaderSize + sizeof(DmaAccessPayload) + std::max(options_.max_data_xfer_size, kMaxRegionInfoSize);
  socket_ = std::make_unique<MessageSocket>(connect_unix(socket_path, options_.connect_timeout_ms), max_message,
                                            kClientMaxMsgFds);
  std::lock_guard lock(mutex_);
  Version ours{kMajorVersion, kMinorVersion, {}};
  ours.capabilities.max_msg_fds = kClientMaxMsgFds;
  ours.capabilities.max_data_xfer_size = options_.max_data_xfer_size;
  Message reply = exchange_locked(Command::kVersion, encode_version(ours));
  server_version_ = decode_version(reply.payload);
  if (server_version_.major != kMajorVersion || server_version_.minor > kMinorVersion)
    throw VfioUserError(ENOTSUP, "vfio-user: server at '" + socket_path + "' answered version " +
                                     std::to_string(server_version_.major) + "." +
                                     std::to_string(server_version_.minor) + " to our " +
                                     std::to_string(kMajorVersion) + "." + std::to_string(kMinorVersion));
}

VfioUserClient::~VfioUserClient() {
  socket_.reset();
  for (auto [address, size] : mappings_) ::munmap(address, size);
}

void VfioUserClient::check_usable_locked() const {
  if (!dead_reason_.empty()) throw VfioUserError(ECONNRESET, dead_reason_);
}

void VfioUserClient::fail_locked(const VfioUserError& error) {
  dead_reason_ = "vfio-user: connection to the server at '" + socket_path_ + "' is lost: " + error.what();
  throw VfioUserError(error.error_no(), dead_reason_);
}

Message VfioUserClient::exchange_locked(Command command, const std::vector<uint8_t>& payload,
                                        const std::vector<int>& fds) {
  check_usable_locked();
  uint16_t id = next_msg_id_++;
  Header header{id, static_cast<uint16_t>(command), 0, kTypeCommand, 0};
  Message reply;
  try {
    socket_->send(header, payload.data(), payload.size(), fds, options_.reply_timeout_ms);
    auto deadline = Clock::now() + std::chrono::milliseconds(options_.reply_timeout_ms);
    for (;;) {
      reply = socket_->receive(ms_left(deadline));
      if (!reply.is_reply()) {
        answer_server_request_locked(reply);
        deadline = Clock::now() + std::chrono::milliseconds(options_.reply_timeout_ms);  // the server is alive
        continue;
      }
      // Another id is the late reply to a request that timed out earlier: not ours.
      if (reply.header.msg_id == id && reply.header.command == header.command) break;
    }
  } catch (const MessageError& error) {
    fail_locked(error);  // a server that breaks the framing cannot be trusted with the next message
  } catch (const VfioUserError& error) {
    if (error.error_no() != ETIMEDOUT || socket_->broken()) fail_locked(error);
    throw VfioUserError(ETIMEDOUT, "vfio-user: the server at '" + socket_path_ + "' did not answer " +
                                       command_name(header.command) + " within " +
                                       std::to_string(options_.reply_timeout_ms) + " ms");
  }
  if (reply.header.flags & kFlagError)
    throw VfioUserError(static_cast<int>(reply.header.error_no),
                        "vfio-user: the server refused " + command_name(header.command) + ": " +
                            std::strerror(static_cast<int>(reply.header.error_no)));
  return reply;
}

void VfioUserClient::post_locked(Command command, const std::vector<uint8_t>& payload) {
  check_usable_locked();
  Header header{next_msg_id_++, static_cast<uint16_t>(command), 0, kTypeCommand | kFlagNoReply, 0};
  try {
    socket_->send(header, payload.data(), payload.size(), {}, options_.reply_timeout_ms);
  } catch (const VfioUserError& error) {
    fail_locked(error);
  }
}

const VfioUserClient::DmaWindow* VfioUserClient::find_dma_window(uint64_t address, uint64_t count,
                                                                 uint64_t& window_iova) const {
  auto it = dma_windows_.upper_bound(address);
  if (it == dma_windows_.begin()) return nullptr;
  --it;
  if (address - it->first > it->second.size || count > it->second.size - (address - it->first)) return nullptr;
  window_iova = it->first;
  return &it->second;
}

void VfioUserClient::answer_server_request_locked(Message& request) {
  const Header& in = request.header;
  int error_no = 0;
  std::vector<uint8_t> payload;
  auto command = static_cast<Command>(in.command);
  if (command == Command::kDmaRead || command == Command::kDmaWrite) {
    bool is_read = command == Command::kDmaRead;
    DmaAccessPayload access{};
    uint64_t window_iova = 0;
    const DmaWindow* window = nullptr;
    if (request.payload.size() < sizeof(access)) {
      error_no = EINVAL;
    } else {
      access = load<DmaAccessPayload>(request.payload, 0, "DMA access");
      window = find_dma_window(access.address, access.count, window_iova);
      uint64_t data_size = request.payload.size() - sizeof(access);
      if (access.count > options_.max_data_xfer_size || data_size != (is_read ? 0 : access.count))
        error_no = EINVAL;
      else if (!window || !window->cpu_address)
        error_no = EFAULT;  // not mapped, or only through an fd we gave the server
      else if (!(window->flags & (is_read ? vfio::kDmaFlagRead : vfio::kDmaFlagWrite)))
        error_no = EACCES;
    }
    if (!error_no) {
      uint8_t* cpu = window->cpu_address + (access.address - window_iova);
      append(payload, access);
      if (is_read) {
        payload.resize(payload.size() + access.count);
        coherent_dma::device_read(cpu, payload.data() + payload.size() - access.count, access.count);
      } else {
        coherent_dma::device_write(cpu, request.payload.data() + sizeof(access), access.count);
      }
    }
  } else {
    error_no = ENOSYS;  // no other command goes from server to client
  }
  if (in.flags & kFlagNoReply) return;
  Header out{in.msg_id, in.command, 0, kTypeReply | (error_no ? kFlagError : 0), static_cast<uint32_t>(error_no)};
  if (error_no) payload.clear();
  socket_->send(out, payload.data(), payload.size(), {}, options_.reply_timeout_ms);
}

int VfioUserClient::process_server_requests(int timeout_ms) {
  int answered = 0;
  // The wait holds no lock, so that other threads' exchanges go on meanwhile.
  while (socket_->wait_readable(answered ? 0 : timeout_ms)) {
    std::lock_guard lock(mutex_);
    check_usable_locked();
    if (!socket_->wait_readable(0)) continue;  // another thread's exchange took it
    try {
      Message message = socket_->receive(options_.reply_timeout_ms);
      if (message.is_reply()) continue;  // late reply to a request that timed out
      answer_server_request_locked(message);
      ++answered;
    } catch (const VfioUserError& error) {
      fail_locked(error);
    }
  }
  return answered;
}

DeviceInfo VfioUserClient::device_info() {
  std::lock_guard lock(mutex_);
  Message reply = exchange_locked(Command::kDeviceGetInfo, bytes_of(DeviceInfoPayload{sizeof(DeviceInfoPayload)}));
  auto info = load<DeviceInfoPayload>(reply.payload, 0, "DEVICE_GET_INFO reply");
  return {info.flags, info.num_regions, info.num_irqs};
}

const RegionInfo& VfioUserClient::region(uint32_t index) {
  std::lock_guard lock(mutex_);
  auto it = regions_.find(index);
  if (it == regions_.end())
    it = regions_.emplace(index, std::make_unique<RegionInfo>(query_region_locked(index))).first;
  return *it->second;
}

RegionInfo VfioUserClient::query_region_locked(uint32_t index) {
  // First ask with room for the fixed part only; the reply says how much the capability
  // chain needs, and only a request that big gets the chain and the fd.
  RegionInfoPayload request{sizeof(RegionInfoPayload), 0, index, 0, 0, 0};
  Message reply = exchange_locked(Command::kDeviceGetRegionInfo, bytes_of(request));
  auto info = load<RegionInfoPayload>(reply.payload, 0, "DEVICE_GET_REGION_INFO reply");
  if (info.argsz > request.argsz) {
    if (info.argsz > kMaxRegionInfoSize)
      bad_reply(Command::kDeviceGetRegionInfo, "argsz " + std::to_string(info.argsz) + " is implausibly large");
    request.argsz = info.argsz;
    reply = exchange_locked(Command::kDeviceGetRegionInfo, bytes_of(request));
    info = load<RegionInfoPayload>(reply.payload, 0, "DEVICE_GET_REGION_INFO reply");
  }
  if (info.index != index)
    bad_reply(Command::kDeviceGetRegionInfo, "asked for region " + std::to_string(index) + ", got " +
                                                 std::to_string(info.index));
  RegionInfo out;
  out.index = index;
  out.flags = info.flags;
  out.size = info.size;
  if (!(info.flags & vfio::kRegionFlagMmap) || info.size == 0) return out;

  const std::vector<uint8_t>& bytes = reply.payload;
  bool sparse = false;
  if (info.flags & vfio::kRegionFlagCaps) {
    // Each capability must lie inside the reply and point only forwards, so the walk ends.
    uint32_t at = info.cap_offset;
    while (at != 0) {
      if (at < sizeof(RegionInfoPayload) || !fits(at, sizeof(CapHeader), bytes.size()))
        bad_reply(Command::kDeviceGetRegionInfo, "capability at offset " + std::to_string(at) + " is outside the reply");
      auto cap = load<CapHeader>(bytes, at, "region capability");
      if (cap.id == kCapSparseMmap) {
        auto body = load<SparseMmapCapBody>(bytes, at + sizeof(CapHeader), "sparse mmap capability");
        size_t areas_at = at + sizeof(CapHeader) + sizeof(SparseMmapCapBody);
        if (body.nr_areas > (bytes.size() - areas_at) / sizeof(SparseMmapArea))
          bad_reply(Command::kDeviceGetRegionInfo, std::to_string(body.nr_areas) + " sparse areas do not fit the reply");
        for (uint32_t i = 0; i < body.nr_areas; ++i) {
          auto area = load<SparseMmapArea>(bytes, areas_at + i * sizeof(SparseMmapArea), "sparse mmap area");
          if (area.size == 0 || !fits(area.offset, area.size, info.size))
            bad_reply(Command::kDeviceGetRegionInfo, "sparse area " + std::to_string(i) + " of region " +
                                                         std::to_string(index) + " lies outside the region");
          out.mmap_areas.push_back({area.offset, area.size, nullptr});
        }
        sparse = true;
      }
      if (cap.next != 0 && cap.next <= at)
        bad_reply(Command::kDeviceGetRegionInfo, "capability chain points backwards");
      at = cap.next;
    }
  }
  if (!sparse) out.mmap_areas.push_back({0, info.size, nullptr});  // mappable as a whole
  if (reply.fds.size() != 1)
    bad_reply(Command::kDeviceGetRegionInfo, "region " + std::to_string(index) + " is mappable but came with " +
                                                 std::to_string(reply.fds.size()) + " fds instead of 1");
  map_areas(out, reply.fds[0].get(), info.offset);
  return out;
}

void VfioUserClient::map_areas(RegionInfo& info, int fd, uint64_t fd_offset) {
  int prot = ((info.flags & vfio::kRegionFlagRead) ? PROT_READ : 0) | ((info.flags & vfio::kRegionFlagWrite) ? PROT_WRITE : 0);
  for (MmapArea& area : info.mmap_areas) {
    if (!fits(fd_offset, area.offset, INT64_MAX))
      bad_reply(Command::kDeviceGetRegionInfo, "mmap offset overflows");
    void* p = ::mmap(nullptr, area.size, prot, MAP_SHARED, fd, static_cast<off_t>(fd_offset + area.offset));
    if (p == MAP_FAILED)
      throw VfioUserError(errno, "vfio-user: mmap of region " + std::to_string(info.index) + " at offset " +
                                     std::to_string(area.offset) + " (" + std::to_string(area.size) +
                                     " bytes): " + std::strerror(errno));
    mappings_.emplace_back(p, area.size);
    area.ptr = p;
  }
}

void VfioUserClient::region_read(uint32_t index, uint64_t offset, void* data, size_t size) {
  std::lock_guard lock(mutex_);
  size_t chunk_limit = std::min(server_version_.capabilities.max_data_xfer_size, options_.max_data_xfer_size);
  auto* out = static_cast<uint8_t*>(data);
  for (size_t done = 0; done < size;) {
    auto count = static_cast<uint32_t>(std::min(size - done, chunk_limit));
    RegionAccessPayload access{offset + done, index, count};
    Message reply = exchange_locked(Command::kRegionRead, bytes_of(access));
    auto echo = load<RegionAccessPayload>(reply.payload, 0, "REGION_READ reply");
    if (echo.count != count || reply.payload.size() != sizeof(echo) + count)
      bad_reply(Command::kRegionRead, "asked for " + std::to_string(count) + " bytes, got " +
                                          std::to_string(reply.payload.size() - sizeof(echo)));
    std::memcpy(out + done, reply.payload.data() + sizeof(echo), count);
    done += count;
  }
}

void VfioUserClient::region_write(uint32_t index, uint64_t offset, const void* data, size_t size) {
  std::lock_guard lock(mutex_);
  size_t chunk_limit = std::min(server_version_.capabilities.max_data_xfer_size, options_.max_data_xfer_size);
  const auto* in = static_cast<const uint8_t*>(data);
  for (size_t done = 0; done < size;) {
    auto count = static_cast<uint32_t>(std::min(size - done, chunk_limit));
    std::vector<uint8_t> payload = bytes_of(RegionAccessPayload{offset + done, index, count});
    append_bytes(payload, in + done, count);
    // Memory writes to a BAR are posted; PCIe's configuration writes are not, and a write
    // to a region of the server's own (the backdoor) is a request that answers.
    if (options_.posted_writes && index < vfio::kRomRegionIndex) {
      post_locked(Command::kRegionWrite, payload);
    } else {
      Message reply = exchange_locked(Command::kRegionWrite, payload);
      if (load<RegionAccessPayload>(reply.payload, 0, "REGION_WRITE reply").count != count)
        bad_reply(Command::kRegionWrite, "the server wrote a different count");
    }
    done += count;
  }
}

IrqInfo VfioUserClient::irq_info(uint32_t index) {
  std::lock_guard lock(mutex_);
  Message reply = exchange_locked(Command::kDeviceGetIrqInfo, bytes_of(IrqInfoPayload{sizeof(IrqInfoPayload), 0, index, 0}));
  auto info = load<IrqInfoPayload>(reply.payload, 0, "DEVICE_GET_IRQ_INFO reply");
  if (info.index != index) bad_reply(Command::kDeviceGetIrqInfo, "answered for another irq index");
  return {info.index, info.flags, info.count};
}

void VfioUserClient::set_irq_eventfds(uint32_t index, uint32_t start, const std::vector<int>& eventfds) {
  std::lock_guard lock(mutex_);
  if (!fits(start, eventfds.size(), UINT32_MAX)) throw PciTransportError("vfio-user: SET_IRQS vector range overflows");
  // The server takes at most max_msg_fds fds per message; a run of -1 goes as a message
  // without fds, which takes those vectors' eventfds away.
  size_t max_fds = std::clamp<size_t>(server_version_.capabilities.max_msg_fds, 1, kMaxFdsPerMessage);
  for (size_t i = 0; i < eventfds.size();) {
    bool none = eventfds[i] < 0;
    size_t end = i + 1;
    while (end < eventfds.size() && (eventfds[end] < 0) == none && (none || end - i < max_fds)) ++end;
    std::vector<int> fds(none ? eventfds.begin() : eventfds.begin() + i, none ? eventfds.begin() : eventfds.begin() + end);
    IrqSetPayload set{sizeof(IrqSetPayload), kIrqSetDataEventfd | kIrqSetActionTrigger, index,
                      static_cast<uint32_t>(start + i), static_cast<uint32_t>(end - i)};
    exchange_locked(Command::kDeviceSetIrqs, bytes_of(set), fds);
    i = end;
  }
}

void VfioUserClient::disable_irqs(uint32_t index) {
  std::lock_guard lock(mutex_);
  IrqSetPayload set{sizeof(IrqSetPayload), kIrqSetDataNone | kIrqSetActionTrigger, index, 0, 0};
  exchange_locked(Command::kDeviceSetIrqs, bytes_of(set));
}

void VfioUserClient::dma_map(void* cpu_address, uint64_t size, uint64_t iova, int fd, uint64_t fd_offset,
                             uint32_t flags) {
  std::lock_guard lock(mutex_);
  if (size == 0 || !fits(iova, size, UINT64_MAX))
    throw VfioUserError(EINVAL, "vfio-user: DMA map of " + std::to_string(size) + " bytes at IOVA " +
                                    std::to_string(iova) + " is empty or wraps");
  if (fd < 0 && !cpu_address)
    throw VfioUserError(EINVAL, "vfio-user: a DMA map needs an fd or a CPU address the client can serve");
  uint64_t ignored = 0;
  auto next = dma_windows_.lower_bound(iova);
  bool overlaps = (next != dma_windows_.end() && next->first < iova + size) ||
                  (next != dma_windows_.begin() && find_dma_window(iova, 1, ignored));
  if (overlaps) throw VfioUserError(EEXIST, "vfio-user: DMA map at IOVA " + std::to_string(iova) + " overlaps a mapping");
  dma_windows_[iova] = {size, static_cast<uint8_t*>(cpu_address), flags};
  DmaMapPayload map{sizeof(DmaMapPayload), flags, fd >= 0 ? fd_offset : 0, iova, size};
  try {
    exchange_locked(Command::kDmaMap, bytes_of(map), fd >= 0 ? std::vector<int>{fd} : std::vector<int>{});
  } catch (...) {
    dma_windows_.erase(iova);
    throw;
  }
}

void VfioUserClient::dma_unmap(uint64_t iova, uint64_t size) {
  std::lock_guard lock(mutex_);
  exchange_locked(Command::kDmaUnmap, bytes_of(DmaUnmapPayload{sizeof(DmaUnmapPayload), 0, iova, size}));
  // The server has dropped every reference before replying; only now may the memory go.
  auto it = dma_windows_.find(iova);
  if (it != dma_windows_.end() && it->second.size == size) dma_windows_.erase(it);
}

void VfioUserClient::reset() {
  std::lock_guard lock(mutex_);
  exchange_locked(Command::kDeviceReset, {});
}

}  // namespace pcie::vfio_user
