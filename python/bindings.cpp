// The _irdma_sim extension: the C++ system's public API for Python. No simulation logic
// lives here, only conversions.
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <systemc>

#include "driver/core/ib_device.h"
#include "model/testbench/host_session.h"
#include "model/testbench/raw_verbs.h"
#include "model/system/replay.h"
#include "model/system/run_scenario.h"
#include "model/system/served_device.h"
#include "model/system/simulation.h"
#include "model/testbench/scenario.h"
#include "model/testbench/yaml_reader.h"
#include "model/trace/trace_reader.h"

namespace py = pybind11;
using namespace irdma_sim::system;
using namespace irdma_sim::testbench;

// libsystemc.so refers to sc_main; Python loads it with RTLD_NOW, so the module defines one.
extern "C" __attribute__((visibility("default"))) int sc_main(int, char**) { return 0; }

namespace {

ibcore::ib_poll_context poll_ctx_of(const std::string& name) {
  if (name == "softirq") return ibcore::IB_POLL_SOFTIRQ;
  if (name == "workqueue") return ibcore::IB_POLL_WORKQUEUE;
  if (name == "unbound_workqueue") return ibcore::IB_POLL_UNBOUND_WORKQUEUE;
  if (name == "direct") return ibcore::IB_POLL_DIRECT;
  throw py::value_error("poll_ctx must be softirq, workqueue, unbound_workqueue or direct");
}

py::dict wc_dict(const PolledCompletion& c) {
  const ibcore::ib_wc& wc = c.wc;
  py::dict d;
  d["cq"] = c.cq;
  d["wr_id"] = c.wr_id;
  d["status"] = uint32_t(wc.status);
  d["opcode"] = uint32_t(wc.opcode);
  d["vendor_err"] = wc.vendor_err;
  d["byte_len"] = wc.byte_len;
  d["qp_num"] = c.qp_num;
  d["src_qp"] = wc.src_qp;
  d["wc_flags"] = wc.wc_flags;
  d["imm_data"] = (wc.wc_flags & ibcore::IB_WC_WITH_IMM) ? __builtin_bswap32(wc.ex.imm_data) : 0u;
  d["invalidate_rkey"] = (wc.wc_flags & ibcore::IB_WC_WITH_INVALIDATE) ? wc.ex.invalidate_rkey : 0u;
  d["slid"] = wc.slid;
  d["sl"] = wc.sl;
  d["pkey_index"] = wc.pkey_index;
  d["vlan_id"] = wc.vlan_id;
  d["network_hdr_type"] = wc.network_hdr_type;
  d["data"] = py::bytes(c.data);
  return d;
}

// A scatter-gather list from Python: (addr, length, lkey) triples.
std::vector<ibcore::ib_sge> sge_list(const py::list& sgl) {
  std::vector<ibcore::ib_sge> out;
  for (const py::handle& item : sgl) {
    const auto t = item.cast<std::tuple<uint64_t, uint32_t, uint32_t>>();
    out.push_back({std::get<0>(t), std::get<1>(t), std::get<2>(t)});
  }
  return out;
}

template <typename T>
T field(const py::dict& d, const char* key, T fallback) {
  return d.contains(key) ? d[key].cast<T>() : fallback;
}

// Work requests from a list of dicts: each one's wr_id and sg_list, the rest by `fill`.
template <typename Wr, typename Fill>
std::pair<std::vector<Wr>, std::vector<std::vector<ibcore::ib_sge>>> work_requests(const py::list& wrs, Fill fill) {
  std::vector<Wr> out;
  std::vector<std::vector<ibcore::ib_sge>> sgls;
  for (const py::handle& item : wrs) {
    const py::dict d = item.cast<py::dict>();
    Wr wr;
    wr.wr_id = field<uint64_t>(d, "wr_id", 0);
    fill(d, wr);
    out.push_back(wr);
    sgls.push_back(sge_list(field<py::list>(d, "sg_list", py::list())));
  }
  return {std::move(out), std::move(sgls)};
}

}  // namespace

PYBIND11_MODULE(_irdma_sim, m) {
  m.doc() = "irdma-sim: a SystemC model of the irdma CQ engine with its driver";
  py::register_exception<ScenarioError>(m, "ScenarioError", PyExc_ValueError);
  py::register_exception<ServeRefused>(m, "ServeRefused", PyExc_OSError);
  // An OSError subclass built as OSError(errno, message), so .errno holds Linux's errno.
  static py::exception<VerbsError> verbs_error(m, "VerbsError", PyExc_OSError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const VerbsError& e) {
      py::object type = py::reinterpret_borrow<py::object>(verbs_error.ptr());
      py::object err = type(e.err(), e.what());
      PyErr_SetObject(verbs_error.ptr(), err.ptr());
    }
  });

  m.def("check_scenario", [](const std::string& path) {
        const Scenario sc = load_scenario(path);
        py::dict d;
        d["name"] = sc.name;
        d["description"] = sc.description;
        d["seed"] = sc.seed;
        d["qp_pairs"] = sc.pairs.size();
        return d;
      },
      py::arg("path"), "Loads a scenario and returns its summary; raises ScenarioError.");

  m.attr("__version__") = IRDMA_SIM_VERSION;

  m.def("run_scenario",
        [](const std::string& path, const std::string& out, std::optional<uint64_t> seed, bool trace,
           std::optional<py::function> progress, const std::string& backend, bool record,
           const std::string& cq_writer, const std::string& trace_format) {
          RunOptions options;
          if (trace_format != "bin" && trace_format != "jsonl")
            throw py::value_error("trace_format must be 'bin' or 'jsonl', not '" + trace_format + "'");
          if (trace_format == "jsonl") options.trace_format = irdma_sim::trace::TraceLog::Format::jsonl;
          if (!cq_writer.empty()) choose_cq_writer(cq_writer, options.cq_writer, options.cq_writer_timing);
          options.seed = seed;
          options.trace = trace;
          options.backend = backend;
          options.record = record;
          if (progress)
            options.progress = [progress](const RunProgress& p) {
              py::gil_scoped_acquire locked;
              (*progress)(p.line());
            };
          RunResult r;
          {
            py::gil_scoped_release unlocked;
            r = run_scenario(path, out, options);
          }
          return py::make_tuple(r.passed, r.interrupted_by, r.report_path);
        },
        py::arg("path"), py::arg("out"), py::arg("seed") = py::none(), py::arg("trace") = true,
        py::arg("progress") = py::none(), py::arg("backend") = "sim", py::arg("record") = false,
        py::arg("cq_writer") = "", py::arg("trace_format") = "bin",
        "Runs a scenario from this process (once per process: SystemC elaborates once); returns "
        "(passed, the signal that interrupted it or 0, the report's path). `progress` is called "
        "with a line of text about twice a second while the traffic runs. `backend`: 'sim' (the "
        "device simulated here), 'vfio-user' (served by a child process, the driver on this "
        "process's threads), 'vfio-user:SOCKET' (served there already) or 'vfio:DDDD:BB:DD.F' (a "
        "function bound to vfio-pci: silicon). `record`: also write what a replay needs "
        "(stimulus.jsonl, scenario.yaml). `cq_writer`: 'tlm', 'rtl' or 'rtl:model' in place of the "
        "scenario's device.cq_writer (and its timing). `trace_format`: 'bin' (trace.bin) or 'jsonl' "
        "(trace.jsonl).");

  py::register_exception<irdma_sim::trace::TraceRefused>(m, "TraceRefused", PyExc_ValueError);
  py::register_exception<irdma_sim::trace::TraceWriteFailed>(m, "TraceWriteFailed", PyExc_OSError);
  // A binary trace's lines, streamed: what trace.jsonl would hold, one str per event.
  py::class_<irdma_sim::trace::TraceReader>(m, "TraceLines")
      .def(py::init<const std::string&>(), py::arg("path"))
      .def("__iter__", [](irdma_sim::trace::TraceReader& r) -> irdma_sim::trace::TraceReader& { return r; })
      .def("__next__", [](irdma_sim::trace::TraceReader& r) {
        std::string line;
        if (!r.next(line)) throw py::stop_iteration();
        return line;
      });
  m.def("convert_trace",
        [](const std::string& bin_path, const std::string& jsonl_path) {
          return irdma_sim::trace::convert_to_jsonl(bin_path, jsonl_path);
        },
        py::arg("bin_path"), py::arg("jsonl_path"), py::call_guard<py::gil_scoped_release>(),
        "Writes the trace.jsonl a binary trace stands for; returns its events. Raises TraceRefused "
        "(a ValueError: no binary trace, or one of another format version) before writing, "
        "TraceWriteFailed (an OSError) when the output cannot be written, and RuntimeError "
        "(malformed or cut short) having written every event before the fault.");

  m.def("replay",
        [](const std::string& run_dir, const std::string& formatter, int flip_cqe_bit, const std::string& cq_writer) {
          ReplayOptions options;
          if (!cq_writer.empty()) choose_cq_writer(cq_writer, options.cq_writer, options.cq_writer_timing);
          if (formatter == "tlm" || formatter == "rtl")
            options.formatter = formatter == "tlm" ? irdma_sim::device::FormatterKind::tlm : irdma_sim::device::FormatterKind::rtl;
          else if (!formatter.empty())
            throw py::value_error("formatter must be tlm or rtl");
          options.flip_cqe_bit = flip_cqe_bit;
          ReplayResult r;
          {
            py::gil_scoped_release unlocked;
            r = replay_run(run_dir, options);
          }
          py::dict d;
          d["identical"] = r.identical;
          d["difference"] = r.difference;
          d["mmio"] = r.mmio;
          d["reads"] = r.reads;
          d["writes"] = r.writes;
          d["msix"] = r.msix;
          d["cut_at_line"] = r.cut_at_line;
          return d;
        },
        py::arg("run_dir"), py::arg("formatter") = "", py::arg("flip_cqe_bit") = -1, py::arg("cq_writer") = "",
        "Replays a run recorded with record=True into the device alone (once per process: SystemC "
        "elaborates once); returns {identical, difference, mmio, reads, writes, msix, cut_at_line}. `formatter` "
        "and `cq_writer` override the recorded run's; `flip_cqe_bit` (0-255) makes a deliberately "
        "changed device. "
        "Raises ScenarioError when the directory cannot be replayed.");

  m.def("serve",
        [](const std::string& socket, const std::string& config_path, const std::string& trace, bool once,
           bool backdoor, py::object listening) {
          ServeOptions options;
          options.trace_path = trace;
          options.serve_next_client = !once;
          options.backdoor = backdoor;
          const SimConfig cfg = config_path.empty() ? SimConfig{} : load_config_file(config_path);
          py::gil_scoped_release unlocked;
          return serve_device(cfg, socket, options, [&] {
            py::gil_scoped_acquire held;
            if (!listening.is_none()) listening();
          });
        },
        py::arg("socket"), py::arg("config") = "", py::arg("trace") = "", py::arg("once") = false,
        py::arg("backdoor") = true, py::arg("listening") = py::none(),
        "Serves the device model over vfio-user at `socket` in this process until SIGINT or SIGTERM "
        "(or, `once`, until its first client leaves); returns the signal or 0. `config` is a scenario "
        "file, whose config: section describes the device, or such a section alone. Without `backdoor` "
        "the device offers no test hooks (counters, faults, forced MSI-X), as silicon does. `listening` "
        "is called once the socket listens. Raises ScenarioError for a configuration a served model "
        "cannot carry and ServeRefused for a socket it cannot have (another server listens there, or "
        "it cannot be bound), both before `listening`.");

  py::class_<RawVerbs>(m, "RawVerbs",
                       "Verbs on a Session's system as pyverbs has them (irdma_sim.verbs wraps it): PDs, MRs over "
                       "host buffers, QPs through their states, work requests with wr_ids and SGE lists.")
      .def(py::init<HostSession&>(), py::arg("session"), py::keep_alive<1, 2>())
      .def("alloc_pd", &RawVerbs::alloc_pd)
      .def("dealloc_pd", &RawVerbs::dealloc_pd, py::arg("pd"))
      .def("reg_mr",
           [](RawVerbs& v, uint32_t pd, uint64_t length, int access) {
             const RawVerbs::Mr mr = v.reg_mr(pd, length, access);
             py::dict d;
             d["handle"] = mr.handle;
             d["lkey"] = mr.lkey;
             d["rkey"] = mr.rkey;
             d["addr"] = mr.addr;
             d["length"] = mr.length;
             return d;
           },
           py::arg("pd"), py::arg("length"), py::arg("access"))
      .def("dereg_mr", &RawVerbs::dereg_mr, py::arg("mr"))
      .def("write_mr",
           [](RawVerbs& v, uint32_t mr, uint64_t offset, const py::bytes& data) { v.write_mr(mr, offset, data); },
           py::arg("mr"), py::arg("offset"), py::arg("data"))
      .def("read_mr",
           [](RawVerbs& v, uint32_t mr, uint64_t offset, uint64_t length) {
             return py::bytes(v.read_mr(mr, offset, length));
           },
           py::arg("mr"), py::arg("offset"), py::arg("length"))
      .def("create_qp",
           [](RawVerbs& v, uint32_t pd, uint32_t send_cq, uint32_t recv_cq, uint32_t max_send_wr, uint32_t max_recv_wr,
              uint32_t max_send_sge, uint32_t max_recv_sge, int qp_type) {
             RawVerbs::QpInit init;
             init.pd = pd;
             init.send_cq = send_cq;
             init.recv_cq = recv_cq;
             init.cap.max_send_wr = max_send_wr;
             init.cap.max_recv_wr = max_recv_wr;
             init.cap.max_send_sge = max_send_sge;
             init.cap.max_recv_sge = max_recv_sge;
             if (qp_type != ibcore::IB_QPT_RC && qp_type != ibcore::IB_QPT_UD)
               throw py::value_error("qp_type must be IBV_QPT_RC (2) or IBV_QPT_UD (4)");
             init.type = ibcore::ib_qp_type(qp_type);
             const uint32_t num = v.create_qp(init);
             py::dict cap;
             cap["max_send_wr"] = init.cap.max_send_wr;
             cap["max_recv_wr"] = init.cap.max_recv_wr;
             cap["max_send_sge"] = init.cap.max_send_sge;
             cap["max_recv_sge"] = init.cap.max_recv_sge;
             return py::make_tuple(num, cap);
           },
           py::arg("pd"), py::arg("send_cq"), py::arg("recv_cq"), py::arg("max_send_wr"), py::arg("max_recv_wr"),
           py::arg("max_send_sge"), py::arg("max_recv_sge"), py::arg("qp_type"))
      .def("modify_qp",
           [](RawVerbs& v, uint32_t qp, int state, uint32_t dest_qp, uint32_t qkey) {
             if (state != 0 && state != 1 && state != 2 && state != 3 && state != 6)
               throw py::value_error("state must be IBV_QPS_RESET, INIT, RTR, RTS or ERR");
             v.modify_qp(qp, QpState(state), dest_qp, qkey);
           },
           py::arg("qp"), py::arg("state"), py::arg("dest_qp") = 0, py::arg("qkey") = 0)
      .def("qp_state", [](const RawVerbs& v, uint32_t qp) { return int(v.qp_state(qp)); }, py::arg("qp"))
      .def("destroy_qp", &RawVerbs::destroy_qp, py::arg("qp"))
      .def("post_send",
           [](RawVerbs& v, uint32_t qp, const py::list& wrs) {
             auto [out, sgls] = work_requests<ibcore::ib_send_wr>(wrs, [](const py::dict& d, ibcore::ib_send_wr& wr) {
               wr.opcode = ibcore::ib_wr_opcode(field<int>(d, "opcode", ibcore::IB_WR_SEND));
               wr.send_flags = field<int>(d, "send_flags", 0);
               if (wr.opcode == ibcore::IB_WR_SEND_WITH_INV || wr.opcode == ibcore::IB_WR_LOCAL_INV)
                 wr.ex.invalidate_rkey = field<uint32_t>(d, "invalidate_rkey", 0);
               else
                 wr.ex.imm_data = __builtin_bswap32(field<uint32_t>(d, "imm_data", 0));  // __be32
               wr.remote_addr = field<uint64_t>(d, "remote_addr", 0);
               wr.rkey = field<uint32_t>(d, "rkey", 0);
               wr.compare_add = field<uint64_t>(d, "compare_add", 0);
               wr.swap = field<uint64_t>(d, "swap", 0);
               wr.remote_qpn = field<uint32_t>(d, "remote_qpn", 0);
               wr.remote_qkey = field<uint32_t>(d, "remote_qkey", 0);
             });
             v.post_send(qp, std::move(out), sgls);
           },
           py::arg("qp"), py::arg("wrs"))
      .def("post_recv",
           [](RawVerbs& v, uint32_t qp, const py::list& wrs) {
             auto [out, sgls] = work_requests<ibcore::ib_recv_wr>(wrs, [](const py::dict&, ibcore::ib_recv_wr&) {});
             v.post_recv(qp, std::move(out), sgls);
           },
           py::arg("qp"), py::arg("wrs"))
      .def("close", &RawVerbs::close);

  py::class_<HostSession>(m, "Session")
      .def(py::init([](const std::string& config_yaml, const std::string& trace_path) {
             return std::make_unique<HostSession>(std::make_unique<Simulation>(parse_config(config_yaml, "<config>"), trace_path));
           }),
           py::arg("config_yaml") = "", py::arg("trace_path") = "")
      .def("pool_get",
           [](HostSession& s, unsigned nr, int vector, const std::string& ctx) {
             return s.pool_get(nr, vector, poll_ctx_of(ctx));
           },
           py::arg("nr_cqe"), py::arg("comp_vector") = -1, py::arg("poll_ctx") = "softirq")
      .def("pool_put", &HostSession::pool_put, py::arg("cq"), py::arg("nr_cqe"))
      .def("alloc_cq", &HostSession::alloc_cq, py::arg("nr_cqe"), py::arg("comp_vector") = 0)
      .def("free_cq", &HostSession::free_cq, py::arg("cq"))
      .def("resize_cq", &HostSession::resize_cq, py::arg("cq"), py::arg("nr_cqe"))
      .def("req_notify_cq",
           [](HostSession& s, uint32_t cq, bool solicited, bool report_missed) {
             const unsigned flags = (solicited ? ibcore::IB_CQ_SOLICITED : ibcore::IB_CQ_NEXT_COMP) |
                                    (report_missed ? ibcore::IB_CQ_REPORT_MISSED_EVENTS : 0u);
             return s.req_notify_cq(cq, flags);
           },
           py::arg("cq"), py::arg("solicited") = false, py::arg("report_missed") = false)
      .def("cq_events", &HostSession::cq_events, py::arg("cq"))
      .def("set_pool_policy",
           [](HostSession& s, const std::string& p) {
             if (p != "least_used" && p != "kernel_first_fit")
               throw py::value_error("policy must be least_used or kernel_first_fit");
             s.set_pool_policy(p == "least_used" ? ibcore::cq_pool_policy::least_used
                                                 : ibcore::cq_pool_policy::kernel_first_fit);
           })
      .def("create_qp_pair", &HostSession::create_qp_pair, py::arg("cq_a"), py::arg("cq_b"),
           py::arg("sq_depth") = 64, py::arg("rq_depth") = 64, py::arg("max_msg_bytes") = 4096)
      .def("qp_cap",
           [](HostSession& s, uint32_t qp) {
             const ibcore::ib_qp_cap cap = s.qp_cap(qp);
             py::dict d;
             d["max_send_wr"] = cap.max_send_wr;
             d["max_recv_wr"] = cap.max_recv_wr;
             return d;
           },
           py::arg("qp"))
      .def("destroy_qp", &HostSession::destroy_qp)
      .def("post_send", &HostSession::post_send, py::arg("qp"), py::arg("data"),
           py::arg("imm") = py::none(), py::arg("signaled") = true, py::arg("solicited") = false,
           py::arg("invalidate") = py::none())
      .def("post_recv", &HostSession::post_recv, py::arg("qp"))
      .def("post_write", &HostSession::post_write, py::arg("qp"), py::arg("data"),
           py::arg("window_slot") = 0, py::arg("imm") = py::none(), py::arg("signaled") = true)
      .def("post_read", &HostSession::post_read, py::arg("qp"), py::arg("length"),
           py::arg("window_slot") = 0, py::arg("signaled") = true)
      .def("post_fetch_add",
           [](HostSession& s, uint32_t qp, uint64_t add, uint32_t slot, bool signaled) {
             return s.post_atomic(qp, slot, add, std::nullopt, signaled);
           },
           py::arg("qp"), py::arg("add"), py::arg("window_slot") = 0, py::arg("signaled") = true)
      .def("post_compare_swap",
           [](HostSession& s, uint32_t qp, uint64_t compare, uint64_t swap, uint32_t slot,
              bool signaled) {
             return s.post_atomic(qp, slot, std::nullopt, std::make_pair(compare, swap), signaled);
           },
           py::arg("qp"), py::arg("compare"), py::arg("swap"), py::arg("window_slot") = 0,
           py::arg("signaled") = true)
      .def("inject_fault", &HostSession::inject_fault, py::arg("qp"), py::arg("nth"),
           py::arg("flush_minor"))
      .def("window",
           [](HostSession& s, uint32_t qp, uint32_t slot, uint32_t length) {
             return py::bytes(s.window(qp, slot, length));
           },
           py::arg("qp"), py::arg("window_slot"), py::arg("length"))
      .def("set_window",
           [](HostSession& s, uint32_t qp, uint32_t slot, const py::bytes& data) {
             s.set_window(qp, slot, std::string(data));
           },
           py::arg("qp"), py::arg("window_slot"), py::arg("data"))
      .def("poll",
           [](HostSession& s, uint32_t cq, int max_entries) {
             py::list out;
             for (const auto& c : s.poll(cq, max_entries)) out.append(wc_dict(c));
             return out;
           },
           py::arg("cq"), py::arg("max_entries") = 16)
      .def("run_for_ns", &HostSession::run_for_ns)
      .def_property_readonly("now_ps", &HostSession::now_ps)
      .def("counters", &HostSession::counters)
      .def("shutdown", &HostSession::shutdown)
      .def("recover", &HostSession::recover);
}
