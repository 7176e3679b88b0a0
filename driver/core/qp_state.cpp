// ib_modify_qp_is_ok: the QP state machine's table (IB spec 11.2.4.2, as
// drivers/infiniband/core/verbs.c keeps it), for the RC and UD QPs this device makes.
#include "driver/core/ib_qp.h"

namespace ibcore {

namespace {

struct transition {
  bool valid = false;
  uint32_t req_rc = 0, req_ud = 0;  // needed besides IB_QP_STATE
  uint32_t opt_rc = 0, opt_ud = 0;  // taken
};

constexpr uint32_t kRcPath = IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_ACCESS_FLAGS;
constexpr uint32_t kUdPath = IB_QP_PKEY_INDEX | IB_QP_PORT | IB_QP_QKEY;

transition lookup(ib_qp_state cur, ib_qp_state next) {
  if (next == IB_QPS_RESET || next == IB_QPS_ERR) return {true};  // from anywhere, nothing else
  switch (cur) {
    case IB_QPS_RESET:
      if (next == IB_QPS_INIT) return {true, kRcPath, kUdPath};
      break;
    case IB_QPS_INIT:
      if (next == IB_QPS_INIT) return {true, 0, 0, kRcPath, kUdPath};
      if (next == IB_QPS_RTR)
        return {true,
                IB_QP_AV | IB_QP_PATH_MTU | IB_QP_DEST_QPN | IB_QP_RQ_PSN | IB_QP_MAX_DEST_RD_ATOMIC |
                    IB_QP_MIN_RNR_TIMER,
                0, IB_QP_ALT_PATH | IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX, IB_QP_PKEY_INDEX | IB_QP_QKEY};
      break;
    case IB_QPS_RTR:
      if (next == IB_QPS_RTS)
        return {true, IB_QP_SQ_PSN | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY | IB_QP_MAX_QP_RD_ATOMIC,
                IB_QP_SQ_PSN,
                IB_QP_CUR_STATE | IB_QP_ALT_PATH | IB_QP_ACCESS_FLAGS | IB_QP_MIN_RNR_TIMER | IB_QP_PATH_MIG_STATE,
                IB_QP_CUR_STATE | IB_QP_QKEY};
      break;
    case IB_QPS_RTS:
      if (next == IB_QPS_RTS)
        return {true, 0, 0,
                IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS | IB_QP_ALT_PATH | IB_QP_PATH_MIG_STATE | IB_QP_MIN_RNR_TIMER,
                IB_QP_CUR_STATE | IB_QP_QKEY};
      if (next == IB_QPS_SQD) return {true, 0, 0, IB_QP_EN_SQD_ASYNC_NOTIFY, IB_QP_EN_SQD_ASYNC_NOTIFY};
      break;
    case IB_QPS_SQD:
      if (next == IB_QPS_RTS)
        return {true, 0, 0,
                IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS | IB_QP_ALT_PATH | IB_QP_MIN_RNR_TIMER | IB_QP_PATH_MIG_STATE,
                IB_QP_CUR_STATE | IB_QP_QKEY};
      if (next == IB_QPS_SQD)
        return {true, 0, 0,
                IB_QP_PKEY_INDEX | IB_QP_QKEY | IB_QP_AV | IB_QP_MAX_QP_RD_ATOMIC | IB_QP_MAX_DEST_RD_ATOMIC |
                    IB_QP_CUR_STATE | IB_QP_ALT_PATH | IB_QP_ACCESS_FLAGS | IB_QP_PKEY_INDEX | IB_QP_MIN_RNR_TIMER |
                    IB_QP_PATH_MIG_STATE | IB_QP_TIMEOUT | IB_QP_RETRY_CNT | IB_QP_RNR_RETRY,
                IB_QP_PKEY_INDEX | IB_QP_QKEY};
      break;
    case IB_QPS_SQE:
      if (next == IB_QPS_RTS) return {true, 0, 0, IB_QP_CUR_STATE | IB_QP_ACCESS_FLAGS, IB_QP_CUR_STATE | IB_QP_QKEY};
      break;
    case IB_QPS_ERR: break;
  }
  return {};
}

}  // namespace

bool ib_modify_qp_is_ok(ib_qp_state cur, ib_qp_state next, ib_qp_type type, uint32_t mask) {
  if (cur > IB_QPS_ERR || next > IB_QPS_ERR) return false;
  // Without IB_QP_STATE nothing moves: the state stays, and so do the rules.
  if (!(mask & IB_QP_STATE)) next = cur;
  if ((mask & IB_QP_CUR_STATE) && cur != IB_QPS_RTS && cur != IB_QPS_SQD && cur != IB_QPS_SQE) return false;
  const transition t = lookup(cur, next);
  if (!t.valid) return false;
  const bool rc = type == IB_QPT_RC;
  const uint32_t req = rc ? t.req_rc : t.req_ud;
  const uint32_t opt = rc ? t.opt_rc : t.opt_ud;
  return (mask & req) == req && (mask & ~(req | opt | IB_QP_STATE)) == 0;
}

}  // namespace ibcore
