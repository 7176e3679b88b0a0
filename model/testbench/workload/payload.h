// What the workload's messages hold and how long they are, derived from the seed and a
// message's number instead of stored, so a receiver regenerates the bytes it checks.
#pragma once

#include <cstdint>

#include "model/testbench/scenario.h"

namespace irdma_sim::testbench {

uint64_t splitmix64(uint64_t x);

// The bytes of message `key`: regenerated on receipt instead of stored.
void fill_payload(uint8_t* dst, uint32_t len, uint64_t key);
bool payload_equals(const uint8_t* buf, uint32_t len, uint64_t key);

// The key of message `seq` sent by QP `qp_index`.
uint64_t payload_key(uint64_t seed, unsigned qp_index, uint64_t seq);
// The bytes a QP's window offers to READs: fixed at setup, one key per slot.
uint64_t read_source_key(uint64_t seed, unsigned owner, uint32_t slot);

// The length of message `seq` of QP `qp_index`, within the traffic's min_bytes..max_bytes.
uint32_t message_size(const TrafficSpec& t, uint64_t seed, unsigned qp_index, uint64_t seq);

}  // namespace irdma_sim::testbench
