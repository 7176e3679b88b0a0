// A vfio-user server for one PCI function (VfioUserEndpoint), one client at a time, on a
// listening AF_UNIX socket. Plain C++ (no SystemC): the device host drives it from a
// thread of its own with serve_one_message() or run(), and reaches the client's memory and
// interrupts from any thread with dma_read/dma_write/dma_pointer and trigger_irq.
//
// Every message is checked before use; a bad one gets an error reply and serving goes on.
// A client that leaves takes its DMA maps and irq eventfds with it; the device keeps its state.
#pragma once

#include <atomic>
#include <cstdint>
#include <deque>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <vector>

#include "driver/backends/unique_fd.h"
#include "driver/backends/vfio_user/capabilities.h"
#include "driver/backends/vfio_user/socket.h"
#include "model/platform/vfio_user_endpoint.h"

namespace irdma_sim::platform {

struct VfioUserServerOptions {
  bool serve_next_client = true;   // false: the server is done when its first client leaves
  int message_timeout_ms = 2000;   // for the rest of a message once it began, and for DMA replies
  uint32_t max_msg_fds = 8;        // fds we take per message (SET_IRQS chunks)
  uint32_t max_data_xfer_size = 1u << 20;
  uint32_t max_dma_maps = 65535;
  // A socket already listening at the path, lent by the caller (irdma-sim serve's loop of
  // one-client servers): the client is accepted from it, and it and its path stay the
  // caller's, so that a client waiting in its backlog waits for the next server. -1: the
  // server listens itself.
  int listen_fd = -1;
};

class VfioUserServer {
 public:
  // Listens at `socket_path` (replacing a stale socket there), or takes options.listen_fd.
  // Throws pcie::PciTransportError.
  VfioUserServer(VfioUserEndpoint& endpoint, std::string socket_path, VfioUserServerOptions options = {});
  ~VfioUserServer();  // the path is unlinked, unless it was lent
  VfioUserServer(const VfioUserServer&) = delete;
  VfioUserServer& operator=(const VfioUserServer&) = delete;

  // Waits up to `timeout_ms` (-1 = no limit) for a client to connect or for a message, and
  // serves it. False once the server is done: stopped, or (serve_next_client off) its
  // client has left.
  bool serve_one_message(int timeout_ms);
  void run();  // serve_one_message until done
  // From any thread or a signal handler: serve_one_message and run return false soon.
  void stop();

  bool client_connected() const;

  // --- for the device, from any thread ---
  // Signals vector `vector` of irq `irq_index`; false when the client set no eventfd there.
  bool trigger_irq(uint32_t irq_index, uint32_t vector);
  // The server's mapping of [iova, iova + size) when the client shared it by fd, else null.
  void* dma_pointer(uint64_t iova, uint64_t size);
  // Client memory at [iova, iova + size) inside one DMA map: by memcpy where shared, else
  // by DMA_READ/DMA_WRITE messages. Throws pcie::vfio_user::VfioUserError (EFAULT: not mapped).
  void dma_read(uint64_t iova, void* data, size_t size);
  void dma_write(uint64_t iova, const void* data, size_t size);
  size_t dma_map_count() const;

  const std::string& socket_path() const { return socket_path_; }

 private:
  struct DmaMap {
    uint64_t size;
    uint32_t flags;
    void* base;  // our mmap of the client's fd, or null (message path)
  };
  struct Reply {
    int error_no = 0;
    std::vector<uint8_t> payload;
    int fd = -1;  // borrowed from the region table
  };
  using Message = pcie::vfio_user::Message;
  enum class Received { kMessage, kNothing, kHangUp };

  bool accept_client(int timeout_ms);
  Received receive_locked(Message& out);
  void drop_client();
  void release_client_resources();
  Reply dispatch(Message& message);
  Reply handle_version(const Message& message);
  Reply handle_dma_map(Message& message);
  Reply handle_dma_unmap(const Message& message);
  Reply handle_device_info(const Message& message);
  Reply handle_region_info(const Message& message);
  Reply handle_irq_info(const Message& message);
  Reply handle_set_irqs(Message& message);
  Reply handle_region_read(const Message& message);
  Reply handle_region_write(const Message& message);
  Reply handle_reset(const Message& message);
  const VfioUserRegion& checked_region(uint32_t index, uint64_t offset, uint64_t count, uint32_t need_flag) const;
  void dma_access(bool is_read, uint64_t iova, uint8_t* data, size_t size);
  void dma_message_locked(bool is_read, uint64_t iova, uint8_t* data, size_t size);

  VfioUserEndpoint& endpoint_;
  std::string socket_path_;
  VfioUserServerOptions options_;
  std::map<uint32_t, VfioUserRegion> regions_;  // config space included
  uint32_t num_regions_ = 0;
  std::vector<uint32_t> irq_counts_;
  pcie::UniqueFd listen_fd_;
  pcie::UniqueFd wake_fd_;  // eventfd: stop(), and a DMA thread that queued client messages
  std::atomic<bool> stopped_{false};
  bool client_left_ = false;

  // The connection: only the serve thread replaces it; readers and writers hold io_mutex_.
  mutable std::mutex io_mutex_;
  std::unique_ptr<pcie::vfio_user::MessageSocket> client_;
  std::deque<Message> pending_;  // client commands that arrived while a DMA reply was awaited
  bool version_done_ = false;
  pcie::vfio_user::Capabilities client_capabilities_;
  uint16_t next_msg_id_ = 0;

  mutable std::mutex maps_mutex_;
  std::map<uint64_t, DmaMap> dma_maps_;  // by IOVA

  std::mutex irq_mutex_;
  std::vector<std::vector<pcie::UniqueFd>> irq_fds_;  // [irq index][vector]
};

}  // namespace irdma_sim::platform
