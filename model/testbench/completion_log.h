// completions.jsonl: one object per ib_wc the driver delivered, in delivery order, with
// the struct ib_wc field names and Linux's numeric values.
#pragma once

#include <cstdint>
#include <cstdio>
#include <string>

#include "driver/core/ib_verbs.h"
#include "model/testbench/json_writer.h"

namespace irdma_sim::testbench {

class CompletionLog {
 public:
  CompletionLog() = default;
  ~CompletionLog();
  CompletionLog(const CompletionLog&) = delete;
  CompletionLog& operator=(const CompletionLog&) = delete;

  // Throws std::runtime_error when the file cannot be created. Without open(), nothing is
  // written.
  void open(const std::string& path);
  void close();
  // `wr_id` is the work request's id as the scenario numbered it (ib_wc carries the
  // consumer's wr_cqe pointer in that union, which is no stable identifier); `posted_ps`
  // when it was posted.
  void write(uint64_t t_ps, uint64_t posted_ps, uint32_t cq, uint64_t wr_id, uint32_t qp_num,
             const ibcore::ib_wc& wc);

 private:
  std::FILE* out_ = nullptr;
  JsonWriter line_;  // reused: a line costs no allocation
};

}  // namespace irdma_sim::testbench
