// The run outputs' JSON emitter: escapes, numbers at their limits, a writer reused per line.
#include <gtest/gtest.h>

#include <cstdint>
#include <limits>
#include <string>

#include "model/testbench/json_writer.h"

namespace {

using irdma_sim::testbench::JsonWriter;

TEST(JsonWriter, EscapesWhatJsonForbidsInStringsAndKeysAndNothingElse) {
  JsonWriter j;
  j.begin_object().str("plain", "name: pair_a/0 é").str("q\"k", std::string("a\"b\\c\nd\te\x01" "f\x1f", 12)).end_object();
  EXPECT_EQ(j.text(), R"({"plain":"name: pair_a/0 é","q\"k":"a\"b\\c\nd\te\u0001f\u001f"})");
}

TEST(JsonWriter, NumbersAtTheirLimitsAndAWriterReusedLineByLine) {
  JsonWriter j;
  j.begin_object()
      .num("max", std::numeric_limits<uint64_t>::max())
      .num("zero", 0)
      .inum("min", std::numeric_limits<int64_t>::min())
      .inum("neg", -1)
      .end_object();
  EXPECT_EQ(j.text(), R"({"max":18446744073709551615,"zero":0,"min":-9223372036854775808,"neg":-1})");
  j.clear();
  j.begin_object().num("a", 1).begin_array("b").num(nullptr, 2).num(nullptr, 3).end_array().end_object();
  EXPECT_EQ(j.text(), R"({"a":1,"b":[2,3]})");
}

}  // namespace
