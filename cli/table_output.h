// The `flowrt run` table: one row per context (flow, status, run time, steps), a line per
// error, then the skipped starts. For people; the JSON document is for programs.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "runtime/engine.h"

namespace flowrt::cli {

// Which contexts the table lists: of flow `flow` and status `status` ("" for any).
struct TableFilter {
  std::string flow;
  std::string status;
};

void print_table(const Engine& engine, const std::vector<std::string>& errors, std::ostream& out,
                 const TableFilter& filter = {});

}  // namespace flowrt::cli
