// TriggerIndex: which active flows listen to a table operation or a named event.
//
// Matching a record operation looks up its table and operation and tests only the flows
// found there, so flows on other tables cost nothing. An index is immutable once built;
// the runtime builds a new one when flows are activated or deactivated and swaps it in, so
// readers need no lock. Entries refer to flows by the runtime's own flow number.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include "plans/trigger_spec.h"

namespace flowrt {

struct TriggerEntry {
  uint32_t flow = 0;                 // the runtime's flow number
  void* handle = nullptr;            // the runtime's object for the flow (opaque here)
  std::string flow_id;
  std::shared_ptr<const TriggerSpec> spec;
};

class TriggerIndex {
 public:
  void add(TriggerEntry entry);

  std::span<const TriggerEntry> on_record(std::string_view table, RecordOperation op) const;
  std::span<const TriggerEntry> on_event(std::string_view name) const;
  std::span<const TriggerEntry> schedules() const { return schedules_; }
  size_t size() const { return size_; }

 private:
  struct Hash {
    using is_transparent = void;
    size_t operator()(std::string_view s) const { return std::hash<std::string_view>{}(s); }
  };
  struct TableTriggers {
    std::vector<TriggerEntry> by_op[3];  // indexed by RecordOperation
  };
  std::unordered_map<std::string, TableTriggers, Hash, std::equal_to<>> tables_;
  std::unordered_map<std::string, std::vector<TriggerEntry>, Hash, std::equal_to<>> events_;
  std::vector<TriggerEntry> schedules_;
  size_t size_ = 0;
};

// Does a record operation fire `spec` (before run options)? `record` is the record after
// the operation (for delete, as it was), `previous` the record before an update (or null),
// `changed` whether an update changed any value. Condition errors count as no match.
bool record_trigger_matches(const TriggerSpec& spec, RecordOperation op, const Value& record, const Value* previous,
                            bool changed);

}  // namespace flowrt
