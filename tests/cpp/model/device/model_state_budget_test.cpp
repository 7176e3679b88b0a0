// The device model's state per idle QP and per idle CQ, beyond their rings and host
// contexts (those live in host memory): the context in its engine's hash table (the node
// with malloc's header, and a bucket at load factor 1), and for a CQ its ring state in the
// CQ writer's table and the count of QP queues completing on it. Doorbell queues, retry timers and fetch windows exist only while a QP
// has work. Budget: 256 bytes each.
#include <gtest/gtest.h>

#include <cstdint>
#include <utility>

#include "model/device/cq_engine.h"
#include "model/device/cq_writer.h"
#include "model/device/qp_engine.h"

namespace {

using irdma_sim::device::CqContext;
using irdma_sim::device::QpContext;
using irdma_sim::device::TlmCqWriter;

// glibc: the request plus its 8-byte header, in 16-byte steps, 32 bytes at least.
constexpr size_t malloc_chunk(size_t bytes) { return bytes + 8 <= 32 ? 32 : (bytes + 8 + 15) / 16 * 16; }
// libstdc++'s unordered_map node for an integer key: the next pointer and the value (no
// cached hash), plus one bucket pointer.
template <typename Value>
constexpr size_t hash_entry() {
  return malloc_chunk(sizeof(void*) + sizeof(std::pair<const uint32_t, Value>)) + sizeof(void*);
}

TEST(ModelState, AnIdleQpAndAnIdleCqStayWithin256Bytes) {
  const size_t qp = hash_entry<QpContext>();
  const size_t cq = hash_entry<CqContext>() + hash_entry<TlmCqWriter::Cq>() + hash_entry<uint32_t>();
  RecordProperty("qp_bytes", int(qp));
  RecordProperty("cq_bytes", int(cq));
  std::printf("model state: idle QP %zu bytes, idle CQ %zu bytes\n", qp, cq);
  EXPECT_LE(qp, 256u);
  EXPECT_LE(cq, 256u);
}

}  // namespace
