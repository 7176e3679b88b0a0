// Host memory in another process: the served device's DMA, as a TLM target, reaches the
// vfio-user client's memory through the server (its shared mappings, or DMA_READ/WRITE
// messages). An address the client did not map is an address error, counted.
#pragma once

#include <cstdint>

#include <systemc>
#include <tlm>
#include <tlm_utils/simple_target_socket.h>

#include "model/platform/vfio_user_server.h"

namespace irdma_sim::platform {

class RemoteMemory final : public sc_core::sc_module {
 public:
  tlm_utils::simple_target_socket<RemoteMemory> socket;

  RemoteMemory(sc_core::sc_module_name name, VfioUserServer& server);
  uint64_t access_errors() const { return access_errors_; }

 private:
  void b_transport(tlm::tlm_generic_payload& trans, sc_core::sc_time& delay);

  VfioUserServer& server_;
  uint64_t access_errors_ = 0;
};

}  // namespace irdma_sim::platform
