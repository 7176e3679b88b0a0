#include "model/platform/vfio_user_server.h"

#include <poll.h>
#include <sys/eventfd.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>

#include "driver/backends/coherent_dma.h"

namespace irdma_sim::platform {

using namespace pcie::vfio_user;
namespace vfio = pcie::vfio;

namespace {

// Pending client commands a DMA wait may queue before it gives up on the client.
constexpr size_t kMaxPendingMessages = 256;
constexpr uint64_t kPageSize = 4096;

template <typename T>
std::vector<uint8_t> bytes_of(const T& value) {
  std::vector<uint8_t> bytes;
  append(bytes, value);
  return bytes;
}

[[noreturn]] void refuse(int error_no, const std::string& why) { throw VfioUserError(error_no, why); }

// A fixed-size request: exactly the struct, nothing more or less.
template <typename T>
T exact_payload(const Message& message) {
  if (message.payload.size() != sizeof(T))
    refuse(EINVAL, command_name(message.header.command) + " payload is " + std::to_string(message.payload.size()) +
                       " bytes, not " + std::to_string(sizeof(T)));
  return load<T>(message.payload, 0, "request");
}

bool one_bit(uint32_t bits) { return bits != 0 && (bits & (bits - 1)) == 0; }

}  // namespace

VfioUserServer::VfioUserServer(VfioUserEndpoint& endpoint, std::string socket_path, VfioUserServerOptions options)
    : endpoint_(endpoint), socket_path_(std::move(socket_path)), options_(options) {
  options_.max_msg_fds = std::clamp<uint32_t>(options_.max_msg_fds, 1, kMaxFdsPerMessage);
  num_regions_ = vfio::kNumPciRegions;
  for (VfioUserRegion& r : endpoint_.regions()) {
    std::string name = "vfio-user server: region " + std::to_string(r.index);
    if (r.index == vfio::kConfigRegionIndex) throw pcie::PciTransportError(name + ": config space is the server's");
    if (regions_.count(r.index)) throw pcie::PciTransportError(name + " is listed twice");
    if (r.fd >= 0 && r.fd_offset % kPageSize) throw pcie::PciTransportError(name + ": fd_offset is not page-aligned");
    if (r.fd < 0 && !r.mmap_areas.empty()) throw pcie::PciTransportError(name + ": mmap areas without an fd");
    for (const auto& area : r.mmap_areas)
      if (area.size == 0 || area.offset % kPageSize || !fits(area.offset, area.size, r.size))
        throw pcie::PciTransportError(name + ": an mmap area is empty, unaligned or outside the region");
    num_regions_ = std::max(num_regions_, r.index + 1);
    regions_.emplace(r.index, std::move(r));
  }
  VfioUserRegion config;
  config.index = vfio::kConfigRegionIndex;
  config.size = endpoint_.config_space_size();
  config.flags = vfio::kRegionFlagRead | vfio::kRegionFlagWrite;
  regions_.emplace(config.index, config);
  for (uint32_t i = 0; i < vfio::kNumPciIrqs; ++i) {
    irq_counts_.push_back(endpoint_.irq_count(i));
    irq_fds_.emplace_back(irq_counts_.back());
  }
  wake_fd_.reset(::eventfd(0, EFD_CLOEXEC | EFD_NONBLOCK));
  if (!wake_fd_.valid()) throw pcie::PciTransportError(std::string("vfio-user server: eventfd: ") + std::strerror(errno));
  if (options_.listen_fd < 0) {
    listen_fd_ = listen_unix(socket_path_);
  } else {
    listen_fd_ = pcie::UniqueFd(::dup(options_.listen_fd));
    if (!listen_fd_.valid()) throw pcie::PciTransportError("vfio-user: the listening socket lent is unusable");
  }
}

VfioUserServer::~VfioUserServer() {
  {
    std::lock_guard lock(io_mutex_);
    client_.reset();
  }
  release_client_resources();
  if (listen_fd_.valid()) {  // else the path may be another server's by now
    listen_fd_.reset();
    if (options_.listen_fd < 0) ::unlink(socket_path_.c_str());
  }
}

void VfioUserServer::stop() {
  stopped_.store(true);
  uint64_t one = 1;
  [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));  // async-signal-safe
}

bool VfioUserServer::client_connected() const {
  std::lock_guard lock(io_mutex_);
  return client_ != nullptr;
}

void VfioUserServer::run() {
  while (serve_one_message(-1)) {
  }
}

bool VfioUserServer::accept_client(int timeout_ms) {
  pollfd fds[2] = {{listen_fd_.get(), POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
  int n = ::poll(fds, 2, timeout_ms);
  if (n <= 0 || stopped_) return !stopped_;
  if (fds[1].revents) {
    uint64_t count;
    [[maybe_unused]] ssize_t r = ::read(wake_fd_.get(), &count, sizeof(count));
    return !stopped_;
  }
  pcie::UniqueFd fd(::accept4(listen_fd_.get(), nullptr, nullptr, SOCK_CLOEXEC));
  if (!fd.valid()) return true;  // the client gave up between poll and accept
  if (!options_.serve_next_client) {
    // One client only. A socket of our own goes, so that a second client's connect fails
    // now (and retries) rather than waiting in a backlog no one will accept from; a lent
    // one stays its lender's, whose next server accepts what waits in it.
    listen_fd_.reset();
    if (options_.listen_fd < 0) ::unlink(socket_path_.c_str());
  }
  // Room for the largest message: a REGION_WRITE or DMA_READ reply of max_data_xfer_size.
  size_t max_message = kHeaderSize + sizeof(DmaAccessPayload) + std::max<size_t>(options_.max_data_xfer_size, 4096);
  std::lock_guard lock(io_mutex_);
  client_ = std::make_unique<MessageSocket>(std::move(fd), max_message, options_.max_msg_fds);
  version_done_ = false;
  client_capabilities_ = {};
  return true;
}

// Its maps and eventfds go before the client does: once client_connected() says it is
// gone, nothing of it is left.
void VfioUserServer::drop_client() {
  release_client_resources();
  {
    std::lock_guard lock(io_mutex_);
    client_.reset();
    pending_.clear();
  }
  client_left_ = true;
}

void VfioUserServer::release_client_resources() {
  std::map<uint64_t, DmaMap> maps;
  {
    std::lock_guard lock(maps_mutex_);
    maps.swap(dma_maps_);
  }
  for (auto& [iova, map] : maps) {
    endpoint_.dma_unmapped(iova, map.size);
    if (map.base) ::munmap(map.base, map.size);
  }
  std::lock_guard lock(irq_mutex_);
  for (auto& vectors : irq_fds_)
    for (auto& fd : vectors) fd.reset();
}

VfioUserServer::Received VfioUserServer::receive_locked(Message& out) {
  if (!pending_.empty()) {
    out = std::move(pending_.front());
    pending_.pop_front();
    return Received::kMessage;
  }
  pollfd p{client_->fd(), POLLIN, 0};
  if (::poll(&p, 1, 0) <= 0) return Received::kNothing;  // a DMA wait on another thread took it
  try {
    out = client_->receive(options_.message_timeout_ms);
    return Received::kMessage;
  } catch (const MessageError& error) {
    // Say why; go on if the stream is still framed, else hang up: it has no boundary to resume at.
    Header reply{error.header().msg_id, error.header().command, 0, kTypeReply | kFlagError,
                 static_cast<uint32_t>(error.error_no())};
    try {
      client_->send(reply, nullptr, 0, {}, options_.message_timeout_ms);
    } catch (const VfioUserError&) {
      return Received::kHangUp;
    }
    return error.in_sync() ? Received::kNothing : Received::kHangUp;
  } catch (const VfioUserError&) {
    return Received::kHangUp;  // gone, or cut off in the middle of a message
  }
}

bool VfioUserServer::serve_one_message(int timeout_ms) {
  if (stopped_) return false;
  int client_fd = -1;
  bool has_pending = false;
  {
    std::lock_guard lock(io_mutex_);
    if (!client_ && client_left_ && !options_.serve_next_client) return false;
    if (client_) {
      client_fd = client_->fd();
      has_pending = !pending_.empty();
    }
  }
  if (client_fd < 0) return accept_client(timeout_ms);
  if (!has_pending) {
    pollfd fds[2] = {{client_fd, POLLIN, 0}, {wake_fd_.get(), POLLIN, 0}};
    int n = ::poll(fds, 2, timeout_ms);
    if (stopped_) return false;
    if (n <= 0) return true;
    if (fds[1].revents) {
      uint64_t count;
      [[maybe_unused]] ssize_t r = ::read(wake_fd_.get(), &count, sizeof(count));
    }
  }
  Message message;
  Received received;
  {
    std::lock_guard lock(io_mutex_);
    received = receive_locked(message);
  }
  if (received == Received::kHangUp) {
    drop_client();
    return options_.serve_next_client && !stopped_;
  }
  if (received == Received::kNothing || message.is_reply()) return true;  // a reply nobody waits for any more

  Reply reply = dispatch(message);
  if (message.header.flags & kFlagNoReply) return true;
  Header out{message.header.msg_id, message.header.command, 0, kTypeReply | (reply.error_no ? kFlagError : 0u),
             static_cast<uint32_t>(reply.error_no)};
  if (reply.error_no) reply.payload.clear();
  std::lock_guard lock(io_mutex_);
  try {
    client_->send(out, reply.payload.data(), reply.payload.size(),
                  reply.fd >= 0 && !reply.error_no ? std::vector<int>{reply.fd} : std::vector<int>{},
                  options_.message_timeout_ms);
  } catch (const VfioUserError&) {
    // The next poll sees the hang-up and drops the client.
  }
  return true;
}

VfioUserServer::Reply VfioUserServer::dispatch(Message& message) {
  try {
    auto command = static_cast<Command>(message.header.command);
    if (!version_done_ && command != Command::kVersion)
      refuse(EINVAL, "VERSION must come first");
    switch (command) {
      case Command::kVersion: return handle_version(message);
      case Command::kDmaMap: return handle_dma_map(message);
      case Command::kDmaUnmap: return handle_dma_unmap(message);
      case Command::kDeviceGetInfo: return handle_device_info(message);
      case Command::kDeviceGetRegionInfo: return handle_region_info(message);
      case Command::kDeviceGetIrqInfo: return handle_irq_info(message);
      case Command::kDeviceSetIrqs: return handle_set_irqs(message);
      case Command::kRegionRead: return handle_region_read(message);
      case Command::kRegionWrite: return handle_region_write(message);
      case Command::kDeviceReset: return handle_reset(message);
      default: refuse(ENOSYS, command_name(message.header.command) + " is not served");
    }
  } catch (const VfioUserError& error) {
    return {error.error_no(), {}, -1};
  } catch (const std::exception&) {
    return {EIO, {}, -1};  // the device failed; the connection goes on
  }
}

VfioUserServer::Reply VfioUserServer::handle_version(const Message& message) {
  if (version_done_) refuse(EINVAL, "VERSION was already negotiated");
  Version theirs = decode_version(message.payload);
  if (theirs.major != kMajorVersion) refuse(ENOTSUP, "major version " + std::to_string(theirs.major));
  Version ours{kMajorVersion, std::min(theirs.minor, kMinorVersion), {}};
  ours.capabilities.max_msg_fds = options_.max_msg_fds;
  ours.capabilities.max_data_xfer_size = options_.max_data_xfer_size;
  ours.capabilities.max_dma_maps = options_.max_dma_maps;
  {
    std::lock_guard lock(io_mutex_);
    client_capabilities_ = theirs.capabilities;
    version_done_ = true;
  }
  return {0, encode_version(ours), -1};
}

VfioUserServer::Reply VfioUserServer::handle_dma_map(Message& message) {
  auto map = exact_payload<DmaMapPayload>(message);
  if (map.flags & ~(vfio::kDmaFlagRead | vfio::kDmaFlagWrite)) refuse(EINVAL, "unknown DMA_MAP flags");
  if (map.size == 0 || !fits(map.address, map.size, UINT64_MAX)) refuse(EINVAL, "empty or wrapping DMA range");
  if (message.fds.size() > 1) refuse(EINVAL, "DMA_MAP with more than one fd");
  {
    std::lock_guard lock(maps_mutex_);
    if (dma_maps_.size() >= options_.max_dma_maps) refuse(ENOSPC, "too many DMA maps");
    auto next = dma_maps_.lower_bound(map.address);
    if (next != dma_maps_.end() && next->first - map.address < map.size) refuse(EEXIST, "DMA map overlaps");
    if (next != dma_maps_.begin()) {
      auto prev = std::prev(next);
      if (map.address - prev->first < prev->second.size) refuse(EEXIST, "DMA map overlaps");
    }
  }
  void* base = nullptr;
  if (!message.fds.empty()) {
    int prot = ((map.flags & vfio::kDmaFlagRead) ? PROT_READ : 0) | ((map.flags & vfio::kDmaFlagWrite) ? PROT_WRITE : 0);
    // Past the end of the file a DMA would be SIGBUS, not an error: refuse the map.
    struct stat st {};
    if (::fstat(message.fds[0].get(), &st) != 0 || st.st_size < 0 || uint64_t(st.st_size) < map.offset ||
        uint64_t(st.st_size) - map.offset < map.size)
      refuse(EINVAL, "the DMA map's fd is smaller than its offset and size");
    base = ::mmap(nullptr, map.size, prot, MAP_SHARED, message.fds[0].get(), static_cast<off_t>(map.offset));
    if (base == MAP_FAILED) refuse(errno, "mmap of the client's DMA fd");
  }
  {
    std::lock_guard lock(maps_mutex_);  // only this thread adds maps, so the check above still holds
    dma_maps_[map.address] = {map.size, map.flags, base};
  }
  endpoint_.dma_mapped(map.address, map.size, map.flags);
  return {};
}

VfioUserServer::Reply VfioUserServer::handle_dma_unmap(const Message& message) {
  auto unmap = exact_payload<DmaUnmapPayload>(message);
  if (unmap.flags != 0) refuse(EINVAL, "DMA_UNMAP flags are not supported");
  DmaMap removed{};
  {
    std::lock_guard lock(maps_mutex_);
    auto it = dma_maps_.find(unmap.address);
    if (it == dma_maps_.end() || it->second.size != unmap.size) {
      // A range that only partly matches a map is a bad request; one that touches none is unknown.
      bool touches = false;
      for (const auto& [iova, map] : dma_maps_)
        touches |= iova < unmap.address + unmap.size && unmap.address < iova + map.size;
      refuse(touches ? EINVAL : ENOENT, "DMA_UNMAP of a range that is not one map");
    }
    removed = it->second;
    dma_maps_.erase(it);  // from here no device access through the table reaches it
  }
  endpoint_.dma_unmapped(unmap.address, unmap.size);
  if (removed.base) ::munmap(removed.base, removed.size);
  return {0, message.payload, -1};
}

VfioUserServer::Reply VfioUserServer::handle_device_info(const Message& message) {
  auto request = exact_payload<DeviceInfoPayload>(message);
  if (request.argsz < sizeof(DeviceInfoPayload)) refuse(EINVAL, "argsz too small");
  uint32_t flags = vfio::kDeviceFlagPci | (endpoint_.can_reset() ? vfio::kDeviceFlagReset : 0);
  return {0, bytes_of(DeviceInfoPayload{sizeof(DeviceInfoPayload), flags, num_regions_, vfio::kNumPciIrqs}), -1};
}

VfioUserServer::Reply VfioUserServer::handle_region_info(const Message& message) {
  auto request = exact_payload<RegionInfoPayload>(message);
  if (request.argsz < sizeof(RegionInfoPayload)) refuse(EINVAL, "argsz too small");
  if (request.index >= num_regions_) refuse(EINVAL, "no region " + std::to_string(request.index));
  RegionInfoPayload info{sizeof(RegionInfoPayload), 0, request.index, 0, 0, 0};
  auto it = regions_.find(request.index);
  if (it == regions_.end()) return {0, bytes_of(info), -1};  // size 0: absent
  const VfioUserRegion& region = it->second;
  info.flags = region.flags;
  info.size = region.size;
  if (region.fd < 0) return {0, bytes_of(info), -1};

  // A mappable region always describes its areas, the whole region when none are given.
  std::vector<SparseMmapArea> areas;
  for (const auto& a : region.mmap_areas) areas.push_back({a.offset, a.size});
  if (areas.empty()) areas.push_back({0, region.size});
  uint32_t needed = static_cast<uint32_t>(sizeof(RegionInfoPayload) + sizeof(CapHeader) + sizeof(SparseMmapCapBody) +
                                          areas.size() * sizeof(SparseMmapArea));
  info.flags |= vfio::kRegionFlagMmap;
  info.offset = region.fd_offset;
  info.argsz = needed;
  if (request.argsz < needed) return {0, bytes_of(info), -1};  // the client asks again with room
  info.flags |= vfio::kRegionFlagCaps;
  info.cap_offset = sizeof(RegionInfoPayload);
  std::vector<uint8_t> payload = bytes_of(info);
  append(payload, CapHeader{kCapSparseMmap, kCapSparseMmapVersion, 0});
  append(payload, SparseMmapCapBody{static_cast<uint32_t>(areas.size()), 0});
  for (const auto& a : areas) append(payload, a);
  return {0, std::move(payload), region.fd};
}

VfioUserServer::Reply VfioUserServer::handle_irq_info(const Message& message) {
  auto request = exact_payload<IrqInfoPayload>(message);
  if (request.argsz < sizeof(IrqInfoPayload)) refuse(EINVAL, "argsz too small");
  if (request.index >= vfio::kNumPciIrqs) refuse(EINVAL, "no irq index " + std::to_string(request.index));
  return {0, bytes_of(IrqInfoPayload{sizeof(IrqInfoPayload), vfio::kIrqInfoEventfd, request.index,
                                     irq_counts_[request.index]}),
          -1};
}

VfioUserServer::Reply VfioUserServer::handle_set_irqs(Message& message) {
  auto set = load<IrqSetPayload>(message.payload, 0, "DEVICE_SET_IRQS");
  uint32_t data = set.flags & kIrqSetDataMask;
  uint32_t action = set.flags & kIrqSetActionMaskAll;
  if (!one_bit(data) || !one_bit(action) || (set.flags & ~(kIrqSetDataMask | kIrqSetActionMaskAll)))
    refuse(EINVAL, "SET_IRQS needs exactly one data and one action flag");
  size_t data_size = data == kIrqSetDataBool ? set.count : 0;
  if (message.payload.size() != sizeof(IrqSetPayload) + data_size) refuse(EINVAL, "SET_IRQS payload size");
  if (set.index >= vfio::kNumPciIrqs) refuse(EINVAL, "no irq index " + std::to_string(set.index));
  if (action != kIrqSetActionTrigger) refuse(ENOTSUP, "only the trigger action is served");
  auto& vectors = irq_fds_[set.index];
  std::lock_guard lock(irq_mutex_);
  if (set.count == 0) {
    if (data != kIrqSetDataNone || set.start != 0) refuse(EINVAL, "count 0 only disables, with DATA_NONE at start 0");
    for (auto& fd : vectors) fd.reset();
    return {};
  }
  if (!fits(set.start, set.count, vectors.size())) refuse(EINVAL, "vectors beyond the irq's count");
  if (data == kIrqSetDataEventfd) {
    if (!message.fds.empty() && message.fds.size() != set.count)
      refuse(EINVAL, "SET_IRQS carries " + std::to_string(message.fds.size()) + " fds for " +
                         std::to_string(set.count) + " vectors");
    for (uint32_t i = 0; i < set.count; ++i)
      vectors[set.start + i] = message.fds.empty() ? pcie::UniqueFd() : std::move(message.fds[i]);
    return {};
  }
  // DATA_NONE / DATA_BOOL with TRIGGER: the client fires the vectors itself.
  for (uint32_t i = 0; i < set.count; ++i) {
    bool fire = data == kIrqSetDataNone || message.payload[sizeof(IrqSetPayload) + i] != 0;
    uint64_t one = 1;
    if (fire && vectors[set.start + i].valid())
      [[maybe_unused]] ssize_t n = ::write(vectors[set.start + i].get(), &one, sizeof(one));
  }
  return {};
}

const VfioUserRegion& VfioUserServer::checked_region(uint32_t index, uint64_t offset, uint64_t count,
                                                     uint32_t need_flag) const {
  auto it = regions_.find(index);
  if (it == regions_.end()) refuse(EINVAL, "no region " + std::to_string(index));
  if (!(it->second.flags & need_flag)) refuse(EPERM, "region " + std::to_string(index) + " forbids that access");
  if (count == 0 || count > options_.max_data_xfer_size) refuse(EINVAL, "access count " + std::to_string(count));
  if (!fits(offset, count, it->second.size)) refuse(EINVAL, "access beyond the end of region " + std::to_string(index));
  return it->second;
}

VfioUserServer::Reply VfioUserServer::handle_region_read(const Message& message) {
  auto access = exact_payload<RegionAccessPayload>(message);
  checked_region(access.region, access.offset, access.count, vfio::kRegionFlagRead);
  std::vector<uint8_t> payload = bytes_of(access);
  payload.resize(sizeof(access) + access.count);
  uint8_t* data = payload.data() + sizeof(access);
  int error_no = access.region == vfio::kConfigRegionIndex ? endpoint_.config_read(access.offset, data, access.count)
                                                           : endpoint_.region_read(access.region, access.offset, data, access.count);
  if (error_no) refuse(error_no, "the device refused the read");
  return {0, std::move(payload), -1};
}

VfioUserServer::Reply VfioUserServer::handle_region_write(const Message& message) {
  auto access = load<RegionAccessPayload>(message.payload, 0, "REGION_WRITE");
  if (message.payload.size() - sizeof(access) != access.count)
    refuse(EINVAL, "REGION_WRITE count " + std::to_string(access.count) + " disagrees with its " +
                       std::to_string(message.payload.size() - sizeof(access)) + " data bytes");
  checked_region(access.region, access.offset, access.count, vfio::kRegionFlagWrite);
  const uint8_t* data = message.payload.data() + sizeof(access);
  int error_no = access.region == vfio::kConfigRegionIndex ? endpoint_.config_write(access.offset, data, access.count)
                                                           : endpoint_.region_write(access.region, access.offset, data, access.count);
  if (error_no) refuse(error_no, "the device refused the write");
  return {0, bytes_of(access), -1};
}

VfioUserServer::Reply VfioUserServer::handle_reset(const Message& message) {
  if (!message.payload.empty()) refuse(EINVAL, "DEVICE_RESET takes no payload");
  if (!endpoint_.can_reset()) refuse(ENOTSUP, "the device cannot reset");
  endpoint_.reset();
  return {};
}

bool VfioUserServer::trigger_irq(uint32_t irq_index, uint32_t vector) {
  std::lock_guard lock(irq_mutex_);
  if (irq_index >= irq_fds_.size() || vector >= irq_fds_[irq_index].size()) return false;
  const pcie::UniqueFd& fd = irq_fds_[irq_index][vector];
  if (!fd.valid()) return false;
  uint64_t one = 1;
  return ::write(fd.get(), &one, sizeof(one)) == sizeof(one);
}

void* VfioUserServer::dma_pointer(uint64_t iova, uint64_t size) {
  std::lock_guard lock(maps_mutex_);
  auto it = dma_maps_.upper_bound(iova);
  if (it == dma_maps_.begin()) return nullptr;
  --it;
  uint64_t into = iova - it->first;
  if (!it->second.base || into > it->second.size || size > it->second.size - into) return nullptr;
  return static_cast<uint8_t*>(it->second.base) + into;
}

size_t VfioUserServer::dma_map_count() const {
  std::lock_guard lock(maps_mutex_);
  return dma_maps_.size();
}

void VfioUserServer::dma_read(uint64_t iova, void* data, size_t size) {
  dma_access(true, iova, static_cast<uint8_t*>(data), size);
}

void VfioUserServer::dma_write(uint64_t iova, const void* data, size_t size) {
  dma_access(false, iova, static_cast<uint8_t*>(const_cast<void*>(data)), size);
}

void VfioUserServer::dma_access(bool is_read, uint64_t iova, uint8_t* data, size_t size) {
  {
    std::lock_guard lock(maps_mutex_);
    auto it = dma_maps_.upper_bound(iova);
    uint64_t into = 0;
    bool inside = it != dma_maps_.begin();
    if (inside) {
      --it;
      into = iova - it->first;
      inside = into < it->second.size && size <= it->second.size - into;
    }
    if (!inside)
      refuse(EFAULT, "vfio-user server: DMA of " + std::to_string(size) + " bytes at IOVA 0x" + [&] {
        char hex[24];
        std::snprintf(hex, sizeof(hex), "%llx", static_cast<unsigned long long>(iova));
        return std::string(hex);
      }() + " is not inside one DMA map");
    if (!(it->second.flags & (is_read ? vfio::kDmaFlagRead : vfio::kDmaFlagWrite)))
      refuse(EACCES, "vfio-user server: the client did not allow that DMA direction");
    if (it->second.base) {  // shared: under the lock, so an unmap waits for the copy
      uint8_t* mapped = static_cast<uint8_t*>(it->second.base) + into;
      if (is_read)
        pcie::coherent_dma::device_read(mapped, data, size);
      else
        pcie::coherent_dma::device_write(mapped, data, size);
      return;
    }
  }
  std::lock_guard lock(io_mutex_);
  dma_message_locked(is_read, iova, data, size);
}

void VfioUserServer::dma_message_locked(bool is_read, uint64_t iova, uint8_t* data, size_t size) {
  if (!client_) refuse(ENOTCONN, "vfio-user server: no client for a DMA message");
  size_t chunk_limit = std::min(client_capabilities_.max_data_xfer_size, options_.max_data_xfer_size);
  auto command = is_read ? Command::kDmaRead : Command::kDmaWrite;
  bool queued = false;
  for (size_t done = 0; done < size;) {
    size_t count = std::min(size - done, chunk_limit);
    DmaAccessPayload access{iova + done, count};
    std::vector<uint8_t> payload = bytes_of(access);
    if (!is_read) append_bytes(payload, data + done, count);
    uint16_t id = next_msg_id_++;
    client_->send(Header{id, static_cast<uint16_t>(command), 0, kTypeCommand, 0}, payload, options_.message_timeout_ms);
    for (;;) {
      Message reply = client_->receive(options_.message_timeout_ms);
      if (!reply.is_reply()) {
        // The client's own commands wait their turn in the serve loop.
        if (pending_.size() >= kMaxPendingMessages) refuse(ENOBUFS, "vfio-user server: client floods during DMA");
        pending_.push_back(std::move(reply));
        queued = true;
        continue;
      }
      if (reply.header.msg_id != id || reply.header.command != static_cast<uint16_t>(command)) continue;
      if (reply.header.flags & kFlagError)
        refuse(static_cast<int>(reply.header.error_no),
               "vfio-user server: the client refused " + command_name(reply.header.command) + ": " +
                   std::strerror(static_cast<int>(reply.header.error_no)));
      size_t expect = sizeof(DmaAccessPayload) + (is_read ? count : 0);
      if (reply.payload.size() < expect) refuse(EPROTO, "vfio-user server: short DMA reply from the client");
      if (is_read) std::memcpy(data + done, reply.payload.data() + sizeof(DmaAccessPayload), count);
      break;
    }
    done += count;
  }
  if (queued) {
    uint64_t one = 1;
    [[maybe_unused]] ssize_t n = ::write(wake_fd_.get(), &one, sizeof(one));  // the serve loop has work
  }
}

}  // namespace irdma_sim::platform
