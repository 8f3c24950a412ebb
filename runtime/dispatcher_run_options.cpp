// Dispatcher's run options (SPEC: a flow's `run`: once per record, or one running at a
// time): the run states by record and flow, the skip a start meets, and what a deleted
// record forgets. Under the commit lock, as the rest of the dispatcher's state (dispatcher.h).
#include <algorithm>
#include <string>
#include <string_view>

#include "runtime/dispatcher.h"
#include "runtime/flow_slot.h"

namespace flowrt {

std::string Dispatcher::record_key(std::string_view table, std::string_view sys_id) {
  // The table's length first, in decimal digits: names may hold NUL bytes, so no separator
  // would tell table "a\0b" and sys_id "c" from table "a" and sys_id "b\0c"; and the key
  // is stored as text (a context's run_key), so it must stay UTF-8 as the names are.
  std::string key = std::to_string(table.size());
  key.reserve(key.size() + 1 + table.size() + sys_id.size());
  key.push_back(':');
  key.append(table);
  key.append(sys_id);
  return key;
}

Dispatcher::RunState& Dispatcher::run_state(const std::string& key, uint32_t flow) {
  auto& flows = run_states_[key];
  for (auto& [f, st] : flows) {
    if (f == flow) return st;
  }
  flows.emplace_back(flow, RunState{});
  return flows.back().second;
}

void Dispatcher::forget_idle_runs(RunStates::iterator it) {
  auto& flows = it->second;
  flows.erase(std::remove_if(flows.begin(), flows.end(),
                             [](const auto& f) { return f.second.running == 0 && !f.second.ran; }),
              flows.end());
  if (flows.empty()) run_states_.erase(it);
}

std::string_view Dispatcher::run_option_skip(FlowSlot& flow, const TriggerData& trigger, const TriggerSpec& spec,
                                             Value* run_key) {
  if (trigger.type != TriggerType::kRecord) return "";
  if (spec.when != RecordWhen::kUpdated && spec.when != RecordWhen::kCreatedOrUpdated) return "";
  if (spec.run != RunOption::kOnce && spec.run != RunOption::kAlways) return "";
  std::string key = record_key(trigger.table.as_string(), trigger.sys_id.as_string());
  RunState& st = run_state(key, flow.index);
  // A start already queued counts as running and as having run.
  if (spec.run == RunOption::kOnce && st.ran) return "run_once";
  if (spec.run == RunOption::kAlways && st.running > 0) return "already_running";
  if (spec.run == RunOption::kOnce) {
    st.ran = true;
    if (journal_) {
      building_.changes.push_back(RunOncePut{std::string(trigger.table.as_string()), std::string(trigger.sys_id.as_string()),
                                             flow.id, true});
    }
  }
  ++st.running;
  *run_key = Value(std::string_view(key));
  return "";
}

void Dispatcher::record_deleted(std::string_view table, std::string_view sys_id) {
  auto it = run_states_.find(record_key(table, sys_id));
  if (it == run_states_.end()) return;
  bool any_ran = false;
  for (auto& [flow, st] : it->second) {
    any_ran = any_ran || st.ran;
    st.ran = false;
  }
  if (journal_ && any_ran) building_.changes.push_back(RunOncePut{std::string(table), std::string(sys_id), "", false});
  forget_idle_runs(it);
}

}  // namespace flowrt
