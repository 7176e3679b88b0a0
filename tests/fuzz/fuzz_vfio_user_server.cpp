// libFuzzer target: the vfio-user server's message handling (framing, every command's
// payload checks) over any byte stream a client may send. The input goes down a fresh
// connection to a server of the toy device (tests/cpp/driver/backends/vfio_user_toy_device.h), the client's
// side then shut; the server must serve it message by message and drop the client, never
// crash, hang or read past what it was sent. Served on this thread: no timing in the loop.
#include <sys/socket.h>
#include <unistd.h>

#include <cstdint>
#include <string>

#include "driver/backends/vfio_user/socket.h"
#include "tests/cpp/driver/backends/vfio_user_toy_device.h"
#include "tests/fuzz/fuzz_input.h"

namespace {

using namespace vfio_user_test;

struct Served {
  ToyDevice device;
  VfioUserServer server{device, socket_path("fuzz"), [] {
                          VfioUserServerOptions o;
                          o.message_timeout_ms = 100;  // the stream is whole before serving starts
                          return o;
                        }()};
  Served() { device.attach(&server); }
};

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  static Served* served = new Served;  // one server for the whole campaign, as in a long run
  VfioUserServer& server = served->server;
  pcie::UniqueFd client = pcie::vfio_user::connect_unix(server.socket_path(), 1000);
  if (!server.serve_one_message(1000) || !server.client_connected())
    irdma_sim::fuzz::broken("fuzz_vfio_user_server", "the server did not take the connection");
  size_t sent = 0;
  while (sent < size) {
    const ssize_t n = ::send(client.get(), data + sent, size - sent, MSG_NOSIGNAL | MSG_DONTWAIT);
    if (n <= 0) break;  // the server hung up on what came before: the rest goes nowhere
    sent += size_t(n);
  }
  ::shutdown(client.get(), SHUT_WR);
  // A message takes at least a header's 16 bytes: the server must be done in that many turns.
  const size_t turns = size / pcie::vfio_user::kHeaderSize + 4;
  for (size_t i = 0; i < turns && server.client_connected(); i++) server.serve_one_message(0);
  if (server.client_connected())
    irdma_sim::fuzz::broken("fuzz_vfio_user_server", "the server still holds a client whose stream ended");
  return 0;
}
