// A device served over vfio-user from a child process of this one, for a run or a Session
// that drives it from here: forked before this process builds any SystemC world, told to
// die with its parent, and stopped and reaped when the ServerChild goes.
#pragma once

#include <sys/types.h>

#include <optional>
#include <string>

#include "model/system/served_device.h"
#include "model/testbench/backend.h"
#include "model/testbench/sim_config.h"

namespace irdma_sim::system {

class ServerChild final : public testbench::ServerProcess {
 public:
  // Serves `cfg` for one client at `socket_path`, or at a fresh path under $TMPDIR (or
  // /tmp) when it is empty.
  ServerChild(const testbench::SimConfig& cfg, ServeOptions options, const std::string& socket_path = "");
  ~ServerChild();
  ServerChild(const ServerChild&) = delete;
  ServerChild& operator=(const ServerChild&) = delete;

  const std::string& socket_path() const { return path_; }
  pid_t pid() const { return pid_; }
  // Whether the server has ended: "" when it ended well, else how it ended ("killed by
  // signal 9 (Killed)", "exit status 3"); nothing while it runs.
  std::optional<std::string> poll();
  // poll() for up to `timeout_ms`; throws std::runtime_error when the server still runs.
  std::string wait(int timeout_ms) override;

 private:
  std::string path_;
  pid_t pid_ = -1;
};

}  // namespace irdma_sim::system
