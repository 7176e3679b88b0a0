// Scenario files: the shipped ones load; malformed ones fail naming the file, the line and
// the key.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <iterator>
#include <random>
#include <vector>
#include <fstream>
#include <string>

#include "model/testbench/scenario.h"
#include "model/testbench/yaml_reader.h"

namespace {

using namespace irdma_sim::testbench;

// ctest runs tests in parallel processes: each test writes files of its own.
std::string write_temp(const std::string& name, const std::string& text) {
  const std::string path = ::testing::TempDir() +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() +
                           "_" + name;
  std::ofstream(path) << text;
  return path;
}

std::string error_of(const std::string& text) {
  const std::string path = write_temp("bad.yaml", text);
  try {
    load_scenario(path);
  } catch (const ScenarioError& e) {
    return e.what();
  }
  return "";
}

const char* const kMinimal = "name: t\nqp_pairs:\n  - name: p\n";

TEST(Scenario, SmokeLoadsWithItsSettings) {
  const Scenario sc = load_scenario(IRDMA_SIM_SOURCE_DIR "/scenarios/smoke.yaml");
  EXPECT_EQ(sc.name, "smoke");
  EXPECT_EQ(sc.pairs.size(), 2u);
  EXPECT_EQ(sc.config.device.max_cqe, 300u);
  EXPECT_EQ(sc.traffic.imm_every, 4u);
}

TEST(Scenario, DefaultsFillWhatIsAbsent) {
  const Scenario sc = load_scenario(write_temp("min.yaml", kMinimal));
  EXPECT_EQ(sc.pairs[0].sq_depth, 64u);
  EXPECT_EQ(sc.config.sync, SyncMode::approximate);
  EXPECT_EQ(sc.config.device.clock_mhz, 500.0);
}

TEST(Scenario, UnknownKeyNamesFileLineAndKey) {
  const std::string e = error_of(std::string(kMinimal) + "traffic:\n  sends_per_qp: 3\n  bursts: 9\n");
  EXPECT_NE(e.find("bad.yaml:6:"), std::string::npos) << e;
  EXPECT_NE(e.find("'traffic.bursts'"), std::string::npos) << e;
  EXPECT_NE(e.find("sends_per_qp"), std::string::npos) << "lists what is allowed: " << e;
}

TEST(Scenario, NestedUnknownKey) {
  const std::string e = error_of(std::string(kMinimal) + "config:\n  device:\n    clock_hz: 5\n");
  EXPECT_NE(e.find(":6:"), std::string::npos) << e;
  EXPECT_NE(e.find("config.device.clock_hz"), std::string::npos) << e;
}

TEST(Scenario, WrongTypeAndRange) {
  std::string e = error_of(std::string(kMinimal) + "traffic:\n  batch: many\n");
  EXPECT_NE(e.find("'traffic.batch' must be an integer"), std::string::npos) << e;
  EXPECT_NE(e.find(":5:"), std::string::npos) << e;
  e = error_of(std::string(kMinimal) + "traffic:\n  batch: -3\n");
  EXPECT_NE(e.find("traffic.batch"), std::string::npos) << e;
  e = error_of("name: t\nqp_pairs:\n  - sq_depth: 0\n");
  EXPECT_NE(e.find("qp_pairs[0].sq_depth"), std::string::npos) << e;
  e = error_of(std::string(kMinimal) + "config:\n  sync:\n    mode: fast\n");
  EXPECT_NE(e.find("approximate, loose"), std::string::npos) << e;
  e = error_of(std::string(kMinimal) + "traffic:\n  min_bytes: 10\n  max_bytes: 5\n");
  EXPECT_NE(e.find("traffic.max_bytes"), std::string::npos) << e;
}

TEST(Scenario, OpsAreAListOfKnownOperations) {
  const Scenario sc = load_scenario(write_temp("ops.yaml", std::string(kMinimal) +
                                                               "traffic:\n  ops: [read, send]\n"));
  ASSERT_EQ(sc.traffic.ops.size(), 2u);
  EXPECT_EQ(sc.traffic.ops[0], TrafficOp::read);
  std::string e = error_of(std::string(kMinimal) + "traffic:\n  ops: [send, atomics]\n");
  EXPECT_NE(e.find("traffic.ops[1]' must be one of send, write, write_imm, read"), std::string::npos) << e;
  e = error_of(std::string(kMinimal) + "traffic:\n  ops: []\n");
  EXPECT_NE(e.find("non-empty list"), std::string::npos) << e;
}

TEST(Scenario, AtomicsNeedAGen3Device) {
  const std::string ops = "traffic:\n  ops: [send, fetch_add]\n";
  EXPECT_NE(error_of(std::string(kMinimal) + ops).find("atomics need a GEN_3 device"), std::string::npos);
  const Scenario sc = load_scenario(write_temp(
      "gen3.yaml", std::string(kMinimal) + "config:\n  device: {generation: 3}\n" + ops));
  EXPECT_EQ(sc.traffic.ops[1], TrafficOp::fetch_add);
  EXPECT_TRUE(sc.config.device.cqe_64byte) << "GEN_3 defaults to 64-byte CQEs";
}

TEST(Scenario, UdPairsSendDatagramsOnly) {
  const std::string ud = "name: t\nqp_pairs:\n  - {name: p, type: ud}\n";
  EXPECT_TRUE(load_scenario(write_temp("ud.yaml", ud)).pairs[0].ud);
  EXPECT_NE(error_of(ud + "traffic:\n  ops: [send, write]\n").find("datagrams only"), std::string::npos);
  EXPECT_NE(error_of("name: t\nqp_pairs:\n  - {name: p, type: ud, ops: [send, read]}\n").find("datagrams only"),
            std::string::npos);
  EXPECT_NE(error_of(ud + "traffic:\n  max_bytes: 9000\n").find("at most 4096"), std::string::npos);
  EXPECT_NE(error_of("name: t\nqp_pairs:\n  - {type: uc}\n").find("one of rc, ud"), std::string::npos);
}

TEST(Scenario, FaultsNameAPairASideARequestOrRateAndACode) {
  const std::string pairs = "name: t\nqp_pairs:\n  - {name: p}\n  - {name: q}\n  - {name: u, type: ud}\n";
  const Scenario sc = load_scenario(write_temp(
      "f.yaml", pairs + "faults:\n  - {pair: q, side: b, request: 7, code: rem_access_err}\n"
                        "  - {pair: p, rate: 0.25}\n"));
  ASSERT_EQ(sc.faults.size(), 2u);
  EXPECT_EQ(sc.faults[0].pair, 1u);
  EXPECT_EQ(sc.faults[0].side, 1u);
  EXPECT_EQ(sc.faults[0].request, 7);
  EXPECT_EQ(sc.faults[0].flush_code, 3);  // FLUSH_REM_ACCESS_ERR
  EXPECT_EQ(sc.faults[1].request, -1);
  EXPECT_DOUBLE_EQ(sc.faults[1].rate, 0.25);
  EXPECT_EQ(sc.faults[1].flush_code, 1) << "a general flush unless told";
  const auto err = [&](const std::string& fault) { return error_of(pairs + "faults:\n  - " + fault + "\n"); };
  EXPECT_NE(err("{pair: z, request: 1}").find("no QP pair named 'z'"), std::string::npos);
  EXPECT_NE(err("{pair: u, request: 1}").find("RC pairs only"), std::string::npos);
  EXPECT_NE(err("{pair: p}").find("exactly one of 'request' and 'rate'"), std::string::npos);
  EXPECT_NE(err("{pair: p, request: 1, rate: 0.1}").find("exactly one of"), std::string::npos);
  EXPECT_NE(err("{pair: p, rate: 2}").find("faults[0].rate' must be a number in [0"), std::string::npos);
  EXPECT_NE(err("{pair: p, request: 1, code: oops}").find("one of general_err, prot_err"), std::string::npos);
  EXPECT_NE(err("{pair: p, request: 1, side: c}").find("one of a, b"), std::string::npos);
  EXPECT_NE(error_of(pairs + "faults:\n  - {pair: p, request: 1}\n  - {pair: p, side: b, request: 2}\n")
                .find("one fault per QP pair"),
            std::string::npos);
}

TEST(Scenario, PairsMayRunTheirOwnOps) {
  const Scenario sc = load_scenario(write_temp(
      "ops.yaml", "name: t\nqp_pairs:\n  - {name: p, ops: [reg_mr, write, bind_mw, read_inv, nop]}\n"
                  "  - {name: u, type: ud}\ntraffic:\n  ops: [send]\n"));
  EXPECT_EQ(sc.ops_of(0).size(), 5u);
  EXPECT_EQ(sc.ops_of(0)[3], TrafficOp::read_inv);
  EXPECT_EQ(sc.ops_of(1), std::vector<TrafficOp>{TrafficOp::send}) << "traffic.ops by default";
}

TEST(Scenario, KeyOpsMustFollowARegionsLife) {
  const auto ops = [](const std::string& list) { return error_of("name: t\nqp_pairs:\n  - {name: p, ops: " + list + "}\n"); };
  EXPECT_NE(ops("[reg_mr, write]").find("reg_mr again before the region was invalidated"), std::string::npos)
      << "the cycle comes round to reg_mr with the region still registered";
  EXPECT_NE(ops("[bind_mw, reg_mr, local_inv]").find("bind_mw needs a region"), std::string::npos);
  EXPECT_NE(ops("[reg_mr, local_inv, bind_mw]").find("bind_mw needs a region"), std::string::npos);
  EXPECT_EQ(ops("[reg_mr, bind_mw, write, read_inv]"), "");
  EXPECT_NE(ops("[]").find("must be a non-empty list"), std::string::npos);
  EXPECT_NE(error_of("name: t\nqp_pairs:\n  - {name: p, ops: [send, nop]}\nfaults:\n  - {pair: p, request: 3}\n")
                .find("cannot post nop"),
            std::string::npos);
  EXPECT_NE(error_of("name: t\nqp_pairs:\n  - {name: p, ops: [reg_mr, bind_mw, local_inv]}\n"
                     "faults:\n  - {pair: p, request: 3}\n")
                .find("cannot post bind_mw"),
            std::string::npos);
}

TEST(Scenario, OwnCqsAndResizes) {
  const std::string pairs = "name: t\nqp_pairs:\n  - {name: p, cq: own, sq_depth: 8, rq_depth: 8}\n";
  const Scenario sc = load_scenario(write_temp(
      "r.yaml", pairs + "traffic:\n  resize_every: 100\n  resize_cqes: [16, 300]\n"));
  EXPECT_TRUE(sc.pairs[0].own_cqs);
  EXPECT_EQ(sc.traffic.resize_cqes, (std::vector<uint32_t>{16, 300}));
  EXPECT_NE(error_of(pairs + "traffic:\n  resize_every: 100\n").find("needs the sizes"), std::string::npos);
  EXPECT_NE(error_of(pairs + "traffic:\n  resize_every: 100\n  resize_cqes: [15]\n").find("below pair p's sq_depth + rq_depth"),
            std::string::npos);
  EXPECT_NE(error_of(pairs + "traffic:\n  resize_cqes: [16, x]\n").find("resize_cqes[1]' must be an integer"),
            std::string::npos);
  EXPECT_NE(error_of("name: t\nqp_pairs:\n  - {name: p, cq: shared}\n").find("one of pool, own"),
            std::string::npos);
}

TEST(Scenario, StructuralErrors) {
  EXPECT_NE(error_of("qp_pairs:\n  - name: p\n").find("'name' is required"), std::string::npos);
  EXPECT_NE(error_of("name: t\n").find("at least one pair"), std::string::npos);
  EXPECT_NE(error_of("name: t\nqp_pairs: 3\n").find("must be a list"), std::string::npos);
  EXPECT_NE(error_of("name: t\nqp_pairs:\n  - name: a\n  - name: a\n").find(":4:5: key 'name': two QP pairs are named 'a'"),
            std::string::npos);
  EXPECT_NE(error_of("name: t\nqp_pairs:\n  - name: pair1\n  - sq_depth: 8\n").find("named 'pair1'"),
            std::string::npos) << "a default name collides too";
  EXPECT_NE(error_of("- a\n- b\n").find("must be a mapping"), std::string::npos);
  const std::string syntax = error_of("name: [unclosed\n");
  EXPECT_NE(syntax.find("YAML syntax error"), std::string::npos) << syntax;
  EXPECT_NE(syntax.find("bad.yaml:"), std::string::npos) << syntax;
}

TEST(Scenario, MissingFile) {
  try {
    load_scenario("/nonexistent/x.yaml");
    FAIL();
  } catch (const ScenarioError& e) {
    EXPECT_NE(std::string(e.what()).find("/nonexistent/x.yaml: cannot read"), std::string::npos);
  }
}

// Mutants of every shipped scenario: a value replaced by something hostile, a line dropped
// or repeated. Each must load or fail with a ScenarioError naming the file; any other
// exception (or a crash) is a bug in the loader.
TEST(Scenario, MutantsOfTheShippedScenariosLoadOrFailNamingTheFile) {
  static const char* const kHostile[] = {
      "-1", "0", "1", "4294967296", "18446744073709551616", "-9223372036854775809", "1e30", "nan",
      "1.5", "abc", "''", "~", "[]", "{}", "[1, [2]]", "{a: 1}", "!!binary aGk=", "*nope", "&a x",
      "\"\\x00\"", "0x7fffffff", "yes"};
  std::mt19937 rng(7);
  size_t loaded = 0, refused = 0;
  std::vector<std::filesystem::path> files;  // sorted: the same mutants on every machine
  for (const auto& entry : std::filesystem::directory_iterator(IRDMA_SIM_SOURCE_DIR "/scenarios"))
    files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  for (const auto& file : files) {
    std::ifstream in(file);
    std::vector<std::string> lines;
    for (std::string l; std::getline(in, l);) lines.push_back(l);
    for (int m = 0; m < 120; m++) {
      std::vector<std::string> mutant = lines;
      const size_t at = rng() % lines.size();
      const size_t colon = mutant[at].find(": ");
      switch (rng() % 4) {
        case 0: mutant.erase(mutant.begin() + long(at)); break;
        case 1: mutant.insert(mutant.begin() + long(at), mutant[at]); break;
        default:
          if (colon == std::string::npos) continue;
          mutant[at] = mutant[at].substr(0, colon + 2) + kHostile[rng() % std::size(kHostile)];
      }
      std::string text;
      for (const std::string& l : mutant) text += l + "\n";
      const std::string path = write_temp("mutant.yaml", text);
      try {
        load_scenario(path);
        loaded++;
      } catch (const ScenarioError& e) {
        refused++;
        EXPECT_EQ(std::string(e.what()).rfind(path, 0), 0u) << e.what() << "\n" << text;
      } catch (const std::exception& e) {
        ADD_FAILURE() << "not a ScenarioError: " << e.what() << "\n" << text;
      }
    }
  }
  std::printf("mutants: %zu loaded, %zu refused\n", loaded, refused);
  EXPECT_GT(refused, 500u);
  EXPECT_GT(loaded, 100u) << "some mutants are harmless: a fuzz that refuses all is too blunt";
}

// What the configured device and host cannot hold is found before the run, naming the
// key, the limit and what was asked.
TEST(Scenario, WhatTheDeviceCannotHoldIsAScenarioError) {
  std::string pairs = "name: t\nqp_pairs:\n";
  for (int i = 0; i < 512; i++) pairs += "  - {name: p" + std::to_string(i) + ", sq_depth: 4, rq_depth: 4}\n";
  std::string e = error_of(pairs);
  EXPECT_NE(e.find("bad.yaml:3:"), std::string::npos) << e;
  EXPECT_NE(e.find("512 QP pairs take 1024 QP ids"), std::string::npos) << e;
  EXPECT_NE(e.find("config.device.max_qp = 1024 (the default) holds 511 pairs"), std::string::npos) << e;
  EXPECT_EQ(error_of(pairs.substr(0, pairs.rfind("  - "))), "") << "511 pairs fit";

  e = error_of("name: t\nconfig: {device: {max_cqe: 1}}\nqp_pairs:\n  - {name: p}\n");
  EXPECT_NE(e.find("bad.yaml:4:"), std::string::npos) << e;
  EXPECT_NE(e.find("128 entries (sq_depth + rq_depth); config.device.max_cqe = 1 caps a CQ"), std::string::npos) << e;
  e = error_of("name: t\nconfig: {device: {max_cqe: 500}}\nqp_pairs:\n  - {name: p, cq: own}\n"
               "traffic: {resize_every: 5, resize_cqes: [200, 600]}\n");
  EXPECT_NE(e.find("'traffic.resize_cqes': a resize to 600 entries"), std::string::npos) << e;
  e = error_of("name: t\nconfig: {device: {max_cq: 6}}\nqp_pairs:\n  - {name: p, cq: own}\n  - {name: q, cq: own}\n");
  EXPECT_NE(e.find("take at least 4 CQ ids (4 own CQs, past the 3 the driver keeps); config.device.max_cq = 6"),
            std::string::npos) << e;
  e = error_of("name: t\nconfig: {device: {max_stags: 2}}\nqp_pairs:\n  - {name: p, ops: [reg_mr, local_inv]}\n");
  EXPECT_NE(e.find("memory keys take 2 STags"), std::string::npos) << e;
  EXPECT_NE(e.find("config.device.max_stags = 2"), std::string::npos) << e;
  e = error_of("name: t\nconfig: {host: {memory_mb: 1}}\nqp_pairs:\n  - {name: p}\n");
  EXPECT_NE(e.find("bad.yaml:2:"), std::string::npos) << e;
  EXPECT_NE(e.find("'config.host.memory_mb': the workload's message buffers take 3 MiB"), std::string::npos) << e;
}

// What would otherwise do nothing, silently, is an error.
TEST(Scenario, AskingForWhatCannotHappenIsAnError) {
  std::string e = error_of(std::string(kMinimal) + "traffic:\n  sends_per_qp: 10\n  sends_per_qp: 20\n");
  EXPECT_NE(e.find("bad.yaml:6:3: key 'traffic.sends_per_qp' is given twice (first at line 5)"), std::string::npos) << e;
  e = error_of("name: t\nname: u\nqp_pairs:\n  - {name: p}\n");
  EXPECT_NE(e.find("key 'name' is given twice"), std::string::npos) << e;
  e = error_of("name: t\nqp_pairs:\n  - {name: p, sq_depth: 8, sq_depth: 9}\n");
  EXPECT_NE(e.find("key 'qp_pairs[0].sq_depth' is given twice"), std::string::npos) << e;

  e = error_of(std::string(kMinimal) + "traffic: {sends_per_qp: 1000}\nfaults:\n  - {pair: p, request: 5000}\n");
  EXPECT_NE(e.find("key 'faults[0].request': 5000 is past the QP's last request (traffic.sends_per_qp = 1000: "
                   "requests 0 to 999)"),
            std::string::npos) << e;
  EXPECT_EQ(error_of(std::string(kMinimal) + "traffic: {sends_per_qp: 1000}\nfaults:\n  - {pair: p, request: 999}\n"), "");

  e = error_of(std::string(kMinimal) + "traffic: {resize_every: 10, resize_cqes: [500]}\n");
  EXPECT_NE(e.find("key 'traffic.resize_every': no pair has CQs of its own"), std::string::npos) << e;
  e = error_of("name: t\nqp_pairs:\n  - {name: p, cq: own}\ntraffic: {resize_cqes: [500]}\n");
  EXPECT_NE(e.find("key 'traffic.resize_cqes' needs traffic.resize_every"), std::string::npos) << e;
  e = error_of(std::string(kMinimal) + "traffic: {idle_gap_ns: 1000}\n");
  EXPECT_NE(e.find("key 'traffic.idle_gap_ns' needs traffic.burst"), std::string::npos) << e;
  e = error_of(std::string(kMinimal) + "traffic: {burst: 8}\n");
  EXPECT_NE(e.find("key 'traffic.burst' needs traffic.idle_gap_ns"), std::string::npos) << e;
}

// Many pairs alike take one entry: count: N names them <name>0 .. <name>N-1.
TEST(Scenario, ACountStandsForManyPairsAlike) {
  const Scenario sc = load_scenario(write_temp("many.yaml",
                                               "name: t\nqp_pairs:\n  - {name: bulk, count: 64, sq_depth: 16}\n"
                                               "  - {name: solo, cq: own}\n  - {count: 2}\n"
                                               "faults:\n  - {pair: bulk63, request: 3}\n"));
  ASSERT_EQ(sc.pairs.size(), 67u);
  EXPECT_EQ(sc.pairs[0].name, "bulk0");
  EXPECT_EQ(sc.pairs[63].name, "bulk63");
  EXPECT_EQ(sc.pairs[63].sq_depth, 16u);
  EXPECT_EQ(sc.pairs[64].name, "solo");
  EXPECT_EQ(sc.pairs[65].name, "pair65");  // unnamed: pair<index>
  EXPECT_EQ(sc.pairs[66].name, "pair66");
  EXPECT_EQ(sc.faults[0].pair, 63u);
  std::string e = error_of("name: t\nqp_pairs:\n  - {name: b, count: 12}\n  - {name: b1}\n");
  EXPECT_NE(e.find("two QP pairs are named 'b1'"), std::string::npos) << e;
  e = error_of("name: t\nqp_pairs:\n  - {name: b, count: 0}\n");
  EXPECT_NE(e.find("'qp_pairs[0].count' must be an integer in [1, 100000]"), std::string::npos) << e;
}

}  // namespace
