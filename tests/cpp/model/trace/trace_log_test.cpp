// The transaction log streams: events wait only until the global time passes them.
#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <random>
#include <string>

#include "model/trace/trace_log.h"

namespace {

using irdma_sim::trace::TraceLog;

// 10^6 events, each logged up to 5 us ahead of a global time that moves 10 ns per event
// (as decoupled initiators log them): the file comes out sorted, and the log never holds
// more than the events of its reorder window.
TEST(TraceLog, StreamsInTimeOrderHoldingOnlyTheReorderWindow) {
  const std::string path = ::testing::TempDir() + "trace_log_test.jsonl";
  uint64_t now = 0;
  size_t most_held = 0;
  {
    TraceLog log;
    log.open(path, [&] { return now; });
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
  std::ifstream in(path);
  std::string line;
  uint64_t last = 0, lines = 0;
  while (std::getline(in, line)) {
    const uint64_t t = std::stoull(line.substr(line.find(':') + 1));
    ASSERT_LE(last, t) << "line " << lines;
    last = t;
    lines++;
  }
  EXPECT_EQ(lines, 1'000'000u);
  std::remove(path.c_str());
}

TEST(TraceLog, EventsOfOneTimeKeepTheOrderTheyWereLoggedIn) {
  const std::string path = ::testing::TempDir() + "trace_log_order_test.jsonl";
  {
    TraceLog log;
    log.open(path, [] { return uint64_t(0); });
    const std::pair<uint64_t, const char*> events[] = {{5, "a"}, {3, "b"}, {5, "c"}, {3, "d"}, {5, "e"}, {4, "f"}};
    for (const auto& [t, name] : events) log.event(t, name);
    log.close();
  }
  std::ifstream in(path);
  std::string line, order;
  while (std::getline(in, line)) order += line.substr(line.find("\"ev\":\"") + 6, 1);
  EXPECT_EQ(order, "bdface");
  std::remove(path.c_str());
}

// An event logged before one already written is a model bug: it is kept (written at
// once) and counted, never dropped.
TEST(TraceLog, AnEventFromThePastIsWrittenAndCounted) {
  const std::string path = ::testing::TempDir() + "trace_log_late.jsonl";
  uint64_t now = 0;
  TraceLog log;
  log.open(path, [&] { return now; });
  log.event(100, "a");
  now = 200;
  log.flush();
  log.event(50, "late");
  log.event(300, "b");
  log.close();
  EXPECT_EQ(log.late_events(), 1u);
  EXPECT_EQ(log.events_written(), 3u);
  std::remove(path.c_str());
}

}  // namespace
