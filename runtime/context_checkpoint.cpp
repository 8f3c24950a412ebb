// Context, the checkpoint half: the execution record written compactly for a store and read
// back (runtime/checkpoint.h says what a checkpoint is).
#include <string>

#include "runtime/context.h"

namespace flowrt {
namespace {

constexpr StepStatus kStepStatuses[] = {StepStatus::kInProgress, StepStatus::kWaiting, StepStatus::kCompleted,
                                        StepStatus::kError, StepStatus::kSkipped};

Error record_mismatch(const std::string& what) { return Error{"context record does not fit the plan: " + what}; }

}  // namespace

Value Context::record_state() const {
  SpinLockGuard lock(record_mu_);
  std::vector<Value> steps;
  steps.reserve(steps_.size());
  for (const StepEntry& e : steps_) {
    steps.push_back(Value::array({Value(static_cast<long long>(e.node->ordinal)), e.path,
                                  Value(static_cast<long long>(e.started)), Value(static_cast<long long>(e.ended)),
                                  e.inputs, e.outputs, Value(static_cast<long long>(e.status))}));
  }
  std::vector<Value> logs;
  logs.reserve(logs_.size());
  for (const LogEntry& l : logs_) {
    logs.push_back(Value::array({Value(static_cast<long long>(l.time)), Value(static_cast<long long>(l.level)),
                                 l.step, l.message}));
  }
  return Value::object({{"started", Value(static_cast<long long>(started_at_))},
                        {"variables", variables_},
                        {"steps", Value::array(std::move(steps))},
                        {"logs", Value::array(std::move(logs))}});
}

Status Context::restore_record_state(const Value& v, const Plan& for_plan, const std::vector<const Node*>& nodes,
                                     ContextStatus status) {
  std::vector<StepEntry> steps;
  for (const Value& s : v["steps"].items()) {
    if (!s.is_array() || s.size() != 7) return record_mismatch("a step entry is not [node, path, started, ended, inputs, outputs, status]");
    const int64_t ordinal = s.at(0).as_int();
    const int64_t st = s.at(6).as_int();
    if (ordinal < 0 || static_cast<size_t>(ordinal) >= nodes.size()) return record_mismatch("node " + std::to_string(ordinal));
    if (st < 0 || st >= static_cast<int64_t>(std::size(kStepStatuses))) return record_mismatch("step status " + std::to_string(st));
    StepEntry e;
    e.node = nodes[static_cast<size_t>(ordinal)];
    e.path = s.at(1);
    e.started = s.at(2).as_int();
    e.ended = s.at(3).as_int();
    e.inputs = s.at(4);
    e.outputs = s.at(5);
    e.status = kStepStatuses[st];
    steps.push_back(std::move(e));
  }
  boost::container::small_vector<LogEntry, 1> logs;
  for (const Value& l : v["logs"].items()) {
    if (!l.is_array() || l.size() != 4 || l.at(1).as_int() < 0 || l.at(1).as_int() > 2) return record_mismatch("a log line");
    logs.push_back(LogEntry{l.at(0).as_int(), static_cast<LogLevel>(l.at(1).as_int()), l.at(2), l.at(3)});
  }
  {
    SpinLockGuard lock(record_mu_);
    recorded_plan_ = &for_plan;
    variables_ = v["variables"];
    started_at_ = v["started"].as_int();
    steps_ = std::move(steps);
    logs_ = std::move(logs);
  }
  set_status(status);
  return Status::ok();
}

}  // namespace flowrt
