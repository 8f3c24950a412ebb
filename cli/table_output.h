// The `flowrt run` table: one row per context (flow, status, run time, steps), a line per
// error, then the skipped starts and the locks (the lock lines flowrt inspect prints too). For people; the JSON document is for programs.
#pragma once

#include <ostream>
#include <string>
#include <vector>

#include "cli/commands.h"
#include "runtime/engine.h"

namespace flowrt::cli {

// Which contexts the table lists: of flow `flow` and status `status` ("" for any).
struct TableFilter {
  std::string flow;
  std::string status;
};
// The filter --flow and --status ask for (flowrt run and inspect); bad usage (UsageError)
// when --status names no context status, which would list nothing without saying why.
TableFilter table_filter(const CommandArgs& args);

void print_table(const Engine& engine, const std::vector<std::string>& errors, std::ostream& out,
                 const TableFilter& filter = {});
// `s` followed by spaces up to `width` terminal columns (one per code point).
std::string pad_to_width(std::string s, size_t width);
// The lines of each lock (Engine::locks() entries): holders, then waiters in queue order.
void print_locks(const Value& locks, std::ostream& out);

}  // namespace flowrt::cli
