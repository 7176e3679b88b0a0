// The vfio-user client: a PCI function served by another process, reached over its socket.
// One lock covers each request/reply exchange, so any thread may call in. The server may
// send DMA_READ/DMA_WRITE for memory mapped without an fd at any time; they are answered
// while a reply is awaited, or by process_server_requests() when the client is idle.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/backends/pci_transport.h"
#include "driver/backends/vfio_user/capabilities.h"
#include "driver/backends/vfio_user/socket.h"

namespace pcie::vfio_user {

struct VfioUserClientOptions {
  int reply_timeout_ms = 5000;    // a server that does not answer within this is an error
  int connect_timeout_ms = 5000;  // how long a server that is starting may take to listen
  // A BAR's REGION_WRITE without waiting for the reply (NO_REPLY), as a CPU's writes to a
  // BAR are posted on silicon; waiting holds the writer back behind the device and hides
  // races.
  bool posted_writes = true;
  uint32_t max_data_xfer_size = 1u << 20;  // the largest DMA_READ/WRITE we accept
};

class VfioUserClient final : public PciTransport {
 public:
  // Connects and negotiates the version. Throws PciTransportError.
  explicit VfioUserClient(const std::string& socket_path, VfioUserClientOptions options = {});
  ~VfioUserClient() override;
  VfioUserClient(const VfioUserClient&) = delete;
  VfioUserClient& operator=(const VfioUserClient&) = delete;

  DeviceInfo device_info() override;
  const RegionInfo& region(uint32_t index) override;
  void region_read(uint32_t index, uint64_t offset, void* data, size_t size) override;
  void region_write(uint32_t index, uint64_t offset, const void* data, size_t size) override;
  IrqInfo irq_info(uint32_t index) override;
  void set_irq_eventfds(uint32_t index, uint32_t start, const std::vector<int>& eventfds) override;
  void disable_irqs(uint32_t index) override;
  void dma_map(void* cpu_address, uint64_t size, uint64_t iova, int fd, uint64_t fd_offset,
               uint32_t flags = vfio::kDmaFlagRead | vfio::kDmaFlagWrite) override;
  void dma_unmap(uint64_t iova, uint64_t size) override;
  void reset() override;

  // Answers server requests that arrive within `timeout_ms`; returns how many it answered.
  int process_server_requests(int timeout_ms);
  // For an event loop: readable when a server request (or the server's end) is waiting.
  int socket_fd() const { return socket_->fd(); }

  // What the server answered to VERSION.
  const Version& server_version() const { return server_version_; }

 private:
  struct DmaWindow {
    uint64_t size;
    uint8_t* cpu_address;  // null: the server may only reach it through its fd
    uint32_t flags;
  };

  // Sends a command and waits for its reply, answering server requests meanwhile. A reply
  // with the error flag throws VfioUserError carrying the server's errno.
  Message exchange_locked(Command command, const std::vector<uint8_t>& payload, const std::vector<int>& fds = {});
  void post_locked(Command command, const std::vector<uint8_t>& payload);
  void answer_server_request_locked(Message& request);
  void check_usable_locked() const;
  [[noreturn]] void fail_locked(const VfioUserError& error);
  RegionInfo query_region_locked(uint32_t index);
  void map_areas(RegionInfo& info, int fd, uint64_t fd_offset);
  const DmaWindow* find_dma_window(uint64_t address, uint64_t count, uint64_t& window_iova) const;

  VfioUserClientOptions options_;
  std::string socket_path_;
  std::mutex mutex_;
  std::unique_ptr<MessageSocket> socket_;
  std::string dead_reason_;  // set once the connection is unusable
  uint16_t next_msg_id_ = 0;
  Version server_version_;
  std::map<uint32_t, std::unique_ptr<RegionInfo>> regions_;  // stable addresses for region()
  std::vector<std::pair<void*, size_t>> mappings_;           // munmapped when the client goes
  std::map<uint64_t, DmaWindow> dma_windows_;                // by IOVA
};

}  // namespace pcie::vfio_user
