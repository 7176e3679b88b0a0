#include "model/testbench/scenario.h"

#include <algorithm>
#include <set>

#include "model/device/regs.h"
#include "model/testbench/buffered_qp.h"
#include "model/testbench/yaml_reader.h"

namespace irdma_sim::testbench {

const std::vector<std::string> kFlushCodeNames = {
    "invalid",      "general_err",   "prot_err",    "rem_access_err",  "loc_qp_op_err",
    "rem_op_err",   "loc_len_err",   "fatal_err",   "retry_exc_err",   "mw_bind_err",
    "rem_inv_req_err", "rnr_retry_exc_err"};

namespace {

constexpr uint32_t kUdMtu = 4096;

std::vector<TrafficOp> read_ops(const YamlMap& m, const std::vector<TrafficOp>& def) {
  std::vector<size_t> def_idx;
  for (TrafficOp op : def) def_idx.push_back(size_t(op));
  std::vector<TrafficOp> ops;
  for (size_t op : m.choice_list("ops", def_idx, {"send", "write", "write_imm", "read", "fetch_add",
                                                  "cmp_swap", "local_inv", "reg_mr", "bind_mw",
                                                  "read_inv", "nop"}))
    ops.push_back(TrafficOp(op));
  return ops;
}

// The region a QP registers must be invalidated (local_inv or read_inv) before it is
// registered again, and a window is bound only over a registered region: walked twice,
// as the cycle repeats.
void check_key_ops(const YamlMap& where, const std::vector<TrafficOp>& ops) {
  bool registered = false;
  for (int pass = 0; pass < 2; pass++) {
    for (TrafficOp op : ops) {
      if (op == TrafficOp::reg_mr && registered)
        where.fail("key 'ops': reg_mr again before the region was invalidated (local_inv or read_inv)");
      if (op == TrafficOp::bind_mw && !registered)
        where.fail("key 'ops': bind_mw needs a region registered by an earlier reg_mr");
      if (op == TrafficOp::reg_mr) registered = true;
      if (op == TrafficOp::local_inv || op == TrafficOp::read_inv) registered = false;
    }
  }
}

void read_faults(const YamlMap& top, Scenario& sc) {
  for (const YamlMap& f : top.list_of_maps("faults")) {
    f.allow({"pair", "side", "request", "rate", "code"});
    FaultSpec fault;
    const std::string pair = f.str("pair", "");
    auto it = std::find_if(sc.pairs.begin(), sc.pairs.end(),
                           [&](const QpPairSpec& p) { return p.name == pair; });
    if (it == sc.pairs.end()) f.fail("key 'pair': no QP pair named '" + pair + "'");
    fault.pair = size_t(it - sc.pairs.begin());
    if (it->ud) f.fail("key 'pair': faults are injected on RC pairs only");
    const auto& ops = sc.ops_of(fault.pair);
    if (std::find(ops.begin(), ops.end(), TrafficOp::nop) != ops.end())
      f.fail("key 'pair': a faulted pair cannot post nop (a flushed NOP completes silently)");
    if (std::find(ops.begin(), ops.end(), TrafficOp::bind_mw) != ops.end())
      f.fail("key 'pair': a faulted pair cannot post bind_mw (its success and its flush both "
             "complete as IB_WC_GENERAL_ERR)");
    for (const FaultSpec& other : sc.faults)
      if (other.pair == fault.pair) f.fail("key 'pair': one fault per QP pair");
    fault.side = unsigned(f.choice("side", 0, {"a", "b"}));
    if (f.has("request") == f.has("rate")) f.fail("a fault needs exactly one of 'request' and 'rate'");
    fault.request = f.i64("request", -1, 0, INT64_MAX);
    if (fault.request >= int64_t(sc.traffic.sends_per_qp))
      f.fail_at("request", "key 'faults[" + std::to_string(sc.faults.size()) + "].request': " +
                               std::to_string(fault.request) + " is past the QP's last request (traffic.sends_per_qp = " +
                               std::to_string(sc.traffic.sends_per_qp) + ": requests 0 to " +
                               std::to_string(int64_t(sc.traffic.sends_per_qp) - 1) + ")");
    fault.rate = f.f64("rate", 0, 0, 1);
    fault.flush_code = uint16_t(f.choice("code", 0, std::vector<std::string>(
                                                      kFlushCodeNames.begin() + 1, kFlushCodeNames.end())) + 1);
    sc.faults.push_back(fault);
  }
}

// What the workload's message buffers take, for both QPs of each pair.
uint64_t buffer_bytes(const Scenario& sc) {
  const uint32_t slot = BufferedQp::slot_bytes_for(sc.traffic.max_bytes);
  uint64_t bytes = 0;
  for (const QpPairSpec& p : sc.pairs) bytes += 2 * BufferedQp::buffer_bytes(p.sq_depth, p.rq_depth, slot);
  return bytes;
}

// What the scenario asks of the configured device and host, checked before anything runs:
// a limit setup would hit is a scenario error, naming the key, the limit and the ask.
void check_limits(const YamlMap& top, const Scenario& sc, const std::vector<YamlMap>& pair_maps) {
  const device::DeviceConfig& d = sc.config.device;
  const YamlMap device = top.map("config").map("device");
  const auto setting = [&](const char* key, uint64_t value) {
    return std::string("config.device.") + key + " = " + std::to_string(value) +
           (device.has(key) ? "" : " (the default)");
  };
  // The driver keeps QP ids 0-1 and CQ ids 0-2; STag index 0 is the global key.
  constexpr uint32_t kReservedQpIds = 2, kReservedCqIds = 3;
  const uint64_t qp_ids = 2 * uint64_t(sc.pairs.size());
  if (qp_ids + kReservedQpIds > d.max_qp)
    top.fail_at("qp_pairs", "key 'qp_pairs': " + std::to_string(sc.pairs.size()) + " QP pairs take " + std::to_string(qp_ids) +
                                " QP ids (two per pair, past the 2 the driver keeps); " + setting("max_qp", d.max_qp) +
                                " holds " + std::to_string((std::max(d.max_qp, kReservedQpIds) - kReservedQpIds) / 2) +
                                " pairs");
  uint64_t own_cqs = 0, stags = 0;
  bool pool = false;
  for (size_t i = 0; i < sc.pairs.size(); i++) {
    const QpPairSpec& p = sc.pairs[i];
    const uint32_t entries = p.cq_entries ? p.cq_entries : p.sq_depth + p.rq_depth;
    if (entries > d.max_cqe)
      pair_maps[i].fail("key 'qp_pairs': pair " + p.name + "'s CQs need " + std::to_string(entries) + " entries (" +
                        (p.cq_entries ? "cq_entries" : "sq_depth + rq_depth") + "); " + setting("max_cqe", d.max_cqe) +
                        " caps a CQ");
    own_cqs += p.own_cqs ? 2 : 0;
    pool = pool || !p.own_cqs;
    const auto& ops = sc.ops_of(i);
    const auto uses = [&](TrafficOp op) { return std::find(ops.begin(), ops.end(), op) != ops.end(); };
    stags += 2 * (uint64_t(uses(TrafficOp::reg_mr)) + uses(TrafficOp::bind_mw));
  }
  const YamlMap traffic = top.map("traffic");
  for (uint32_t n : sc.traffic.resize_cqes)
    if (n > d.max_cqe)
      traffic.fail_at("resize_cqes", "key 'traffic.resize_cqes': a resize to " + std::to_string(n) + " entries; " + setting("max_cqe", d.max_cqe) +
                                         " caps a CQ");
  // The pool's first growth takes one CQ per vector; it may take more as it runs.
  const uint64_t cqs = own_cqs + (pool ? d.num_ceqs : 0);
  if (cqs + kReservedCqIds > d.max_cq)
    top.fail_at("qp_pairs", "key 'qp_pairs': the pairs take at least " + std::to_string(cqs) + " CQ ids (" + std::to_string(own_cqs) +
                                " own CQs" + (pool ? ", one pool CQ per vector" : "") +
                                ", past the 3 the driver keeps); " + setting("max_cq", d.max_cq));
  if (stags + 1 > d.max_stags)
    top.fail_at("qp_pairs", "key 'qp_pairs': the traffic's memory keys take " + std::to_string(stags) +
                                " STags (a region for each QP whose ops hold reg_mr, a window for each with bind_mw, "
                                "past index 0, the global key); " + setting("max_stags", d.max_stags));
  const uint64_t buffers = buffer_bytes(sc);
  const YamlMap host = top.map("config").map("host");
  if (buffers > (sc.config.host.memory_mb << 20))
    host.fail_at("memory_mb", "key 'config.host.memory_mb': the workload's message buffers take " + std::to_string((buffers + (1 << 20) - 1) >> 20) +
                                  " MiB (a max_bytes slot per SQ and RQ entry and three per SQ entry of RDMA window, for "
                                  "each QP), more than config.host.memory_mb = " + std::to_string(sc.config.host.memory_mb) +
                                  (host.has("memory_mb") ? "" : " (the default)"));
}

void read_device(const YamlMap& m, device::DeviceConfig& d) {
  m.allow({"generation", "clock_mhz", "cycles", "max_cq", "max_qp", "num_ceqs", "max_cqe",
           "cqe_64byte", "rnr_retry_cycles", "formatter", "mac", "ud_vlan_tci", "ud_ipv4", "ud_grh",
           "max_stags", "ceq_itr_us", "cq_resize", "spare_msix", "rtl_vcd", "cq_writer", "cq_writer_timing",
           "rtl_toggle_coverage", "cqp_hang_after_ns", "function_reset_at_ns", "cqe_main_half_first"});
  d.generation = uint8_t(m.u32("generation", d.generation, 2, 3));
  d.cqe_64byte = d.generation >= 3;  // GEN_3 reports FEATURE_64_BYTE_CQE unless told not to
  d.clock_mhz = m.f64("clock_mhz", d.clock_mhz, 1, 10000);
  d.max_cq = m.u32("max_cq", d.max_cq, 4, 1u << 19);
  d.max_qp = m.u32("max_qp", d.max_qp, 4, 1u << 18);
  d.num_ceqs = m.u32("num_ceqs", d.num_ceqs, 1, 1024);
  d.max_cqe = m.u32("max_cqe", d.max_cqe, 1, 1048574);
  d.cqe_64byte = m.boolean("cqe_64byte", d.cqe_64byte);
  d.rnr_retry_cycles = m.u32("rnr_retry_cycles", d.rnr_retry_cycles, 1, 1u << 30);
  if (m.has("cqp_hang_after_ns")) d.cqp_hang_after_ns = m.u64("cqp_hang_after_ns", 0, 0, 1'000'000'000'000ull);
  if (m.has("function_reset_at_ns"))
    d.function_reset_at_ns = m.u64("function_reset_at_ns", 0, 0, 1'000'000'000'000ull);
  d.formatter = device::FormatterKind(m.choice("formatter", size_t(d.formatter), {"tlm", "rtl"}));
  d.cq_writer = device::CqWriterKind(m.choice("cq_writer", size_t(d.cq_writer), {"tlm", "rtl"}));
  if (m.has("cq_writer_timing"))
    d.cq_writer_timing = device::CqWriterTiming(m.choice("cq_writer_timing", 0, {"rtl", "model"}));
  d.rtl_toggle_coverage = m.boolean("rtl_toggle_coverage", d.rtl_toggle_coverage);
  d.rtl_vcd = m.str("rtl_vcd", d.rtl_vcd);
  d.cqe_main_half_first = m.boolean("cqe_main_half_first", d.cqe_main_half_first);
  if (const std::string unused = device::unused_rtl_setting(d); !unused.empty()) m.fail(unused);
  if (d.cqe_main_half_first && d.cqe_64byte)
    m.fail("key 'cqe_main_half_first': with 64-byte CQEs only an extended CQE writes its slot's second half, whose "
           "valid bit may then be two passes old and read as current: the main half must land last");
  d.mac = m.u64("mac", d.mac, 0, (1ull << 48) - 1);
  d.ud_vlan_tci = uint16_t(m.u32("ud_vlan_tci", d.ud_vlan_tci, 0, 0xFFFF));
  d.ud_ipv4 = m.boolean("ud_ipv4", d.ud_ipv4);
  if (m.has("ud_grh")) d.ud_grh = m.boolean("ud_grh", false);
  d.max_stags = m.u32("max_stags", d.max_stags, 2, 1u << 24);
  d.ceq_itr_us = m.u32("ceq_itr_us", d.ceq_itr_us, 0, 8190);  // INTERVAL: 12 bits of 2 us
  d.cq_resize = m.boolean("cq_resize", d.cq_resize);
  d.spare_msix = m.u32("spare_msix", d.spare_msix, 0, 2048);
  if (d.msix_vectors() > device::regs::MSIX_MAX_VECTORS)
    m.fail("keys 'num_ceqs' and 'spare_msix': " + std::to_string(d.msix_vectors()) +
           " MSI-X vectors (one per CEQ, one for the AEQ, the spares); the device's table holds " +
           std::to_string(device::regs::MSIX_MAX_VECTORS));
  const YamlMap c = m.map("cycles");
  c.allow({"doorbell", "cqp_wqe", "wqe_decode", "execute", "cq_intake", "cq_read", "cq_read_beat", "cqe_format",
           "cqe_write", "cq_respond", "cq_context"});
  constexpr uint32_t kMax = 1u << 20;
  d.cycles.doorbell = c.u32("doorbell", d.cycles.doorbell, 0, kMax);
  d.cycles.cqp_wqe = c.u32("cqp_wqe", d.cycles.cqp_wqe, 0, kMax);
  d.cycles.wqe_decode = c.u32("wqe_decode", d.cycles.wqe_decode, 0, kMax);
  d.cycles.execute = c.u32("execute", d.cycles.execute, 0, kMax);
  d.cycles.cq_intake = c.u32("cq_intake", d.cycles.cq_intake, 0, kMax);
  d.cycles.cq_read = c.u32("cq_read", d.cycles.cq_read, 0, kMax);
  d.cycles.cq_read_beat = c.u32("cq_read_beat", d.cycles.cq_read_beat, 0, kMax);
  d.cycles.cqe_format = c.u32("cqe_format", d.cycles.cqe_format, 0, kMax);
  d.cycles.cqe_write = c.u32("cqe_write", d.cycles.cqe_write, 0, kMax);
  d.cycles.cq_respond = c.u32("cq_respond", d.cycles.cq_respond, 0, kMax);
  d.cycles.cq_context = c.u32("cq_context", d.cycles.cq_context, 0, kMax);
}

void read_link_faults(const YamlMap& m, platform::LinkFaultConfig& f) {
  m.allow({"posted_delay_rate", "posted_delay_max_ns", "split_rate", "split_gap_ns", "split_reversed",
           "msix_lost_rate", "msix_duplicated_rate", "msix_delayed_rate", "msix_delay_max_ns", "msix_mask_rate",
           "msix_mask_max_ns", "wqe_read_error_rate", "shadow_read_error_rate", "cqe_write_error_rate",
           "ceqe_write_error_rate", "aeqe_write_error_rate", "payload_write_poison_rate", "seed"});
  f.posted_delay_rate = m.f64("posted_delay_rate", f.posted_delay_rate, 0, 1);
  f.posted_delay_max_ns = m.f64("posted_delay_max_ns", f.posted_delay_max_ns, 1, 1e7);
  f.split_rate = m.f64("split_rate", f.split_rate, 0, 1);
  f.split_gap_ns = m.f64("split_gap_ns", f.split_gap_ns, 0, 1e6);
  f.split_reversed = m.boolean("split_reversed", f.split_reversed);
  f.msix_lost_rate = m.f64("msix_lost_rate", f.msix_lost_rate, 0, 1);
  f.msix_duplicated_rate = m.f64("msix_duplicated_rate", f.msix_duplicated_rate, 0, 1);
  f.msix_delayed_rate = m.f64("msix_delayed_rate", f.msix_delayed_rate, 0, 1);
  f.msix_delay_max_ns = m.f64("msix_delay_max_ns", f.msix_delay_max_ns, 1, 1e7);
  f.msix_mask_rate = m.f64("msix_mask_rate", f.msix_mask_rate, 0, 1);
  f.msix_mask_max_ns = m.f64("msix_mask_max_ns", f.msix_mask_max_ns, 1, 1e7);
  f.wqe_read_error_rate = m.f64("wqe_read_error_rate", f.wqe_read_error_rate, 0, 1);
  f.shadow_read_error_rate = m.f64("shadow_read_error_rate", f.shadow_read_error_rate, 0, 1);
  f.cqe_write_error_rate = m.f64("cqe_write_error_rate", f.cqe_write_error_rate, 0, 1);
  f.ceqe_write_error_rate = m.f64("ceqe_write_error_rate", f.ceqe_write_error_rate, 0, 1);
  f.aeqe_write_error_rate = m.f64("aeqe_write_error_rate", f.aeqe_write_error_rate, 0, 1);
  f.payload_write_poison_rate = m.f64("payload_write_poison_rate", f.payload_write_poison_rate, 0, 1);
  f.seed = m.u64("seed", f.seed, 0, UINT64_MAX);
  // A kind's shape without its rate would be read and do nothing.
  const std::pair<const char*, std::pair<const char*, double>> shapes[] = {
      {"posted_delay_max_ns", {"posted_delay_rate", f.posted_delay_rate}},
      {"split_gap_ns", {"split_rate", f.split_rate}},
      {"split_reversed", {"split_rate", f.split_rate}},
      {"msix_delay_max_ns", {"msix_delayed_rate", f.msix_delayed_rate}},
      {"msix_mask_max_ns", {"msix_mask_rate", f.msix_mask_rate}}};
  for (const auto& [key, rate] : shapes)
    if (m.has(key) && rate.second == 0)
      m.fail_at(key, std::string("key '") + key + "' needs a " + rate.first + " above 0");
}

void read_link(const YamlMap& m, platform::LinkConfig& l) {
  m.allow({"mmio_latency_ns", "dma_latency_ns", "bandwidth_gbytes", "max_payload_bytes",
           "max_read_request_bytes", "tlp_overhead_bytes", "faults"});
  l.mmio_latency_ns = m.f64("mmio_latency_ns", l.mmio_latency_ns, 0, 1e6);
  l.dma_latency_ns = m.f64("dma_latency_ns", l.dma_latency_ns, 0, 1e6);
  l.bandwidth_gbytes = m.f64("bandwidth_gbytes", l.bandwidth_gbytes, 0.01, 1000);
  l.max_payload_bytes = m.u32("max_payload_bytes", l.max_payload_bytes, 128, 4096);
  l.max_read_request_bytes = m.u32("max_read_request_bytes", l.max_read_request_bytes, 128, 4096);
  l.tlp_overhead_bytes = m.u32("tlp_overhead_bytes", l.tlp_overhead_bytes, 0, 128);
  read_link_faults(m.map("faults"), l.faults);
}

void read_config(const YamlMap& m, SimConfig& cfg) {
  m.allow({"device", "driver", "link", "host", "sync"});
  read_device(m.map("device"), cfg.device);
  read_link(m.map("link"), cfg.link);
  const YamlMap drv = m.map("driver");
  drv.allow({"eq_watchdog_us", "cqp_timeout_ms"});
  cfg.driver.eq_watchdog_us = drv.u32("eq_watchdog_us", cfg.driver.eq_watchdog_us, 0, 10'000'000);
  cfg.driver.cqp_timeout_ms = drv.u32("cqp_timeout_ms", cfg.driver.cqp_timeout_ms, 1, 600'000);
  if (cfg.driver.eq_watchdog_us && cfg.driver.eq_watchdog_us <= cfg.device.ceq_itr_us)
    drv.fail_at("eq_watchdog_us", "key 'eq_watchdog_us': " + std::to_string(cfg.driver.eq_watchdog_us) +
                                      " us is within device.ceq_itr_us = " + std::to_string(cfg.device.ceq_itr_us) +
                                      ": an interrupt the moderation holds back would pass for a missed one");
  const YamlMap h = m.map("host");
  h.allow({"cpus", "relax_timeout_ns", "memory_mb"});
  cfg.host.cpus = h.u32("cpus", cfg.host.cpus, 1, 256);
  cfg.host.relax_timeout_ns = h.f64("relax_timeout_ns", cfg.host.relax_timeout_ns, 1, 1e9);
  cfg.host.memory_mb = h.u64("memory_mb", cfg.host.memory_mb, 1, 1u << 20);
  const YamlMap s = m.map("sync");
  s.allow({"mode", "quantum_ns"});
  cfg.sync = SyncMode(s.choice("mode", size_t(cfg.sync), {"approximate", "loose"}));
  cfg.quantum_ns = s.f64("quantum_ns", cfg.quantum_ns, 1, 1e9);
  if (cfg.link.faults.writes() && cfg.sync != SyncMode::approximate)
    m.map("link").map("faults").fail("link faults on posted writes (posted_delay_rate, split_rate) need sync.mode "
                                     "approximate: loosely timed, a posted write lands when it is issued");
}

}  // namespace

SimConfig parse_config(const std::string& yaml_text, const std::string& origin) {
  YAML::Node doc;
  try {
    doc = YAML::Load(yaml_text);
  } catch (const YAML::ParserException& e) {
    throw ScenarioError(origin + ":" + std::to_string(e.mark.line + 1) + ": YAML syntax error: " + e.msg);
  }
  SimConfig cfg;
  read_config(YamlMap(doc, origin, "config"), cfg);
  return cfg;
}

SimConfig load_config_file(const std::string& path) {
  const YAML::Node doc = load_yaml_file(path);
  SimConfig cfg;
  const bool scenario = doc.IsMap() && doc["config"];
  read_config(YamlMap(scenario ? doc["config"] : doc, path, scenario ? "config" : ""), cfg);
  return cfg;
}

Scenario load_scenario(const std::string& path) {
  Scenario sc;
  sc.file = path;
  const YamlMap top(load_yaml_file(path), path, "");
  top.allow({"name", "description", "seed", "config", "pool", "qp_pairs", "traffic", "faults"});
  sc.name = top.str("name", "");
  if (sc.name.empty()) top.fail("key 'name' is required");
  sc.description = top.str("description", "");
  sc.seed = top.u64("seed", sc.seed, 0, UINT64_MAX);
  read_config(top.map("config"), sc.config);
  const YamlMap link_faults = top.map("config").map("link").map("faults");
  if (link_faults.has("seed"))
    link_faults.fail_at("seed", "key 'seed': a run draws its link faults from its own seed (the scenario's, or --seed)");

  const YamlMap pool = top.map("pool");
  pool.allow({"policy", "poll_ctx"});
  sc.pool_policy = ibcore::cq_pool_policy(
      pool.choice("policy", size_t(sc.pool_policy), {"least_used", "kernel_first_fit"}));
  sc.poll_ctx = ibcore::ib_poll_context(pool.choice(
      "poll_ctx", size_t(sc.poll_ctx), {"softirq", "workqueue", "unbound_workqueue"}));

  std::vector<YamlMap> pair_maps;  // the entry each pair comes from
  std::set<std::string> names;
  for (const YamlMap& p : top.list_of_maps("qp_pairs")) {
    p.allow({"name", "count", "type", "cq_vector", "peer_cq_vector", "sq_depth", "rq_depth", "ops", "poll_ctx", "cq",
             "cq_entries"});
    QpPairSpec q;
    q.cq_vector = int(p.i64("cq_vector", q.cq_vector, -1, 1023));
    q.peer_cq_vector = int(p.i64("peer_cq_vector", q.cq_vector, -1, 1023));
    q.sq_depth = p.u32("sq_depth", q.sq_depth, 1, 4096);
    q.rq_depth = p.u32("rq_depth", q.rq_depth, 1, 4096);
    q.ud = p.choice("type", 0, {"rc", "ud"}) == 1;
    q.ops = read_ops(p, {});
    q.own_cqs = p.choice("cq", 0, {"pool", "own"}) == 1;
    q.cq_entries = p.u32("cq_entries", 0, 1, 1048574);
    if (q.cq_entries && !q.own_cqs) p.fail("key 'cq_entries' sizes an own CQ (cq: own)");
    if (p.has("poll_ctx"))
      q.poll_ctx = int(p.choice("poll_ctx", 0, {"softirq", "workqueue", "unbound_workqueue"}));
    // `count: N` stands for N pairs alike, named <name>0 .. <name>N-1 (unnamed ones are
    // pair<index>, as a single one is).
    const uint32_t count = p.u32("count", 1, 1, 100'000);
    for (uint32_t i = 0; i < count; i++) {
      const std::string index = "pair" + std::to_string(sc.pairs.size());
      q.name = !p.has("name") ? index : p.has("count") ? p.str("name", "") + std::to_string(i) : p.str("name", "");
      // Faults and reports name pairs: a name must say which one.
      if (!names.insert(q.name).second) p.fail("key 'name': two QP pairs are named '" + q.name + "'");
      sc.pairs.push_back(q);
      pair_maps.push_back(p);
    }
  }
  if (sc.pairs.empty()) top.fail("key 'qp_pairs' needs at least one pair");

  const YamlMap t = top.map("traffic");
  t.allow({"sends_per_qp", "ops", "min_bytes", "max_bytes", "imm_every", "inv_every",
           "solicited_every", "batch", "signal_every", "burst", "idle_gap_ns", "resize_every",
           "resize_cqes", "stop_after_ns", "stall_timeout_ns", "check_payload"});
  TrafficSpec& tr = sc.traffic;
  tr.sends_per_qp = t.u32("sends_per_qp", tr.sends_per_qp, 0, 100'000'000);
  tr.ops = read_ops(t, {TrafficOp::send});
  tr.min_bytes = t.u32("min_bytes", tr.min_bytes, 0, 1u << 20);
  tr.max_bytes = t.u32("max_bytes", tr.max_bytes, tr.min_bytes, 1u << 20);
  tr.imm_every = t.u32("imm_every", tr.imm_every, 0, UINT32_MAX);
  tr.inv_every = t.u32("inv_every", tr.inv_every, 0, UINT32_MAX);
  tr.solicited_every = t.u32("solicited_every", tr.solicited_every, 0, UINT32_MAX);
  tr.batch = t.u32("batch", tr.batch, 1, 256);
  tr.signal_every = t.u32("signal_every", tr.signal_every, 1, UINT32_MAX);
  tr.burst = t.u32("burst", tr.burst, 0, UINT32_MAX);
  tr.idle_gap_ns = t.u64("idle_gap_ns", tr.idle_gap_ns, 0, 10'000'000);  // under the stall limit
  tr.resize_every = t.u32("resize_every", tr.resize_every, 0, UINT32_MAX);
  tr.stop_after_ns = t.u64("stop_after_ns", tr.stop_after_ns, 0, 10'000'000'000);
  tr.stall_timeout_ns = t.u64("stall_timeout_ns", tr.stall_timeout_ns, 0, 3'600'000'000'000);
  tr.resize_cqes = t.u32_list("resize_cqes", 1, 1048574);
  tr.check_payload = t.boolean("check_payload", tr.check_payload);
  if (tr.resize_every && tr.resize_cqes.empty())
    t.fail("key 'traffic.resize_every' needs the sizes to resize to (resize_cqes)");
  if (!tr.resize_cqes.empty() && !tr.resize_every)
    t.fail_at("resize_cqes", "key 'traffic.resize_cqes' needs traffic.resize_every (how often to resize)");
  if (tr.stall_timeout_ns && tr.idle_gap_ns >= tr.stall_timeout_ns)
    t.fail_at("stall_timeout_ns", "key 'traffic.stall_timeout_ns' must be longer than traffic.idle_gap_ns "
                                  "(an idle gap would be taken for a stall)");
  // An idle gap comes after each burst: one without the other would do nothing.
  if (bool(tr.burst) != bool(tr.idle_gap_ns))
    t.fail_at(tr.burst ? "burst" : "idle_gap_ns", tr.burst ? "key 'traffic.burst' needs traffic.idle_gap_ns (how long to idle after each burst)"
                                                           : "key 'traffic.idle_gap_ns' needs traffic.burst (how many WRs before each gap)");
  if (tr.resize_every && std::none_of(sc.pairs.begin(), sc.pairs.end(), [](const QpPairSpec& p) { return p.own_cqs; }))
    t.fail_at("resize_every", "key 'traffic.resize_every': no pair has CQs of its own (qp_pairs[].cq: own), and pool CQs "
                              "cannot be resized");
  // A CQ may shrink below what is unpolled, but never below what its QP may have
  // outstanding: the device does not check a resized CQ for overflow.
  for (const QpPairSpec& p : sc.pairs)
    for (uint32_t n : tr.resize_cqes)
      if (p.own_cqs && n < p.sq_depth + p.rq_depth)
        t.fail("key 'traffic.resize_cqes': " + std::to_string(n) + " is below pair " + p.name +
               "'s sq_depth + rq_depth");
  const bool any_ud = std::any_of(sc.pairs.begin(), sc.pairs.end(), [](const QpPairSpec& p) { return p.ud; });
  for (size_t i = 0; i < sc.pairs.size(); i++) {
    const YamlMap& where = sc.pairs[i].ops.empty() ? t : pair_maps[i];
    const auto& ops = sc.ops_of(i);
    if (sc.pairs[i].ud && std::any_of(ops.begin(), ops.end(), [](TrafficOp op) { return op != TrafficOp::send; }))
      where.fail("key 'ops': a UD pair sends datagrams only (ops: [send])");
    const bool atomics = std::any_of(ops.begin(), ops.end(), [](TrafficOp op) {
      return op == TrafficOp::fetch_add || op == TrafficOp::cmp_swap;
    });
    if (atomics && sc.config.device.generation < 3)
      where.fail("key 'ops': atomics need a GEN_3 device (config.device.generation: 3)");
    check_key_ops(where, ops);
  }
  if (any_ud && tr.max_bytes > kUdMtu)
    t.fail("key 'traffic.max_bytes': a UD datagram is at most " + std::to_string(kUdMtu) + " bytes");
  read_faults(top, sc);
  check_limits(top, sc, pair_maps);
  return sc;
}

void check_servable(const SimConfig& config) {
  const platform::LinkFaultConfig& f = config.link.faults;
  using Rate = std::pair<double, const char*>;
  // The keys of those set, as the error names them.
  const auto set_keys = [](std::initializer_list<Rate> rates) {
    std::string keys;
    for (const auto& [rate, key] : rates)
      if (rate > 0) keys += std::string(keys.empty() ? "" : ", ") + "config.link.faults." + key;
    return keys;
  };
  if (const std::string keys = set_keys({{f.posted_delay_rate, "posted_delay_rate"},
                                         {f.split_rate, "split_rate"},
                                         {f.msix_delayed_rate, "msix_delayed_rate"},
                                         {f.msix_mask_rate, "msix_mask_rate"}});
      !keys.empty())
    throw ScenarioError(keys + ": a served model cannot carry these (its writes land, and its interrupts go, as "
                               "they are issued, to a host it does not simulate); they need the sim backend");
  if (const std::string keys = set_keys({{f.wqe_read_error_rate, "wqe_read_error_rate"},
                                         {f.shadow_read_error_rate, "shadow_read_error_rate"}});
      !keys.empty())
    throw ScenarioError(keys + ": a served model cannot tell a test bench in another process which queue a refused "
                               "read struck; it needs the sim backend");
  if (const std::string keys = set_keys({{f.cqe_write_error_rate, "cqe_write_error_rate"},
                                         {f.ceqe_write_error_rate, "ceqe_write_error_rate"},
                                         {f.aeqe_write_error_rate, "aeqe_write_error_rate"},
                                         {f.payload_write_poison_rate, "payload_write_poison_rate"}});
      !keys.empty())
    throw ScenarioError(keys + ": a served model has no root port to report a refused or poisoned write to its "
                               "client's host (AER); they need the sim backend");
  for (const auto& [key, set] : {std::pair{"cqp_hang_after_ns", bool(config.device.cqp_hang_after_ns)},
                                  std::pair{"function_reset_at_ns", bool(config.device.function_reset_at_ns)}})
    if (set)
      throw ScenarioError(std::string("config.device.") + key +
                          ": a served model's clock starts at its own power-on and runs as its client drives it, "
                          "not with the run's traffic; it needs the sim backend");
}

}  // namespace irdma_sim::testbench
