// The vfio-user wire format (QEMU docs/interop/vfio-user.rst), named once for both ends:
// the 16-byte header, the commands and their payloads, in host byte order. Every payload
// struct is read and written with memcpy at a checked offset, never cast in place.
#pragma once

#include <cerrno>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <string>
#include <type_traits>
#include <vector>

#include "driver/backends/pci_transport.h"

namespace pcie::vfio_user {

// What this implementation speaks; a peer's reply may lower the minor, never the major.
constexpr uint16_t kMajorVersion = 0;
constexpr uint16_t kMinorVersion = 2;

enum class Command : uint16_t {
  kVersion = 1,
  kDmaMap = 2,
  kDmaUnmap = 3,
  kDeviceGetInfo = 4,
  kDeviceGetRegionInfo = 5,
  kDeviceGetRegionIoFds = 6,
  kDeviceGetIrqInfo = 7,
  kDeviceSetIrqs = 8,
  kRegionRead = 9,
  kRegionWrite = 10,
  kDmaRead = 11,
  kDmaWrite = 12,
  kDeviceReset = 13,
  kRegionWriteMulti = 15,
  kDeviceFeature = 16,
  kMigDataRead = 17,
  kMigDataWrite = 18,
};

// "REGION_WRITE", or "command 99" for a number the protocol does not define.
std::string command_name(uint16_t command);

struct Header {
  uint16_t msg_id = 0;
  uint16_t command = 0;
  uint32_t msg_size = 0;  // the whole message, header included
  uint32_t flags = 0;
  uint32_t error_no = 0;  // valid in a reply with kFlagError
};
static_assert(sizeof(Header) == 16 && std::is_trivially_copyable_v<Header>);

constexpr uint32_t kFlagTypeMask = 0xF;
constexpr uint32_t kTypeCommand = 0x0;
constexpr uint32_t kTypeReply = 0x1;
constexpr uint32_t kFlagNoReply = 1u << 4;
constexpr uint32_t kFlagError = 1u << 5;

constexpr size_t kHeaderSize = sizeof(Header);

// VERSION: followed by NUL-terminated JSON (capabilities.h).
struct VersionPayload {
  uint16_t major = 0;
  uint16_t minor = 0;
};
static_assert(sizeof(VersionPayload) == 4);

struct DmaMapPayload {
  uint32_t argsz = 0;
  uint32_t flags = 0;   // vfio::kDmaFlagRead / kDmaFlagWrite
  uint64_t offset = 0;  // into the fd that travels with the message, if any
  uint64_t address = 0;  // IOVA
  uint64_t size = 0;
};
static_assert(sizeof(DmaMapPayload) == 32);

struct DmaUnmapPayload {
  uint32_t argsz = 0;
  uint32_t flags = 0;
  uint64_t address = 0;
  uint64_t size = 0;
};
static_assert(sizeof(DmaUnmapPayload) == 24);

struct DeviceInfoPayload {
  uint32_t argsz = 0;
  uint32_t flags = 0;
  uint32_t num_regions = 0;
  uint32_t num_irqs = 0;
};
static_assert(sizeof(DeviceInfoPayload) == 16);

// Request: argsz = the most the client will take. Reply: argsz = what the full answer
// needs; the capability chain (and the region's fd) come only if that fitted.
struct RegionInfoPayload {
  uint32_t argsz = 0;
  uint32_t flags = 0;
  uint32_t index = 0;
  uint32_t cap_offset = 0;  // from the start of this struct; 0 = no chain
  uint64_t size = 0;
  uint64_t offset = 0;  // mmap offset of the region in its fd
};
static_assert(sizeof(RegionInfoPayload) == 32);

struct CapHeader {
  uint16_t id = 0;
  uint16_t version = 0;
  uint32_t next = 0;  // from the start of the region info; 0 = last
};
static_assert(sizeof(CapHeader) == 8);

constexpr uint16_t kCapSparseMmap = 1;
constexpr uint16_t kCapSparseMmapVersion = 1;

// Follows its CapHeader.
struct SparseMmapCapBody {
  uint32_t nr_areas = 0;
  uint32_t reserved = 0;
};
static_assert(sizeof(SparseMmapCapBody) == 8);

struct SparseMmapArea {
  uint64_t offset = 0;  // from the region start
  uint64_t size = 0;
};
static_assert(sizeof(SparseMmapArea) == 16);

struct IrqInfoPayload {
  uint32_t argsz = 0;
  uint32_t flags = 0;
  uint32_t index = 0;
  uint32_t count = 0;
};
static_assert(sizeof(IrqInfoPayload) == 16);

// Followed by `count` bool bytes with kIrqSetDataBool; eventfds travel as SCM_RIGHTS.
struct IrqSetPayload {
  uint32_t argsz = 0;
  uint32_t flags = 0;
  uint32_t index = 0;
  uint32_t start = 0;
  uint32_t count = 0;
};
static_assert(sizeof(IrqSetPayload) == 20);

constexpr uint32_t kIrqSetDataNone = 1u << 0;
constexpr uint32_t kIrqSetDataBool = 1u << 1;
constexpr uint32_t kIrqSetDataEventfd = 1u << 2;
constexpr uint32_t kIrqSetActionMask = 1u << 3;
constexpr uint32_t kIrqSetActionUnmask = 1u << 4;
constexpr uint32_t kIrqSetActionTrigger = 1u << 5;
constexpr uint32_t kIrqSetDataMask = kIrqSetDataNone | kIrqSetDataBool | kIrqSetDataEventfd;
constexpr uint32_t kIrqSetActionMaskAll = kIrqSetActionMask | kIrqSetActionUnmask | kIrqSetActionTrigger;

// REGION_READ / REGION_WRITE; data follows (read reply, write request).
struct RegionAccessPayload {
  uint64_t offset = 0;
  uint32_t region = 0;
  uint32_t count = 0;
};
static_assert(sizeof(RegionAccessPayload) == 16);

// DMA_READ / DMA_WRITE in libvfio-user's layout: data at byte 16 (read reply, write request).
struct DmaAccessPayload {
  uint64_t address = 0;
  uint64_t count = 0;
};
static_assert(sizeof(DmaAccessPayload) == 16);

// A failure in the protocol layer: what went wrong, and the errno it stands for
// (ECONNRESET = the peer closed the connection, ETIMEDOUT, EINVAL for a malformed message,
// or the errno a peer's error reply carried).
class VfioUserError : public PciTransportError {
 public:
  VfioUserError(int error_no, const std::string& message) : PciTransportError(message), error_no_(error_no) {}
  int error_no() const { return error_no_; }

 private:
  int error_no_;
};

// The struct at `offset` of `bytes`; a message too short for it is EINVAL naming `what`.
template <typename T>
T load(const std::vector<uint8_t>& bytes, size_t offset, const char* what) {
  static_assert(std::is_trivially_copyable_v<T>);
  if (offset > bytes.size() || bytes.size() - offset < sizeof(T))
    throw VfioUserError(EINVAL, std::string(what) + ": payload of " + std::to_string(bytes.size()) +
                                    " bytes is too short for " + std::to_string(sizeof(T)) + " bytes at offset " +
                                    std::to_string(offset));
  T value;
  std::memcpy(&value, bytes.data() + offset, sizeof(T));
  return value;
}

inline void append_bytes(std::vector<uint8_t>& bytes, const void* data, size_t size) {
  size_t at = bytes.size();
  bytes.resize(at + size);
  if (size) std::memcpy(bytes.data() + at, data, size);
}

template <typename T>
void append(std::vector<uint8_t>& bytes, const T& value) {
  static_assert(std::is_trivially_copyable_v<T>);
  append_bytes(bytes, &value, sizeof(T));
}

// a + b <= limit, without overflow.
inline bool fits(uint64_t a, uint64_t b, uint64_t limit) { return a <= limit && b <= limit - a; }

}  // namespace pcie::vfio_user
