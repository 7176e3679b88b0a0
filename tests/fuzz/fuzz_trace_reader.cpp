// libFuzzer target: the binary trace reader (irdma-sim trace convert, and every reader of a
// run's trace.bin). Whatever the bytes, it gives lines or refuses with TraceRefused or a
// std::runtime_error naming where; it never crashes, hangs or reads past the input.
#include <cstdint>
#include <cstdio>
#include <exception>
#include <string>

#include "model/trace/trace_reader.h"
#include "tests/fuzz/fuzz_input.h"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  // fmemopen refuses an empty buffer: an empty file is what it stands for.
  static const uint8_t kNothing = 0;
  std::FILE* in = fmemopen(const_cast<uint8_t*>(size ? data : &kNothing), size ? size : 1, "rb");
  if (!in) irdma_sim::fuzz::broken("fuzz_trace_reader", "fmemopen failed");
  if (!size) std::fgetc(in);
  try {
    irdma_sim::trace::TraceReader reader(in, "input");
    std::string line;
    uint64_t lines = 0;
    while (reader.next(line)) {
      if (line.size() < 2 || line.front() != '{' || line.back() != '}')
        irdma_sim::fuzz::broken("fuzz_trace_reader", "a line that is no JSON object: " + line);
      for (const char c : line)
        if (c < 0x20 || c > 0x7e || c == '\\')
          irdma_sim::fuzz::broken("fuzz_trace_reader", "a line with text needing a JSON escape: " + line);
      lines++;
    }
    if (lines != reader.events_read()) irdma_sim::fuzz::broken("fuzz_trace_reader", "lines and events disagree");
  } catch (const std::runtime_error&) {  // TraceRefused among them
  } catch (const std::exception& e) {
    irdma_sim::fuzz::broken("fuzz_trace_reader", std::string("not a runtime_error: ") + e.what());
  }
  return 0;
}
