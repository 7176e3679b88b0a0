// Functional coverage: what a run exercised, counted in bins over the events the device and
// the host saw (the cross product of each group's axes). The catalogue of groups is fixed
// (coverage.cpp), with the bins no scenario can reach named and the reason given, so that
// a run's and a sweep's percentages count only what can be reached.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <initializer_list>
#include <vector>

namespace irdma_sim::trace {

enum class Cover : uint8_t {
  sq_completion,  // host: a send-queue work request's completion
  rq_completion,  // host: a receive's completion
  wc_status,      // host: every completion status the driver reports, per device generation
  pool_get,       // host: ib_cq_pool_get
  driver_path,    // host: the driver's recovery and bookkeeping paths a run took
  cqe_write,      // device: a CQE written into a ring
  cq_ring,        // device: what happened to a CQ's ring
  cq_resize,      // device: MODIFY_CQ
  cq_arm,         // device: an arm doorbell and what it led to
  ceq,            // device: CEQs and their interrupts
  cqp_command,    // device: control QP commands
};
inline constexpr size_t kCoverGroups = 11;

struct CoverAxis {
  const char* name;
  std::vector<const char*> values;
};

// Bins no scenario can reach; -1 in `bin` stands for every value of that axis.
struct CoverUnreachable {
  std::vector<int> bin;
  const char* why;
};

struct CoverGroup {
  const char* name;
  const char* what;
  bool device;  // seen by the device model (absent when the device is in another process)
  std::vector<CoverAxis> axes;
  std::vector<CoverUnreachable> unreachable;

  size_t bins() const;
  // The value index on each axis of flat bin `index`.
  std::vector<unsigned> values_of(size_t index) const;
  bool reachable(size_t index) const;
  // The reason bin `index` cannot be reached, or null.
  const char* unreachable_because(size_t index) const;
};

const std::array<CoverGroup, kCoverGroups>& cover_groups();
const CoverGroup& cover_group(Cover g);

class Coverage {
 public:
  Coverage();
  // One hit of the bin whose value on each axis is `at` (in axis order). A value past its
  // axis is a model bug: std::logic_error.
  void hit(Cover g, std::initializer_list<unsigned> at, uint64_t times = 1);
  const std::vector<uint64_t>& hits(Cover g) const { return hits_[size_t(g)]; }
  void add(const Coverage& other);

 private:
  static constexpr size_t kMaxAxes = 4;
  // Each group's number of axes and their sizes, copied from the catalogue: a hit is counted
  // on every event the device sees, and the catalogue's vectors cost a walk each time.
  struct Shape {
    const char* name;
    size_t axes;
    std::array<uint32_t, kMaxAxes> sizes;
  };
  std::array<Shape, kCoverGroups> shapes_;
  std::array<std::vector<uint64_t>, kCoverGroups> hits_;
};

}  // namespace irdma_sim::trace
