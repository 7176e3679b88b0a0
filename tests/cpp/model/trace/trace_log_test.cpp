// The transaction log streams: events wait only until the global time passes them. Its two
// formats say the same: trace.bin read back is trace.jsonl byte for byte.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "model/trace/trace_log.h"
#include "model/trace/trace_reader.h"

namespace {

using irdma_sim::trace::TraceLog;
using irdma_sim::trace::TraceReader;

std::string slurp(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::stringstream s;
  s << in.rdbuf();
  return s.str();
}

// The lines either format's file stands for.
std::vector<std::string> lines_of(const std::string& path) {
  std::vector<std::string> lines;
  std::string line;
  if (TraceLog::format_for(path) == TraceLog::Format::jsonl) {
    std::ifstream in(path);
    while (std::getline(in, line)) lines.push_back(line);
  } else {
    TraceReader in(path);
    while (in.next(line)) lines.push_back(line);
  }
  return lines;
}

std::string converted(const std::string& bin_path) {
  const std::string out = bin_path + ".converted.jsonl";
  irdma_sim::trace::convert_to_jsonl(bin_path, out);
  std::string text = slurp(out);
  std::remove(out.c_str());
  return text;
}

class TraceLogFormats : public ::testing::TestWithParam<const char*> {
 protected:
  std::string path(const std::string& name) const { return ::testing::TempDir() + name + GetParam(); }
};

// 10^6 events, each logged up to 5 us ahead of a global time that moves 10 ns per event
// (as decoupled initiators log them): the file comes out sorted, and the log never holds
// more than the events of its reorder window.
TEST_P(TraceLogFormats, StreamsInTimeOrderHoldingOnlyTheReorderWindow) {
  const std::string file = path("trace_log_test");
  uint64_t now = 0;
  size_t most_held = 0;
  {
    TraceLog log;
    log.open(file, [&] { return now; });
    std::mt19937_64 rng(1);
    for (int i = 0; i < 1'000'000; i++) {
      now += 10'000;
      log.event(now + rng() % 5'000'000, "e").num("i", uint64_t(i));
      most_held = std::max(most_held, log.events_held());
    }
    log.close();
    EXPECT_EQ(log.events_written(), 1'000'000u);
    EXPECT_EQ(log.late_events(), 0u);
  }
  EXPECT_LT(most_held, 5'000u) << "a window of 5 us at 100 events per us, and one look's worth";
  uint64_t last = 0, lines = 0;
  for (const std::string& line : lines_of(file)) {
    const uint64_t t = std::stoull(line.substr(line.find(':') + 1));
    ASSERT_LE(last, t) << "line " << lines;
    last = t;
    lines++;
  }
  EXPECT_EQ(lines, 1'000'000u);
  std::remove(file.c_str());
}

TEST_P(TraceLogFormats, EventsOfOneTimeKeepTheOrderTheyWereLoggedIn) {
  const std::string file = path("trace_log_order_test");
  {
    TraceLog log;
    log.open(file, [] { return uint64_t(0); });
    const std::pair<uint64_t, const char*> events[] = {{5, "a"}, {3, "b"}, {5, "c"}, {3, "d"}, {5, "e"}, {4, "f"}};
    for (const auto& [t, name] : events) log.event(t, name);
    log.close();
  }
  std::string order;
  for (const std::string& line : lines_of(file)) order += line.substr(line.find("\"ev\":\"") + 6, 1);
  EXPECT_EQ(order, "bdface");
  std::remove(file.c_str());
}

// Events logged mostly in time order, with runs of equal times and a tenth logged late,
// over many looks at the window: what is written is their stable sort by time.
TEST_P(TraceLogFormats, LateEventsAmongInOrderOnesKeepTheOrderOfEqualTimes) {
  const std::string file = path("trace_log_stable_test");
  std::vector<std::pair<uint64_t, uint64_t>> logged;  // time, index
  {
    TraceLog log;
    log.open(file, [] { return uint64_t(0); });
    std::mt19937_64 rng(7);
    for (uint64_t i = 0; i < 50'000; i++) {
      const uint64_t base = i / 8 * 10;
      const uint64_t t = rng() % 10 == 0 ? base - std::min<uint64_t>(base, rng() % 300 / 10 * 10) : base;
      log.event(t, "e").num("i", i);
      logged.emplace_back(t, i);
    }
    log.close();
  }
  std::stable_sort(logged.begin(), logged.end(), [](const auto& a, const auto& b) { return a.first < b.first; });
  const std::vector<std::string> lines = lines_of(file);
  ASSERT_EQ(lines.size(), logged.size());
  for (size_t n = 0; n < lines.size(); n++)
    ASSERT_EQ(lines[n], "{\"t_ps\":" + std::to_string(logged[n].first) + ",\"ev\":\"e\",\"i\":" +
                            std::to_string(logged[n].second) + "}")
        << "line " << n;
  std::remove(file.c_str());
}

// An event logged before one already written is a model bug: it is kept (written at
// once) and counted, never dropped.
TEST_P(TraceLogFormats, AnEventFromThePastIsWrittenAndCounted) {
  const std::string file = path("trace_log_late");
  uint64_t now = 0;
  TraceLog log;
  log.open(file, [&] { return now; });
  log.event(100, "a");
  now = 200;
  log.flush();
  log.event(50, "late");
  log.event(300, "b");
  log.close();
  EXPECT_EQ(log.late_events(), 1u);
  EXPECT_EQ(log.events_written(), 3u);
  const std::vector<std::string> lines = lines_of(file);
  ASSERT_EQ(lines.size(), 3u);
  EXPECT_EQ(lines[1], R"({"t_ps":50,"ev":"late"})");
  std::remove(file.c_str());
}

// A write that fails (a full disk) leaves the file short of events: said when the log
// closes, never silent.
TEST(TraceLog, AWriteThatFailedIsSaidWhenTheLogCloses) {
  TraceLog log;
  log.open("/dev/full", [] { return uint64_t(0); }, TraceLog::Format::binary);
  for (uint64_t i = 0; i < 100'000; i++) log.event(i, "e").num("i", i);
  try {
    log.close();
    FAIL() << "closing a log whose writes failed must throw";
  } catch (const std::runtime_error& e) {
    EXPECT_NE(std::string(e.what()).find("writing the trace /dev/full failed: No space left on device"),
              std::string::npos)
        << e.what();
  }
  EXPECT_FALSE(log.enabled());
}

INSTANTIATE_TEST_SUITE_P(BinaryAndJsonl, TraceLogFormats, ::testing::Values(".bin", ".jsonl"),
                         [](const auto& info) { return std::string(info.param + 1); });

// Every kind of field, shapes of one name that differ, a late event, times that go back:
// what trace.jsonl says is written out here, and trace.bin converts to it byte for byte.
const char kContract[] =
    R"({"t_ps":0,"ev":"cqp_start","sq_size":64})" "\n"
    R"({"t_ps":7,"ev":"mmio_write","bar":0,"off":"0x50a100","len":4,"value":"0x0"})" "\n"
    R"({"t_ps":7,"ev":"mmio_write","off":"0xffffffffffffffff","len":4,"value":"0x2000"})" "\n"
    R"({"t_ps":9,"ev":"cqe","cq":3,"slot":601,"addr":"0x100004000","bytes":"00ff10a5"})" "\n"
    R"({"t_ps":18446744073709551615,"ev":"dma_error","op":"write","addr":"0x1","len":18446744073709551615})" "\n"
    R"({"t_ps":12,"ev":"function_reset","cause":""})" "\n"
    R"({"t_ps":13,"ev":"cqe","cq":3,"slot":602,"addr":"0x100004020","bytes":""})" "\n";

void log_the_contract(TraceLog& log, uint64_t& now) {
  const uint8_t bytes[] = {0x00, 0xff, 0x10, 0xa5};
  log.event(9, "cqe").num("cq", 3).num("slot", 601).addr("addr", 0x100004000).hex("bytes", bytes, 4);
  log.event(7, "mmio_write").num("bar", 0).addr("off", 0x50a100).num("len", 4).addr("value", 0);
  log.event(7, "mmio_write").addr("off", UINT64_MAX).num("len", 4).addr("value", 0x2000);
  log.event(0, "cqp_start").num("sq_size", 64);
  log.event(UINT64_MAX, "dma_error").str("op", "write").addr("addr", 1).num("len", UINT64_MAX);
  now = UINT64_MAX;
  log.flush();
  log.event(12, "function_reset").str("cause", "");
  log.event(13, "cqe").num("cq", 3).num("slot", 602).addr("addr", 0x100004020).hex("bytes", bytes, 0);
}

TEST(TraceLog, TheJsonlContract) {
  for (const char* ext : {".jsonl", ".bin"}) {
    const std::string file = ::testing::TempDir() + "trace_log_contract" + ext;
    uint64_t now = 0;
    TraceLog log;
    log.open(file, [&] { return now; });
    log_the_contract(log, now);
    log.close();
    EXPECT_EQ(log.late_events(), 2u);
    EXPECT_EQ(std::string(ext) == ".jsonl" ? slurp(file) : converted(file), kContract) << ext;
    std::remove(file.c_str());
  }
}

TEST(TraceLog, TheBinaryTraceIsAQuarterOfTheJsonl) {
  size_t bytes[2];
  const char* exts[] = {".jsonl", ".bin"};
  for (int f = 0; f < 2; f++) {
    const std::string file = ::testing::TempDir() + "trace_log_size" + exts[f];
    TraceLog log;
    log.open(file, [] { return uint64_t(0); });
    uint8_t cqe[32] = {1, 2, 3};
    for (uint64_t i = 0; i < 10'000; i++) {
      const uint64_t t = 1'000'000 + i * 150'000;
      log.event(t, "mmio_write").addr("off", 0x50a100).num("len", 4).addr("value", i);
      log.event(t + 5'000, "dma_read").addr("addr", 0x100008000 + 64 * i).num("len", 64);
      log.event(t + 9'000, "dma_write").addr("addr", 0x200000000 + 2048 * i).num("len", 176);
      log.event(t + 9'500, "cqe").num("cq", 2).num("slot", i % 602).addr("addr", 0x100004000 + 32 * (i % 602)).hex("bytes", cqe, 32);
      log.event(t + 9'900, "msix").addr("addr", 0xfee00000).num("data", 1);
    }
    log.close();
    bytes[f] = std::filesystem::file_size(file);
    std::remove(file.c_str());
  }
  EXPECT_LT(bytes[1] * 4, bytes[0]) << bytes[1] << " binary bytes, " << bytes[0] << " of JSONL";
}

// The reader's buffer starts small and grows for a record that fills it: values of the
// largest size a record may hold, among small ones.
TEST(TraceReader, RecordsLargerThanItsBufferAreRead) {
  const std::string file = ::testing::TempDir() + "trace_reader_large.bin";
  const std::vector<uint8_t> big(irdma_sim::trace::format::kMaxValueBytes, 0xa5);
  {
    TraceLog log;
    log.open(file, [] { return uint64_t(0); });
    for (uint64_t i = 0; i < 5; i++) {
      log.event(2 * i, "small").num("i", i);
      log.event(2 * i + 1, "big").hex("bytes", big.data(), big.size());
    }
    log.close();
  }
  const std::vector<std::string> lines = lines_of(file);
  ASSERT_EQ(lines.size(), 10u);
  EXPECT_EQ(lines[3].size(), std::string(R"({"t_ps":3,"ev":"big","bytes":""})").size() + 2 * big.size());
  EXPECT_EQ(lines[3].substr(lines[3].size() - 6), "a5a5\"}");
  EXPECT_EQ(lines[8], R"({"t_ps":8,"ev":"small","i":4})");
  std::remove(file.c_str());
}

// A trace.bin written and then harmed: the reader says what it found and where, having
// given every event before the harm.
class HarmedTrace : public ::testing::Test {
 protected:
  void SetUp() override {
    TraceLog log;
    log.open(bin_, [] { return uint64_t(0); });
    for (uint64_t i = 0; i < 100; i++) log.event(i, "e").num("i", i).str("s", "x");
    log.close();
    bytes_ = slurp(bin_);
  }
  void TearDown() override { std::remove(bin_.c_str()); }
  void rewrite(const std::string& bytes) { std::ofstream(bin_, std::ios::binary | std::ios::trunc) << bytes; }
  // The message the reader's error gives; the events before it, in `read`.
  std::string error_reading(uint64_t& read) {
    read = 0;
    try {
      TraceReader in(bin_);
      std::string line;
      while (in.next(line)) read++;
    } catch (const std::runtime_error& e) {
      return e.what();
    }
    return "";
  }
  // CTest runs these side by side, each in its own process.
  const std::string bin_ = ::testing::TempDir() + "harmed_trace_" +
                           ::testing::UnitTest::GetInstance()->current_test_info()->name() + ".bin";
  std::string bytes_;
};

// A killed run leaves its trace cut at any byte, between records too: only a trace that
// reaches its end record is whole.
TEST_F(HarmedTrace, CutAnywhereGivesEveryWholeEventBeforeTheCutAndSaysWhere) {
  // [header 12][schema 10][event 5] x 100 [end 1]
  ASSERT_EQ(bytes_.size(), 12u + 10 + 5 * 100 + 1);
  uint64_t read;
  EXPECT_EQ(error_reading(read), "");
  EXPECT_EQ(read, 100u);
  for (size_t cut = 0; cut < bytes_.size(); cut++) {
    rewrite(bytes_.substr(0, cut));
    const std::string error = error_reading(read);
    const size_t whole = cut < 22 ? 0 : std::min<size_t>(100, (cut - 22) / 5);
    EXPECT_EQ(read, whole) << "cut at " << cut;
    const bool between_records = cut == 12 || cut == 22 + 5 * whole;
    const char* says = cut == 0                  ? "is empty (was the run that wrote it killed before it began?)"
                       : cut < 8                 ? "is not a binary irdma-sim trace"
                       : cut < 12                ? "is a binary trace of format version (cut short)"
                       : between_records         ? "the file ends before the trace does (was the run that wrote it killed?)"
                                                 : "the file ends in the middle of a record (was the run that wrote it killed?)";
    EXPECT_NE(error.find(says), std::string::npos) << "cut at " << cut << ": " << error;
    if (cut >= 12) {
      EXPECT_NE(error.find("after " + std::to_string(whole) + " events"), std::string::npos) << error;
    }
  }
  rewrite(bytes_ + "x");
  EXPECT_NE(error_reading(read).find("bytes after the end of the trace"), std::string::npos);
}

TEST_F(HarmedTrace, AnotherVersionIsRefusedNamingIt) {
  std::string other = bytes_;
  other[8] = 2;
  rewrite(other);
  uint64_t read;
  EXPECT_EQ(error_reading(read), bin_ + " is a binary trace of format version 2; this irdma-sim reads version 1");
}

TEST_F(HarmedTrace, WhatIsNoBinaryTraceIsRefused) {
  rewrite(R"({"t_ps":0,"ev":"cqp_start","sq_size":64})" "\n");
  uint64_t read;
  EXPECT_NE(error_reading(read).find("is not a binary irdma-sim trace"), std::string::npos);
  rewrite("");
  EXPECT_NE(error_reading(read).find("is empty (was the run that wrote it killed before it began?)"), std::string::npos);
}

TEST_F(HarmedTrace, AnEventOfNoSchemaOrABadKindIsMalformed) {
  std::string bad = bytes_;
  bad[22] = 10;  // the first event's tag: schema 9's
  rewrite(bad);
  uint64_t read;
  EXPECT_EQ(error_reading(read), bin_ + ": an event of schema 9, which no record before it defines at byte 22, after 0 events");
  bad = bytes_;
  bad[20] = '"';  // the second key, "s"
  rewrite(bad);
  EXPECT_NE(error_reading(read).find("a malformed schema record at byte 12"), std::string::npos);
  bad = bytes_;
  bad[16] = 7;  // the first field's kind
  rewrite(bad);
  EXPECT_NE(error_reading(read).find("a malformed schema record at byte 12"), std::string::npos);
}

}  // namespace
