// The sysfs a uverbs device shows user space (class/infiniband and class/infiniband_verbs),
// written as files under a root that libibverbs is pointed at with SYSFS_PATH: what it reads
// to find the device, match its provider and answer ibv_query_gid.
#pragma once

#include <string>

#include "driver/core/ib_device.h"

namespace irdma_sim::system {

// Writes the tree of `dev` as ibdev `name` behind uverbs0 under `root` (created, replaced).
// Throws std::runtime_error when a file cannot be written.
void write_uverbs_sysfs(const std::string& root, ibcore::ib_device& dev, const std::string& name);

}  // namespace irdma_sim::system
