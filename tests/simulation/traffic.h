// The simulation's traffic. Contract: Traffic::next picks the next outside operation
// (insert, update by id or `where`, update of a missing record, delete by id or `where`,
// fire_event, call_flow, test_flow, cancel, activate/deactivate, saving another version of
// a definition and then publishing it, set_property, advance, settle) from a generator
// seeded by the scenario's seed and from what the run has shown so far (TrafficView), so a
// seed replays the same traffic.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "plans/value.h"
#include "tests/simulation/generator.h"

namespace flowrt::sim {

// One operation of the traffic.
struct Op {
  enum class Kind {
    kInsert, kUpdate, kUpdateMissing, kUpdateWhere, kDelete, kDeleteWhere, kFireEvent, kCallFlow, kTestFlow,
    kCancel, kCancelUnknown, kActivate, kDeactivate, kSave, kPublish, kSetProperty, kAdvance, kSettle,
  };
  Kind kind = Kind::kSettle;
  std::string table, sys_id, name, flow, context;
  Value values, payload, where;  // where: a condition (kUpdateWhere, kDeleteWhere)
  size_t version = 0;            // kSave: which version (0-based) of `flow` is saved
  int64_t duration = 0;
  std::string describe() const;
};

// What the traffic can see of the engine when it picks the next operation.
struct TrafficView {
  std::map<std::string, std::vector<std::string>> sys_ids;  // live records of the data tables
  uint64_t contexts = 0;                                    // the highest seq so far
  std::map<std::string, bool> active;                       // flow id -> active
  std::map<std::string, size_t> published;                  // definition id -> published version
};

class Traffic {
 public:
  Traffic(const Scenario& s, uint64_t seed) : s_(s), g_(seed ^ 0x9e3779b97f4a7c15ull) {}
  Op next(const TrafficView& view);

 private:
  Value record_values();
  Value where();
  const Scenario& s_;
  Rng g_;
  std::optional<Op> follow_;  // the publish or activate that follows a save
};

}  // namespace flowrt::sim
