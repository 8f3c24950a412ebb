// One look at the engine, as the simulation's checks read it: the `flowrt run` document
// ({"contexts", "skipped", "records", "locks"}) and the clock. Plain JSON, so the checks
// can also be fed a hand-made document (checker_test.cpp). Violation is what a check
// reports: the invariant, what broke, and the offending record.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "plans/time.h"
#include "plans/value.h"

namespace flowrt::sim {

struct Violation {
  std::string invariant;  // "(a) every trigger match ...", "(c) locks", ...
  std::string message;
  std::string dump;  // the offending record(s), JSON
};
using Violations = std::vector<Violation>;
// The first `max` violations, each with its invariant, message and record.
std::string describe(const Violations& v, size_t max = 5);

struct Snapshot {
  TimeMs now = 0;
  std::vector<Value> contexts;  // in seq order
  std::vector<Value> skipped;
  Value locks;  // an array
  std::map<std::string, std::vector<Value>> records;
  std::map<std::string, size_t> by_id;  // context id -> index

  static Snapshot from_document(const Value& document, TimeMs now);
  const Value* context(std::string_view id) const;
  const Value* record(const std::string& table, std::string_view sys_id) const;
};

}  // namespace flowrt::sim
