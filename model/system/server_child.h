// A device served over vfio-user from a child process of this one, for a run or a Session
// that drives it from here: forked before this process builds any SystemC world, told to
// die with its parent, and stopped and reaped when the ServerChild goes.
#pragma once

#include <sys/types.h>

#include <string>

#include "model/system/served_device.h"
#include "model/system/sim_config.h"

namespace irdma_sim::system {

class ServerChild {
 public:
  // Serves `cfg` at a fresh socket path under $TMPDIR (or /tmp), for one client.
  ServerChild(const SimConfig& cfg, ServeOptions options);
  ~ServerChild();
  ServerChild(const ServerChild&) = delete;
  ServerChild& operator=(const ServerChild&) = delete;

  const std::string& socket_path() const { return path_; }
  pid_t pid() const { return pid_; }
  // Waits up to `timeout_ms` for the server to end; "" when it ended well, else how it
  // ended ("killed by signal 9 (Killed)", "exit status 3"). Throws std::runtime_error on timeout.
  std::string wait(int timeout_ms);

 private:
  std::string path_;
  pid_t pid_ = -1;
};

}  // namespace irdma_sim::system
