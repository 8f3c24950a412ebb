#include "triggers/trigger_index.h"

#include "plans/eval.h"

namespace flowrt {

void TriggerIndex::add(TriggerEntry entry) {
  ++size_;
  const TriggerSpec& spec = *entry.spec;
  switch (spec.type) {
    case TriggerType::kRecord: {
      TableTriggers& t = tables_[spec.table];
      for (RecordOperation op : {RecordOperation::kInsert, RecordOperation::kUpdate, RecordOperation::kDelete}) {
        if (spec.listens_to(op)) t.by_op[static_cast<int>(op)].push_back(entry);
      }
      break;
    }
    case TriggerType::kEvent: events_[spec.event_name].push_back(std::move(entry)); break;
    case TriggerType::kSchedule: schedules_.push_back(std::move(entry)); break;
    case TriggerType::kApi: break;
  }
}

std::span<const TriggerEntry> TriggerIndex::on_record(std::string_view table, RecordOperation op) const {
  auto it = tables_.find(table);
  if (it == tables_.end()) return {};
  return it->second.by_op[static_cast<int>(op)];
}

std::span<const TriggerEntry> TriggerIndex::on_event(std::string_view name) const {
  auto it = events_.find(name);
  if (it == events_.end()) return {};
  return it->second;
}

bool record_trigger_matches(const TriggerSpec& spec, RecordOperation op, const Value& record, const Value* previous,
                            bool changed) {
  if (!spec.listens_to(op)) return false;
  // An update that changes no value fires only for_every_update flows.
  if (op == RecordOperation::kUpdate && !changed && spec.run != RunOption::kForEveryUpdate) return false;
  if (!spec.has_condition) return true;
  Scope scope;
  scope.record = &record;
  scope.previous = previous;
  Result<bool> r = evaluate(spec.condition, scope);
  return r.is_ok() && *r;
}

}  // namespace flowrt
