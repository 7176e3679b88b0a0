// The uverbs kernel half against the simulated device, fed the very bytes Debian's
// libibverbs 44.0 and its irdma provider write: what each command answers, and what a
// malformed, stale or misplaced one gets.
#include <gtest/gtest.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <unistd.h>
#include <map>
#include <vector>

#include "driver/core/uverbs/uverbs_file.h"
#include "driver/irdma/irdma_abi.h"
#include "model/system/simulation.h"
#include "model/system/uverbs_process.h"

namespace {

using namespace ibcore::uverbs;
using irdma_sim::system::Simulation;

constexpr uint64_t kResponse = 0x7f00'0000'1000;  // where the caller's reply buffer is

// An event file that keeps what is queued on it, in order; the reader reads from the front.
struct FakeEventFile : ib_uverbs_event_file {
  std::vector<std::vector<uint8_t>> events;
  void queue_event(const void* desc, size_t len) override {
    events.emplace_back(static_cast<const uint8_t*>(desc), static_cast<const uint8_t*>(desc) + len);
  }
  uint32_t withdraw_events(uint64_t user_handle) override {
    uint32_t n = 0;
    for (auto it = events.begin(); it != events.end();) {
      uint64_t h;
      std::memcpy(&h, it->data(), 8);
      if (h == user_handle) {
        it = events.erase(it);
        n++;
      } else {
        ++it;
      }
    }
    return n;
  }
};

// A caller whose memory is a map of the bytes written to it; what it registers is this
// test's own memory, pinned as the device host pins an application's.
struct FakeUser : ib_uverbs_user {
  explicit FakeUser(irdma_sim::platform::HostMemory& memory) : process(::getpid(), memory) {}
  std::map<uint64_t, uint8_t> mem;
  std::vector<uint64_t> fd_addrs;
  std::vector<std::shared_ptr<FakeEventFile>> files;  // installed, numbered from 100
  irdma_sim::system::UverbsProcess process;
  bool faults = false;
  bool out_of_files = false;

  std::shared_ptr<ib_uverbs_event_file> fget_event_file(int fd) override {
    return fd >= 100 && size_t(fd - 100) < files.size() ? files[size_t(fd - 100)] : nullptr;
  }
  ibcore::ib_user_mm& mm() override { return process; }

  bool copy_to_user(uint64_t addr, const void* src, size_t len) override {
    if (faults) return false;
    for (size_t i = 0; i < len; i++) mem[addr + i] = static_cast<const uint8_t*>(src)[i];
    return true;
  }
  std::shared_ptr<ib_uverbs_event_file> install_event_file(uint64_t fd_addr) override {
    if (out_of_files) return nullptr;
    fd_addrs.push_back(fd_addr);
    files.push_back(std::make_shared<FakeEventFile>());
    return files.back();
  }
  template <typename T>
  T read(uint64_t addr) const {
    uint8_t b[sizeof(T)] = {};
    for (size_t i = 0; i < sizeof(T); i++) {
      const auto it = mem.find(addr + i);
      if (it != mem.end()) b[i] = it->second;
    }
    T v;
    std::memcpy(&v, b, sizeof v);
    return v;
  }
  bool written(uint64_t addr) const { return mem.count(addr); }
};

// A write's header as libibverbs builds it; put() fills the request after it.
std::vector<uint8_t> cmd(uint32_t command, uint16_t in_words, uint16_t out_words) {
  std::vector<uint8_t> b(8);
  std::memcpy(b.data(), &command, 4);
  std::memcpy(b.data() + 4, &in_words, 2);
  std::memcpy(b.data() + 6, &out_words, 2);
  return b;
}

template <typename T>
void put(std::vector<uint8_t>& b, size_t off, T v) {
  if (b.size() < off + sizeof v) b.resize(off + sizeof v);
  std::memcpy(b.data() + off, &v, sizeof v);
}

struct UverbsFile : ::testing::Test {
  Simulation sim{irdma_sim::testbench::SimConfig{}};
  FakeUser user{sim.memory()};
  std::unique_ptr<ib_uverbs_file> file = std::make_unique<ib_uverbs_file>(sim.driver());

  long write(const std::vector<uint8_t>& b) {
    long ret = 0;
    sim.run_on_host([&] { ret = file->write(b.data(), b.size(), user); });
    return ret;
  }
  // GET_CONTEXT: 24 bytes {0, 6, 18}, then response, rsvd32 and userspace_ver.
  std::vector<uint8_t> get_context(uint8_t userspace_ver = irdma::IRDMA_ABI_VER) {
    std::vector<uint8_t> b = cmd(IB_USER_VERBS_CMD_GET_CONTEXT, 6, 18);
    put(b, 8, kResponse);
    put(b, 16, uint32_t(0xdeadbeef));  // the provider leaves rsvd32 uninitialised
    put(b, 20, userspace_ver);
    b.resize(24);
    return b;
  }
  std::vector<uint8_t> alloc_pd() {
    std::vector<uint8_t> b = cmd(IB_USER_VERBS_CMD_ALLOC_PD, 4, 3);
    put(b, 8, kResponse);
    return b;
  }
  std::vector<uint8_t> dealloc_pd(uint32_t handle) {
    std::vector<uint8_t> b = cmd(IB_USER_VERBS_CMD_DEALLOC_PD, 3, 0);
    put(b, 8, handle);
    return b;
  }
  // REG_MR as the provider sends it: 56 bytes {9, 14, 3}, the irdma reg type after the core.
  std::vector<uint8_t> reg_mr(const void* start, uint64_t len, uint32_t pd, uint32_t access, uint16_t type,
                              uint16_t cq_pages = 0, uint16_t rq_pages = 0, uint16_t sq_pages = 0) {
    std::vector<uint8_t> b = cmd(IB_USER_VERBS_CMD_REG_MR, 14, 3);
    put(b, 8, kResponse);
    put(b, 16, uint64_t(reinterpret_cast<uintptr_t>(start)));
    put(b, 24, len);
    put(b, 32, uint64_t(reinterpret_cast<uintptr_t>(start)));
    put(b, 40, pd);
    put(b, 44, access);
    put(b, 48, irdma::irdma_mem_reg_req{type, cq_pages, rq_pages, sq_pages});
    return b;
  }
  std::vector<uint8_t> handle_cmd(uint32_t command, uint32_t handle, uint16_t out_words = 0) {
    std::vector<uint8_t> b = cmd(command, out_words ? 6 : 3, out_words);
    if (out_words) {
      put(b, 8, kResponse);
      put(b, 16, handle);
      b.resize(24);
    } else {
      put(b, 8, handle);
    }
    return b;
  }
  // CREATE_CQ: 56 bytes {18, 14, 4}, the ring and shadow area after the core.
  std::vector<uint8_t> create_cq(uint32_t cqe, const void* ring, const void* shadow, uint32_t vector = 0) {
    std::vector<uint8_t> b = cmd(IB_USER_VERBS_CMD_CREATE_CQ, 14, 4);
    put(b, 8, kResponse);
    put(b, 16, uint64_t(0xC0FFEE));
    put(b, 24, cqe);
    put(b, 28, vector);
    put(b, 32, int32_t(-1));
    put(b, 36, uint32_t(0));
    put(b, 40, uint64_t(reinterpret_cast<uintptr_t>(ring)));
    put(b, 48, uint64_t(reinterpret_cast<uintptr_t>(shadow)));
    return b;
  }
  // CREATE_QP: 80 bytes {24, 20, 14}, as the provider sizes a QP of 16 WRs and 1 SGE.
  std::vector<uint8_t> create_qp(uint32_t pd, uint32_t cq, const void* bufs, uint8_t type = 2) {
    std::vector<uint8_t> b = cmd(IB_USER_VERBS_CMD_CREATE_QP, 20, 14);
    put(b, 8, kResponse);
    put(b, 16, uint64_t(0xBEEF));
    put(b, 24, pd);
    put(b, 28, cq);
    put(b, 32, cq);
    put(b, 36, uint32_t(0));
    put(b, 40, uint32_t(256));  // max_send_wr: 512 quanta of 2
    put(b, 44, uint32_t(32));   // max_recv_wr
    put(b, 48, uint32_t(1));
    put(b, 52, uint32_t(1));
    put(b, 56, uint32_t(0));
    put(b, 60, uint8_t(0));
    put(b, 61, type);
    put(b, 64, uint64_t(reinterpret_cast<uintptr_t>(bufs)));
    put(b, 72, uint64_t(0x1234'5678));
    return b;
  }
  std::vector<uint8_t> modify_qp(uint32_t qp, uint32_t mask, const ib_uverbs_modify_qp& m) {
    std::vector<uint8_t> b = cmd(IB_USER_VERBS_CMD_MODIFY_QP, 30, 0);
    ib_uverbs_modify_qp cmd_body = m;
    cmd_body.qp_handle = qp;
    cmd_body.attr_mask = mask;
    put(b, 8, cmd_body);
    return b;
  }
};

// Page-aligned memory of this test's own, which the kernel half pins as an application's.
struct UserBuffer {
  explicit UserBuffer(size_t pages) : bytes(pages * 4096), p(std::aligned_alloc(4096, bytes)) {
    std::memset(p, 0, bytes);
  }
  ~UserBuffer() { std::free(p); }
  size_t bytes;
  void* p;
  uint8_t* at(size_t off) const { return static_cast<uint8_t*>(p) + off; }
};

TEST_F(UverbsFile, GetContextAnswersWhatTheProviderNeedsOfAGen2Device) {
  ASSERT_EQ(write(get_context()), 24);
  ASSERT_EQ(user.fd_addrs, std::vector<uint64_t>{kResponse}) << "the async fd is the reply's first field";
  EXPECT_EQ(user.read<uint32_t>(kResponse + 4), sim.driver().num_comp_vectors);
  irdma::irdma_alloc_ucontext_resp r = user.read<irdma::irdma_alloc_ucontext_resp>(kResponse + 8);
  EXPECT_EQ(r.hw_rev, 2) << "0 would put the provider in GEN_1's legacy mode";
  EXPECT_EQ(r.kernel_ver, 5);
  EXPECT_EQ(r.feature_flags, irdma::IRDMA_FEATURE_RTS_AE | irdma::IRDMA_FEATURE_CQ_RESIZE);
  EXPECT_EQ(r.db_mmap_key % 4096, 0u);
  EXPECT_NE(r.db_mmap_key, 0u);
  EXPECT_EQ(r.max_hw_wq_frags, 13u);
  EXPECT_EQ(r.max_hw_read_sges, 13u);
  EXPECT_EQ(r.max_hw_inline, 101u);
  EXPECT_EQ(r.max_hw_wq_quanta, 32768u);
  EXPECT_EQ(r.max_hw_rq_quanta, 32768u);
  EXPECT_EQ(r.min_hw_cq_size, 1u);
  EXPECT_EQ(r.max_hw_cq_size, uint32_t(sim.driver().caps().max_cqe)) << "what QUERY_DEVICE says, as Linux says it";
  EXPECT_EQ(r.max_hw_sq_chunk, 8);

  ibcore::ib_mmap_range db;
  EXPECT_EQ(file->mmap(r.db_mmap_key, 4096, &db), 0);
  EXPECT_EQ(db.bar, 0u);
  EXPECT_EQ(db.offset, 0x7F0000u) << "8 MiB of PE doorbells, the page 64 KiB below their end";
  EXPECT_EQ(file->mmap(r.db_mmap_key + 4096, 4096, &db), -EINVAL);
  EXPECT_EQ(file->mmap(r.db_mmap_key, 8192, &db), -EINVAL);

  EXPECT_EQ(write(get_context()), -EINVAL) << "one context per open";
}

TEST_F(UverbsFile, AContextOfAnUnknownAbiOrWithoutRoomIsRefusedAndNothingIsMade) {
  EXPECT_EQ(write(get_context(3)), -EINVAL);
  EXPECT_EQ(write(get_context(6)), -EINVAL);
  std::vector<uint8_t> short_reply = get_context();
  put(short_reply, 6, uint16_t(17));  // one word short of the driver's 64 bytes
  EXPECT_EQ(write(short_reply), -EINVAL);
  user.out_of_files = true;
  EXPECT_EQ(write(get_context()), -EMFILE);
  user.out_of_files = false;
  user.faults = true;
  EXPECT_EQ(write(get_context()), -EFAULT);
  user.faults = false;
  EXPECT_EQ(write(get_context(4)), 24) << "the provider retries with ABI 4";
}

TEST_F(UverbsFile, EveryOtherCommandNeedsAContextFirst) {
  EXPECT_EQ(write(alloc_pd()), -EINVAL);
  ibcore::ib_mmap_range db;
  EXPECT_EQ(file->mmap(4096, 4096, &db), -EINVAL);
}

TEST_F(UverbsFile, QueryDeviceReportsTheDeviceAsProbed) {
  ASSERT_EQ(write(get_context()), 24);
  std::vector<uint8_t> q = cmd(IB_USER_VERBS_CMD_QUERY_DEVICE, 4, 44);
  put(q, 8, kResponse);
  ASSERT_EQ(write(q), 16);
  const auto r = user.read<ib_uverbs_query_device_resp>(kResponse);
  const irdma::irdma_device_caps& caps = sim.driver().caps();
  EXPECT_EQ(r.vendor_id, 0x1234u);
  EXPECT_EQ(r.vendor_part_id, 0x1D02u);
  EXPECT_EQ(r.max_qp, caps.max_qp);
  EXPECT_EQ(r.max_cq, caps.max_cq);
  EXPECT_EQ(r.max_cqe, uint32_t(caps.max_cqe));
  EXPECT_EQ(r.max_mr, caps.max_stags - 1);
  EXPECT_EQ(r.max_sge, 13u);
  EXPECT_EQ(r.max_qp_wr, 4063u);
  EXPECT_EQ(r.phys_port_cnt, 1);
  EXPECT_EQ(r.atomic_cap, 0u) << "GEN_2 has no atomics";
  EXPECT_EQ(r.fw_ver, 1ull << 32) << "firmware 1.0, major in the upper half";
  // The MAC 00:1b:21:a0:c0:de comes from the Device Serial Number; the GUID is its EUI-64.
  const uint8_t guid[8] = {0x02, 0x1b, 0x21, 0xff, 0xfe, 0xa0, 0xc0, 0xde};
  EXPECT_EQ(std::memcmp(&r.node_guid, guid, 8), 0);
  const uint8_t image[8] = {0x00, 0x1b, 0x21, 0xa0, 0xc0, 0xde, 0, 0};
  EXPECT_EQ(std::memcmp(&r.sys_image_guid, image, 8), 0);
}

TEST_F(UverbsFile, ExtendedQueryDeviceSaysHowMuchItWrote) {
  ASSERT_EQ(write(get_context()), 24);
  // 32 bytes {0x80000001, 1, 38}: the extended header, then comp_mask and reserved.
  std::vector<uint8_t> q = cmd(IB_USER_VERBS_CMD_FLAG_EXTENDED | IB_USER_VERBS_EX_CMD_QUERY_DEVICE, 1, 38);
  put(q, 8, kResponse);
  put(q, 24, uint64_t(0));
  ASSERT_EQ(write(q), 32);
  EXPECT_EQ(user.read<uint32_t>(kResponse + offsetof(ib_uverbs_ex_query_device_resp, response_length)), 304u);
  EXPECT_EQ(user.read<uint32_t>(kResponse + 76), uint32_t(sim.driver().caps().max_cqe)) << "base.max_cqe";

  put(q, 6, uint16_t(23));  // an older caller's 184 bytes
  user.mem.clear();
  ASSERT_EQ(write(q), 32);
  EXPECT_EQ(user.read<uint32_t>(kResponse + 180), 184u);
  EXPECT_FALSE(user.written(kResponse + 184)) << "nothing past the caller's room";

  put(q, 6, uint16_t(22));
  EXPECT_EQ(write(q), -ENOSPC) << "too little room for the fields every caller reads";
  put(q, 6, uint16_t(38));
  put(q, 24, uint32_t(1));
  EXPECT_EQ(write(q), -EINVAL) << "a comp_mask this ABI does not know";
  put(q, 24, uint32_t(0));
  put(q, 20, uint32_t(1));
  EXPECT_EQ(write(q), -EINVAL) << "cmd_hdr_reserved";
  put(q, 20, uint32_t(0));
  put(q, 8, uint64_t(0));
  EXPECT_EQ(write(q), -EINVAL) << "room for a reply but nowhere to put it";
}

TEST_F(UverbsFile, QueryPortReportsAnActiveRoceV2Port) {
  ASSERT_EQ(write(get_context()), 24);
  std::vector<uint8_t> q = cmd(IB_USER_VERBS_CMD_QUERY_PORT, 6, 10);
  put(q, 8, kResponse);
  put(q, 16, uint8_t(1));
  q.resize(24);
  ASSERT_EQ(write(q), 24);
  const auto r = user.read<ib_uverbs_query_port_resp>(kResponse);
  EXPECT_EQ(r.state, 4) << "ACTIVE";
  EXPECT_EQ(r.link_layer, 2) << "Ethernet";
  EXPECT_EQ(r.gid_tbl_len, 32u);
  EXPECT_EQ(r.pkey_tbl_len, 1);
  EXPECT_EQ(r.active_mtu, 3) << "1024 bytes, as Ethernet's 1500 carries";
  EXPECT_EQ(r.phys_state, 5) << "LINK_UP";
  put(q, 16, uint8_t(2));
  EXPECT_EQ(write(q), -EINVAL) << "one port";
}

TEST_F(UverbsFile, PdHandlesAreTheFilesOwnAndOutliveNoClose) {
  ASSERT_EQ(write(get_context()), 24);
  ASSERT_EQ(write(alloc_pd()), 16);
  const uint32_t handle = user.read<uint32_t>(kResponse);
  EXPECT_NE(user.read<uint32_t>(kResponse + 4), 0u) << "PD 0 is the kernel's";
  EXPECT_TRUE(sim.driver().in_use());
  EXPECT_EQ(write(dealloc_pd(handle + 7)), -EINVAL) << "a handle never given";
  EXPECT_EQ(write(dealloc_pd(handle)), 12);
  EXPECT_EQ(write(dealloc_pd(handle)), -EINVAL) << "a stale handle";
  EXPECT_FALSE(sim.driver().in_use());

  ASSERT_EQ(write(alloc_pd()), 16);
  ASSERT_EQ(write(alloc_pd()), 16);
  EXPECT_TRUE(sim.driver().in_use());
  sim.run_on_host([&] { file.reset(); });
  EXPECT_FALSE(sim.driver().in_use()) << "closing the file frees what it made";
}

TEST_F(UverbsFile, ACompletionChannelIsAFileOfItsOwn) {
  ASSERT_EQ(write(get_context()), 24);
  std::vector<uint8_t> c = cmd(IB_USER_VERBS_CMD_CREATE_COMP_CHANNEL, 4, 1);
  put(c, 8, kResponse + 256);
  ASSERT_EQ(write(c), 16);
  ASSERT_EQ(user.fd_addrs.size(), 2u);
  EXPECT_EQ(user.fd_addrs[1], kResponse + 256) << "its number is the reply";
  user.out_of_files = true;
  EXPECT_EQ(write(c), -EMFILE);
  put(c, 6, uint16_t(0));
  EXPECT_EQ(write(c), -ENOSPC);
}

TEST_F(UverbsFile, MalformedWritesAreRefusedAndChangeNothing) {
  ASSERT_EQ(write(get_context()), 24);
  EXPECT_EQ(write({1, 0, 0}), -EINVAL) << "shorter than a header";
  std::vector<uint8_t> pd = alloc_pd();
  put(pd, 4, uint16_t(5));
  EXPECT_EQ(write(pd), -EINVAL) << "in_words not the write's length";
  pd = alloc_pd();
  put(pd, 6, uint16_t(0));
  EXPECT_EQ(write(pd), -ENOSPC) << "no room for the reply";
  pd = cmd(IB_USER_VERBS_CMD_ALLOC_PD, 2, 3);
  EXPECT_EQ(write(pd), -ENOSPC) << "no room for the response address";
  EXPECT_EQ(write(cmd(0x40000003, 2, 0)), -EINVAL) << "bits outside command and EX flag";
  EXPECT_EQ(write(cmd(40, 2, 0)), -EOPNOTSUPP) << "OPEN_QP";
  user.faults = true;
  EXPECT_EQ(write(alloc_pd()), -EFAULT);
  user.faults = false;
  EXPECT_FALSE(sim.driver().in_use()) << "the PD of a reply that could not be written is freed";
}

// The doorbell page user space maps: its +64 arms a CQ as the CQARM register does.
TEST(UserDoorbellPage, ItsCqArmIsTheCqArmRegisters) {
  Simulation sim{irdma_sim::testbench::SimConfig{}};
  const uint64_t before = sim.device().counters().cq_arms;
  sim.run_on_host([&] { sim.driver().hw().bar0.write32(sim.driver().caps().db_addr_offset + 64, 3); });
  EXPECT_EQ(sim.device().counters().cq_arms, before + 1);
}

}  // namespace

// A CQ and a QP whose rings live in this process's memory, as the provider makes them: the
// memory registered with its irdma type first, found again by address.
TEST_F(UverbsFile, UserCqAndQpAreMadeInRegisteredMemoryAndCheckedAsAKernelChecksThem) {
  ASSERT_EQ(write(get_context()), 24);
  ASSERT_EQ(write(alloc_pd()), 16);
  const uint32_t pd = user.read<uint32_t>(kResponse);
  UserBuffer ring(2), shadow(1), qp_mem(8 + 1 + 1), data(1);

  // A CQ naming memory nobody registered: EPROTO, as irdma answers.
  EXPECT_EQ(write(create_cq(64, ring.p, shadow.p)), -EPROTO);
  ASSERT_EQ(write(reg_mr(ring.p, ring.bytes, pd, 1, irdma::IRDMA_MEMREG_TYPE_CQ, 2)), 56);
  const uint32_t ring_mr = user.read<uint32_t>(kResponse);
  EXPECT_EQ(user.read<uint32_t>(kResponse + 4), 0u) << "QP and CQ memory gets no key";
  ASSERT_EQ(write(reg_mr(shadow.p, 64, pd, 1, irdma::IRDMA_MEMREG_TYPE_CQ, 1)), 56);
  // A ring larger than its registered pages would let the device write past them.
  EXPECT_EQ(write(create_cq(1000, ring.p, shadow.p)), -EINVAL);
  ASSERT_EQ(write(reg_mr(ring.p, ring.bytes, pd, 1, irdma::IRDMA_MEMREG_TYPE_CQ, 2)), 56);
  ASSERT_EQ(write(reg_mr(shadow.p, 64, pd, 1, irdma::IRDMA_MEMREG_TYPE_CQ, 1)), 56);
  EXPECT_EQ(write(create_cq(64, ring.p, shadow.p, 9)), -EINVAL) << "no such vector";
  ASSERT_EQ(write(create_cq(64, ring.p, shadow.p)), 56);
  const uint32_t cq = user.read<uint32_t>(kResponse);
  EXPECT_EQ(user.read<uint32_t>(kResponse + 4), 64u);
  const auto cq_resp = user.read<irdma::irdma_create_cq_resp>(kResponse + 8);
  EXPECT_EQ(cq_resp.cq_size, 64u);
  EXPECT_GE(cq_resp.cq_id, 3u) << "0 is the CCQ's";

  // A QP naming memory nobody registered: ENODATA; then one in its registered pages.
  EXPECT_EQ(write(create_qp(pd, cq, qp_mem.p)), -ENODATA);
  ASSERT_EQ(write(reg_mr(qp_mem.p, qp_mem.bytes, pd, 1, irdma::IRDMA_MEMREG_TYPE_QP, 0, 1, 8)), 56);
  const uint32_t qp_mr = user.read<uint32_t>(kResponse);
  EXPECT_EQ(write(create_qp(pd, cq + 7, qp_mem.p)), -EINVAL) << "a stale CQ handle";
  ASSERT_EQ(write(create_qp(pd, cq, qp_mem.p)), 80);
  const uint32_t qp = user.read<uint32_t>(kResponse);
  const uint32_t qpn = user.read<uint32_t>(kResponse + 4);
  const auto qp_resp = user.read<irdma::irdma_create_qp_resp>(kResponse + 32);
  EXPECT_EQ(qp_resp.qp_id, qpn);
  EXPECT_EQ(qp_resp.actual_sq_size, 256u) << "the provider's sizes come back as sent";
  EXPECT_EQ(qp_resp.actual_rq_size, 32u);
  EXPECT_EQ(qp_resp.qp_caps, 7u) << "RC: WRITE_IMM | SEND_IMM | ROCE, no push mode";
  EXPECT_EQ(qp_resp.lsmm, 0);

  // The state machine: INIT needs the port, the P_Key index and the rights.
  ib_uverbs_modify_qp m{};
  m.qp_state = ibcore::IB_QPS_RTR;
  EXPECT_EQ(write(modify_qp(qp, ibcore::IB_QP_STATE, m)), -EINVAL) << "RESET to RTR";
  m.qp_state = ibcore::IB_QPS_INIT;
  m.port_num = 1;
  m.qp_access_flags = 7;
  EXPECT_EQ(write(modify_qp(qp, ibcore::IB_QP_STATE | ibcore::IB_QP_PORT, m)), -EINVAL) << "no P_Key index";
  ASSERT_EQ(write(modify_qp(qp, ibcore::IB_QP_STATE | ibcore::IB_QP_PORT | ibcore::IB_QP_PKEY_INDEX |
                                    ibcore::IB_QP_ACCESS_FLAGS, m)),
            120);
  // RTR on RoCE: an address without a GRH names nobody.
  m.qp_state = ibcore::IB_QPS_RTR;
  m.dest_qp_num = qpn;
  m.path_mtu = 3;
  m.max_dest_rd_atomic = 1;
  m.min_rnr_timer = 12;
  m.rq_psn = 77;
  const uint32_t rtr = ibcore::IB_QP_STATE | ibcore::IB_QP_AV | ibcore::IB_QP_PATH_MTU | ibcore::IB_QP_DEST_QPN |
                       ibcore::IB_QP_RQ_PSN | ibcore::IB_QP_MAX_DEST_RD_ATOMIC | ibcore::IB_QP_MIN_RNR_TIMER;
  EXPECT_EQ(write(modify_qp(qp, rtr, m)), -EINVAL);
  m.dest.is_global = 1;
  m.dest.sgid_index = 1;
  m.dest.hop_limit = 64;
  ASSERT_EQ(write(modify_qp(qp, rtr, m)), 120);

  // QUERY_QP answers what was set.
  std::vector<uint8_t> q = handle_cmd(IB_USER_VERBS_CMD_QUERY_QP, qp, 32);
  put(q, 20, uint32_t(0xFFFF));
  ASSERT_EQ(write(q), 24);
  const auto attr = user.read<ib_uverbs_query_qp_resp>(kResponse);
  EXPECT_EQ(attr.qp_state, ibcore::IB_QPS_RTR);
  EXPECT_EQ(attr.dest_qp_num, qpn);
  EXPECT_EQ(attr.rq_psn, 77u);
  EXPECT_EQ(attr.qp_access_flags, 7u);
  EXPECT_EQ(attr.dest.is_global, 1);
  EXPECT_EQ(attr.dest.hop_limit, 64);
  EXPECT_EQ(attr.max_send_wr, 256u);
  EXPECT_EQ(attr.max_recv_wr, 32u);

  // What is in use is not destroyed; the reply of a destroy counts the events read (none).
  EXPECT_EQ(write(handle_cmd(IB_USER_VERBS_CMD_DESTROY_CQ, cq, 2)), -EBUSY) << "a QP uses it";
  EXPECT_EQ(write(dealloc_pd(pd)), -EBUSY) << "memory and a QP are on it";
  ASSERT_EQ(write(handle_cmd(IB_USER_VERBS_CMD_DESTROY_QP, qp, 1)), 24);
  EXPECT_EQ(user.read<uint32_t>(kResponse), 0u);
  EXPECT_EQ(write(handle_cmd(IB_USER_VERBS_CMD_DESTROY_QP, qp, 1)), -EINVAL) << "a stale handle";
  ASSERT_EQ(write(handle_cmd(IB_USER_VERBS_CMD_DESTROY_CQ, cq, 2)), 24);
  EXPECT_EQ(user.read<uint64_t>(kResponse), 0u);
  EXPECT_EQ(write(handle_cmd(IB_USER_VERBS_CMD_DEREG_MR, qp_mr)), 12);
  EXPECT_EQ(write(handle_cmd(IB_USER_VERBS_CMD_DEREG_MR, ring_mr)), 12);
  EXPECT_EQ(write(handle_cmd(IB_USER_VERBS_CMD_DEREG_MR, ring_mr)), -EINVAL);
  file.reset();
  EXPECT_FALSE(sim.driver().in_use()) << "closing the file freed the rest";
}

TEST_F(UverbsFile, RegMrRefusesWhatTheCoreAndTheDriverRefuse) {
  ASSERT_EQ(write(get_context()), 24);
  ASSERT_EQ(write(alloc_pd()), 16);
  const uint32_t pd = user.read<uint32_t>(kResponse);
  UserBuffer buf(4);
  EXPECT_EQ(write(reg_mr(buf.p, buf.bytes, pd, 2, 0)), -EINVAL) << "remote write without local write";
  EXPECT_EQ(write(reg_mr(buf.p, buf.bytes, pd, 1 << 6, 0)), -EOPNOTSUPP) << "on-demand paging";
  EXPECT_EQ(write(reg_mr(buf.p, buf.bytes, pd + 5, 1, 0)), -EINVAL) << "no such PD";
  EXPECT_EQ(write(reg_mr(buf.p, buf.bytes, pd, 1, 7)), -EINVAL) << "no such registration type";
  EXPECT_EQ(write(reg_mr(reinterpret_cast<void*>(0x1000), 4096, pd, 1, 0)), -EFAULT) << "memory it does not have";
  EXPECT_EQ(write(reg_mr(buf.p, 0, pd, 1, 0)), -EINVAL) << "nothing to register";
  EXPECT_EQ(write(reg_mr(buf.p, buf.bytes, pd, 1, irdma::IRDMA_MEMREG_TYPE_QP, 0, 4, 4)), -EINVAL)
      << "more queue pages than registered";
  // A region: a key the device checks, from the CQP's REG_MR.
  ASSERT_EQ(write(reg_mr(buf.at(100), 5000, pd, 7, 0)), 56);
  const uint32_t lkey = user.read<uint32_t>(kResponse + 4);
  EXPECT_NE(lkey, 0u);
  EXPECT_EQ(user.read<uint32_t>(kResponse + 8), lkey);
  const uint32_t mr = user.read<uint32_t>(kResponse);
  EXPECT_EQ(write(dealloc_pd(pd)), -EBUSY);
  EXPECT_EQ(write(handle_cmd(IB_USER_VERBS_CMD_DEREG_MR, mr)), 12);
  EXPECT_EQ(write(dealloc_pd(pd)), 12);
}
