// OpBounds: the events fuzz target's Harness op filter (Harness::set_op_filter). It keeps
// one execution short without changing the engine or how the events file is read:
//   - at most kMaxOps ops, and none once kMaxContexts contexts have started: the next op
//     stops the run as a bad line does;
//   - `advance` at most 24 h per op and 48 h in all (schedules fire only there), `settle`
//     `until` at most 7 days (it moves only to the timers contexts wait on), so that every
//     example runs as under `flowrt run`;
//   - `set_property` of max_iterations (<= 50), indirect_recursion_limit (1: a chain of
//     starts is then at most as long as there are flows; fuzz/flow_recipe.h) and
//     worker_threads (1 or 2; 0, one per core, is 2) is clamped;
//   - a `save`d schedule trigger fires at most every 5 minutes.
// Anything it cannot read (a bad duration, a missing field) passes unchanged, for the
// harness to report. One per run; not synchronized.
#pragma once

#include <cstddef>
#include <cstdint>

#include "plans/result.h"
#include "plans/time.h"
#include "plans/value.h"

namespace flowrt::fuzz {

class OpBounds {
 public:
  static constexpr size_t kMaxOps = 64;
  static constexpr uint64_t kMaxContexts = 2000;
  static constexpr DurationMs kHour = 3600 * 1000;
  static constexpr DurationMs kMaxAdvance = 24 * kHour;      // one advance
  static constexpr DurationMs kMaxAdvanceTotal = 48 * kHour;  // every advance together
  static constexpr DurationMs kMaxSettle = 7 * 24 * kHour;    // one settle's `until`
  static constexpr DurationMs kMinEvery = 5 * 60 * 1000;           // saved schedule triggers
  static constexpr long long kMaxIterations = 50;
  static constexpr long long kMaxRecursion = 1;
  static constexpr long long kMaxWorkers = 2;

  // `contexts_started`: how many contexts the engine has started so far.
  Result<Value> operator()(const Value& op, uint64_t contexts_started);

 private:
  size_t ops_ = 0;
  DurationMs advanced_ = 0;
};

}  // namespace flowrt::fuzz
