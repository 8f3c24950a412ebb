// Compiled triggers (SPEC section 3). Immutable after compilation; safe to share.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>

#include "flowrt/plans/condition.h"
#include "flowrt/plans/time.h"

namespace flowrt {

enum class TriggerType : uint8_t { kRecord, kSchedule, kEvent, kApi };
enum class RecordWhen : uint8_t { kCreated, kUpdated, kCreatedOrUpdated, kDeleted };
enum class RunOption : uint8_t { kAlways, kOnce, kForEachUniqueChange, kForEveryUpdate };
enum class RecordOperation : uint8_t { kInsert, kUpdate, kDelete };

std::string_view trigger_type_name(TriggerType t);
std::string_view when_name(RecordWhen w);
std::string_view run_option_name(RunOption r);
std::string_view operation_name(RecordOperation op);  // "insert" | "update" | "delete"

struct TriggerSpec {
  TriggerType type = TriggerType::kApi;
  // kRecord
  std::string table;
  RecordWhen when = RecordWhen::kCreated;
  bool has_condition = false;
  Condition condition;  // "field" is the record after the operation (for deleted, as it was)
  RunOption run = RunOption::kAlways;
  // kSchedule: `at` once, or `every` from `start` (default: the time of activation)
  bool repeating = false;
  DurationMs every = 0;
  bool has_start = false;
  TimeMs start = 0;  // `start` or `at`
  // kEvent
  std::string event_name;

  // Does an operation of this kind fire the trigger at all (before the condition)?
  bool listens_to(RecordOperation op) const;
};

}  // namespace flowrt
