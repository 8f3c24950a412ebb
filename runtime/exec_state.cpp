#include "runtime/exec_state.h"

#include <string>

namespace flowrt {
namespace {

constexpr const char* kKinds[] = {"body", "branch", "loop", "try", "catch"};

template <class Vector>
Value values(const Vector& v) {
  return Value::array(std::vector<Value>(v.begin(), v.end()));
}

std::vector<Value> list_of(const Value& v) { return std::vector<Value>(v.items().begin(), v.items().end()); }

const char* wait_kind(WaitRequest::Kind k) {
  switch (k) {
    case WaitRequest::Kind::kNone: return "none";
    case WaitRequest::Kind::kTimer: return "timer";
    case WaitRequest::Kind::kRecord: return "record";
    case WaitRequest::Kind::kLock: return "lock";
  }
  return "none";
}

// The node a frame is positioned after: what it ran last (pc was advanced before running).
const Node* node_before(const BlockFrame& f) {
  return f.pc == 0 || f.pc > f.block->size() ? nullptr : &(*f.block)[f.pc - 1];
}

Error state_mismatch(const std::string& what) { return Error{"context state does not fit the plan: " + what}; }

}  // namespace

Value ExecState::to_value(const Plan& plan) const {
  std::vector<Value> stack_json;
  for (const Activation& a : stack) {
    std::vector<Value> blocks;
    for (const BlockFrame& f : a.blocks) {
      blocks.push_back(Value::object({{"kind", Value(kKinds[static_cast<int>(f.kind)])},
                                      {"pc", Value(f.pc)},
                                      {"branch", Value(static_cast<long long>(f.branch))},
                                      {"prefix", f.prefix},
                                      {"dynamic", Value(f.dynamic)},
                                      {"items", f.items},
                                      {"iteration", Value(f.iteration)},
                                      {"record", Value(static_cast<long long>(f.record))},
                                      {"owner_path", f.owner_path},
                                      {"error", f.error}}));
    }
    stack_json.push_back(Value::object({{"unit", Value(a.unit)},
                                        {"steps", values(a.steps)},
                                        {"vars", values(a.vars)},
                                        {"inputs", values(a.inputs)},
                                        {"input_object", a.input_object},
                                        {"items", values(a.items)},
                                        {"outputs", values(a.outputs)},
                                        {"call_record", Value(static_cast<long long>(a.call_record))},
                                        {"call_path", a.call_path},
                                        {"prefix", a.prefix},
                                        {"blocks", Value::array(std::move(blocks))}}));
  }
  Value parked_json;
  if (parked) {
    parked_json = Value::object({{"record", Value(static_cast<long long>(parked_record))},
                                 {"path", parked_path},
                                 {"inputs", values(parked_inputs)},
                                 {"wait", Value::object({{"kind", Value(wait_kind(wait.kind))},
                                                         {"deadline", Value(static_cast<long long>(wait.deadline))},
                                                         {"table", wait.table},
                                                         {"sys_id", wait.sys_id},
                                                         {"seen", wait.seen},
                                                         {"lock", wait.lock_name},
                                                         {"weight", Value(static_cast<long long>(wait.weight))},
                                                         {"max_duration", Value(static_cast<long long>(wait.max_duration))},
                                                         {"max_attempts", Value(static_cast<long long>(wait.max_attempts))},
                                                         {"delay", Value(static_cast<long long>(wait.delay))},
                                                         {"requested_at", Value(static_cast<long long>(wait.requested_at))}})}});
  }
  return Value::object({{"plan_version", Value(std::string_view(plan.version))},
                        {"started", Value(started)},
                        {"run_ms", Value(run_ms)},
                        {"stack", Value::array(std::move(stack_json))},
                        {"parked", parked_json}});
}

Result<ExecState> ExecState::from_value(const Value& v, const Plan& plan) {
  if (v["plan_version"].as_string() != plan.version) {
    return state_mismatch("written for plan " + std::string(v["plan_version"].as_string()) + ", not " + plan.version);
  }
  ExecState s;
  s.started = v["started"].as_bool();
  if (v["run_ms"].is_number()) s.run_ms = v["run_ms"].as_double();
  for (const Value& aj : v["stack"].items()) {
    Activation a;
    a.unit = static_cast<uint32_t>(aj["unit"].as_int());
    if (a.unit >= plan.units.size()) return state_mismatch("unit " + std::to_string(a.unit));
    const PlanUnit& unit = plan.units[a.unit];
    a.steps = list_of(aj["steps"]);
    a.vars = list_of(aj["vars"]);
    a.inputs = list_of(aj["inputs"]);
    a.input_object = aj["input_object"];
    a.items = list_of(aj["items"]);
    a.outputs = list_of(aj["outputs"]);
    a.call_record = aj["call_record"].as_int();
    a.call_path = aj["call_path"];
    a.prefix = aj["prefix"];
    if (a.steps.size() != unit.step_ids.size() || a.vars.size() != unit.variable_names.size() ||
        a.items.size() != unit.max_loop_depth || a.outputs.size() != unit.outputs.size()) {
      return state_mismatch("slot counts of unit " + unit.id);
    }
    for (const Value& fj : aj["blocks"].items()) {
      BlockFrame f;
      int kind = -1;
      for (int k = 0; k < 5; ++k) {
        if (fj["kind"].as_string() == kKinds[k]) kind = k;
      }
      if (kind < 0) return state_mismatch("block kind " + fj["kind"].to_json());
      f.kind = static_cast<BlockFrame::Kind>(kind);
      f.pc = static_cast<uint32_t>(fj["pc"].as_int());
      f.branch = static_cast<uint32_t>(fj["branch"].as_int());
      f.prefix = fj["prefix"];
      f.dynamic = fj["dynamic"].as_bool();
      f.items = fj["items"];
      f.iteration = static_cast<uint32_t>(fj["iteration"].as_int());
      f.record = fj["record"].as_int();
      f.owner_path = fj["owner_path"];
      f.error = fj["error"];
      if (a.blocks.empty()) {
        if (f.kind != BlockFrame::Kind::kBody) return state_mismatch("the first block is not a body");
        f.block = &unit.body;
      } else {
        // The block was opened by the node its parent ran last.
        const Node* owner = node_before(a.blocks.back());
        if (!owner) return state_mismatch("no node opened a block");
        f.owner = owner;
        if (const auto* n = std::get_if<IfNode>(&owner->op); n && f.kind == BlockFrame::Kind::kBranch) {
          if (f.branch == BlockFrame::kElse) f.block = &n->else_block;
          else if (f.branch < n->branches.size()) f.block = &n->branches[f.branch];
        } else if (const auto* l = std::get_if<ForEachNode>(&owner->op); l && f.kind == BlockFrame::Kind::kLoop) {
          f.block = &l->body;
        } else if (const auto* t = std::get_if<TryNode>(&owner->op)) {
          if (f.kind == BlockFrame::Kind::kTry) f.block = &t->body;
          if (f.kind == BlockFrame::Kind::kCatch) f.block = &t->handler;
        }
        if (!f.block) return state_mismatch("block at " + std::string(f.owner_path.as_string()));
      }
      if (f.pc > f.block->size()) return state_mismatch("position past the end of a block");
      a.blocks.push_back(std::move(f));
    }
    if (a.blocks.empty()) return state_mismatch("a unit without blocks");
    if (!s.stack.empty()) {
      const Node* call = node_before(s.stack.back().blocks.back());
      if (!call || !std::holds_alternative<ActionStep>(call->op)) return state_mismatch("no call step for unit " + unit.id);
      a.call_node = call;
    }
    s.stack.push_back(std::move(a));
  }
  const Value& pj = v["parked"];
  if (!pj.is_null()) {
    if (s.stack.empty()) return state_mismatch("parked without a position");
    s.parked = true;
    s.parked_node = node_before(s.stack.back().blocks.back());
    if (!s.parked_node || !std::holds_alternative<ActionStep>(s.parked_node->op)) return state_mismatch("parked step");
    s.parked_record = pj["record"].as_int();
    s.parked_path = pj["path"];
    s.parked_inputs.assign(pj["inputs"].items().begin(), pj["inputs"].items().end());
    const std::string_view kind = pj["wait"]["kind"].as_string();
    s.wait.kind = kind == "timer"    ? WaitRequest::Kind::kTimer
                  : kind == "record" ? WaitRequest::Kind::kRecord
                  : kind == "lock"   ? WaitRequest::Kind::kLock
                                     : WaitRequest::Kind::kNone;
    s.wait.deadline = pj["wait"]["deadline"].as_int();
    s.wait.table = pj["wait"]["table"];
    const Value& w = pj["wait"];
    s.wait.sys_id = w["sys_id"];
    s.wait.seen = w["seen"];
    s.wait.lock_name = w["lock"];
    if (w["weight"].is_number()) s.wait.weight = w["weight"].as_int();
    if (w["max_duration"].is_number()) s.wait.max_duration = w["max_duration"].as_int();
    if (w["max_attempts"].is_number()) s.wait.max_attempts = w["max_attempts"].as_int();
    if (w["delay"].is_number()) s.wait.delay = w["delay"].as_int();
    if (w["requested_at"].is_number()) s.wait.requested_at = w["requested_at"].as_int();
    if (s.wait.kind == WaitRequest::Kind::kLock && !s.wait.lock_name.is_string()) return state_mismatch("a lock wait without a name");
  }
  return s;
}

}  // namespace flowrt
