// Verbs as rdma-core's pyverbs offers them, on a HostSession's simulated system: memory
// regions over real host buffers registered with the keys the device gives them, QPs made
// from their attributes and moved through their states, work requests with the consumer's
// wr_ids and scatter-gather lists. Every call runs the driver on host CPU 0 and simulates
// until it returns; errors are VerbsError with Linux's errno.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <vector>

#include "driver/core/ib_qp.h"
#include "driver/hal/dma.h"
#include "model/testbench/host_session.h"

namespace irdma {
struct irdma_qp;
struct irdma_mr;
struct irdma_pd;
}  // namespace irdma

namespace irdma_sim::testbench {

// ib_qp_state, as Linux numbers it.
enum class QpState : int { reset = 0, init = 1, rtr = 2, rts = 3, err = 6 };

class RawVerbs {
 public:
  explicit RawVerbs(HostSession& session);
  ~RawVerbs();
  RawVerbs(const RawVerbs&) = delete;
  RawVerbs& operator=(const RawVerbs&) = delete;
  // Destroys its QPs and frees its MRs, before the session frees the CQs they use.
  void close();

  // Protection domains (ib_alloc_pd): a QP reaches only its own PD's memory keys, as the
  // device checks. Returns the PD's number.
  uint32_t alloc_pd();
  // EBUSY while an MR or a QP still belongs to it.
  void dealloc_pd(uint32_t pd);

  struct Mr {
    uint32_t handle = 0, pd = 0, lkey = 0, rkey = 0;
    uint64_t addr = 0, length = 0;  // the device address of its buffer
    int access = 0;                 // ib_access_flags
  };
  // A buffer of `length` zeroed bytes in host memory, registered (ib_alloc_mr,
  // ib_map_mr_sg and a REG_MR work request, as a kernel ULP does) with `access`.
  Mr reg_mr(uint32_t pd, uint64_t length, int access);
  void dereg_mr(uint32_t mr);
  void write_mr(uint32_t mr, uint64_t offset, const std::string& data);
  std::string read_mr(uint32_t mr, uint64_t offset, uint64_t length);

  struct QpInit {
    uint32_t pd = 0, send_cq = 0, recv_cq = 0;
    ibcore::ib_qp_cap cap;
    ibcore::ib_qp_type type = ibcore::IB_QPT_RC;
  };
  // Returns the QP's number; `init.cap` becomes what the driver made of it. The QP starts in
  // RESET.
  uint32_t create_qp(QpInit& init);
  // RESET -> INIT -> RTR (`dest_qp`, and `qkey` for UD) -> RTS; any state -> ERR (its queues
  // flush). Other moves are EINVAL, a move back to RESET included (not offered here).
  void modify_qp(uint32_t qp, QpState to, uint32_t dest_qp = 0, uint32_t qkey = 0);
  QpState qp_state(uint32_t qp) const;
  void destroy_qp(uint32_t qp);

  // One work request per entry, posted as a chain; on an error nothing after the bad one
  // is posted, and VerbsError names its index.
  void post_send(uint32_t qp, std::vector<ibcore::ib_send_wr> wrs, const std::vector<std::vector<ibcore::ib_sge>>& sgls);
  void post_recv(uint32_t qp, std::vector<ibcore::ib_recv_wr> wrs, const std::vector<std::vector<ibcore::ib_sge>>& sgls);

 private:
  struct Pd {
    irdma::irdma_pd* pd = nullptr;
    uint32_t users = 0;
  };
  struct MrState {
    Mr info;
    hal::DmaBuffer buf;
    irdma::irdma_mr* mr = nullptr;
  };
  struct QpEntry {
    irdma::irdma_qp* qp = nullptr;
    uint32_t pd = 0;
    QpState state = QpState::reset;
    uint32_t dest = 0, qkey = 0;
  };
  Pd& pd(uint32_t handle);
  MrState& mr(uint32_t handle);
  QpEntry& qp(uint32_t qp_num);
  const QpEntry& qp(uint32_t qp_num) const;
  // Posts a REG_MR of `m` on the session's registration QP and waits for its completion.
  void register_region(MrState& m);
  void ensure_registration_qp();
  // Destroys the registration QP (on host CPU 0), so the next registration makes a new one.
  void drop_registration_qp();

  HostSession& session_;
  std::map<uint32_t, Pd> pds_;
  std::map<uint32_t, MrState> mrs_;
  uint32_t next_mr_ = 1;
  std::map<uint32_t, QpEntry> qps_;
  uint32_t reg_cq_ = 0;  // where REG_MR work requests go and complete
  irdma::irdma_qp* reg_qp_ = nullptr;
  bool closed_ = false;
};

}  // namespace irdma_sim::testbench
