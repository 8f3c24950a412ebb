#include "fuzz/flow_recipe.h"

#include <algorithm>
#include <memory>
#include <nlohmann/json.hpp>
#include <vector>

namespace flowrt::fuzz {
namespace {

using json = nlohmann::json;

constexpr int kMaxFlows = 5;
constexpr int kFlowBudget = 30;     // action steps per flow (max_actions is 50)
constexpr int kSubflowBudget = 10;
constexpr int kActionBudget = 8;    // max_action_steps is 20
constexpr int kMaxDepth = 2;        // nested blocks
constexpr int kFlowStarts = 2;      // steps of a flow that may start contexts (see the top)

// The recipe's bytes, read in order; 0 once they run out.
class Bytes {
 public:
  explicit Bytes(std::string_view b) : b_(b) {}
  uint8_t next() { return pos_ < b_.size() ? static_cast<uint8_t>(b_[pos_++]) : 0; }
  // 0..n-1.
  size_t pick(size_t n) { return next() % n; }
  template <class T, size_t N>
  const T& of(const T (&items)[N]) {
    return items[pick(N)];
  }
  // True with about `percent` percent; false once the bytes run out.
  bool chance(unsigned percent) {
    const uint8_t b = next();
    return b != 0 && b % 100 < percent;
  }

 private:
  std::string_view b_;
  size_t pos_ = 0;
};

constexpr const char* kTables[] = {"t0", "t1"};  // the tables record triggers listen to
constexpr const char* kSink = "t2";               // a table no generated flow listens to
constexpr const char* kLocks[] = {"pool", "gate"};
constexpr const char* kEvents[] = {"e0", "e1"};
constexpr const char* kSubflows[] = {"fz_sub0", "fz_sub1"};

// A record a step can name: its table and a template of its sys_id.
struct Target {
  std::string table;
  std::string sys_id;
};

enum class UnitKind { kRecordFlow, kEventFlow, kApiFlow, kScheduleFlow, kSubflow, kAction };

// One unit being built: the targets its steps may name (shared by nested blocks, since a
// pill may read any earlier step), its step budget, and how many more of its steps may
// start contexts (writes to t0/t1, fire_event, start_flow).
struct Unit {
  UnitKind kind;
  std::vector<Target> targets;
  int budget;
  int starts_left;
  int next_id = 0;
  const std::vector<std::string>* api_flows;
  const std::map<std::string, int64_t>* limits;
};

// Where in a unit a step is built: the loop item (if any) and how deep.
struct Place {
  int depth = 0;
  bool in_loop = false;
  std::string item;        // the for_each item's name, "" outside loops
  std::string item_table;
};

class StepBuilder {
 public:
  StepBuilder(Bytes& b, Unit& u) : b_(b), u_(u) {}

  json block(const Place& at, int max_steps) {
    json steps = json::array();
    const int n = 1 + static_cast<int>(b_.pick(static_cast<size_t>(max_steps)));
    for (int i = 0; i < n && u_.budget > 0; ++i) steps.push_back(step(at));
    return steps;
  }

 private:
  std::string id() { return "s" + std::to_string(u_.next_id++); }
  std::string on_error() { return b_.chance(80) || b_.chance(50) ? "continue" : "stop"; }
  json with_error(json step) {
    step["on_error"] = on_error();
    return step;
  }
  Target target(const Place& at) {
    if (!at.item.empty() && b_.chance(50)) return {at.item_table, "{{" + at.item + ".sys_id}}"};
    return u_.targets[b_.pick(u_.targets.size())];
  }
  // Whether this step may start contexts, and if so spends one of the unit's starts. Never
  // inside a loop, where one step runs up to five times.
  bool start(const Place& at) {
    if (at.in_loop || u_.starts_left <= 0 || !b_.chance(75)) return false;
    --u_.starts_left;
    return true;
  }
  // The table a new record goes to: t0/t1 when the step may start contexts, else the sink.
  std::string write_table(const Place& at) { return start(at) ? std::string(b_.of(kTables)) : std::string(kSink); }
  // The record an update or delete names: any when it may start contexts, else one of the sink.
  Target write_target(const Place& at) {
    if (start(at)) return target(at);
    if (at.item_table == kSink && b_.chance(50)) return {kSink, "{{" + at.item + ".sys_id}}"};
    std::vector<const Target*> sink;
    for (const Target& t : u_.targets) {
      if (t.table == kSink) sink.push_back(&t);
    }
    return *sink[b_.pick(sink.size())];
  }
  json number() { return b_.chance(25) ? json("{{vars.v}}") : json(b_.pick(4)); }
  json values() {
    json v = {{"n", number()}, {"s", b_.chance(40) ? "closed" : "open"}};
    if (b_.chance(30)) v["by"] = "{{context.id}}";
    return v;
  }
  json record_condition() {
    switch (b_.pick(3)) {
      case 0: return {{"field", "n"}, {"op", "le"}, {"value", b_.pick(4)}};
      case 1: return {{"field", "s"}, {"op", "eq"}, {"value", "open"}};
      default: return {{"field", "n"}, {"op", "ge"}, {"value", b_.pick(4)}};
    }
  }
  void maybe_fence(json& in) {
    if (b_.chance(35)) in["while_holding"] = b_.of(kLocks);
  }
  json duration(bool short_only) {
    static constexpr const char* kShort[] = {"1s", "30s", "250ms", "5m", "10m"};
    if (short_only) return b_.of(kShort);
    static constexpr const char* kLong[] = {"10s", "1m", "10m", "1h"};
    return b_.of(kLong);
  }

  json step(const Place& at) {
    --u_.budget;
    const bool can_nest = at.depth < kMaxDepth && u_.budget >= 3;
    switch (b_.pick(23)) {
      case 0:
        return {{"action", "log"},
                {"inputs", {{"message", "v={{vars.v}} at {{context.id}}"}, {"level", b_.chance(30) ? "warn" : "info"}}}};
      case 1: {
        const std::string key = b_.of(kLocks);
        json in = {{"key", key}, {"max_attempts", 1 + b_.pick(4)}, {"delay", duration(true)}};
        const size_t limit = static_cast<size_t>(std::max<int64_t>(1, u_.limits->at(key)));
        if (b_.chance(60)) in["weight"] = 1 + b_.pick(std::min<size_t>(limit, 4));
        if (b_.chance(50)) in["max_duration"] = duration(false);
        return with_error({{"id", id()}, {"action", "lock"}, {"inputs", in}});
      }
      case 2: return {{"action", "unlock"}, {"inputs", {{"key", b_.of(kLocks)}}}};
      case 3: return {{"action", "wait"}, {"inputs", {{"duration", b_.chance(20) ? json(0) : duration(true)}}}};
      case 4: {
        const Target t = target(at);
        json in = {{"table", t.table}, {"sys_id", t.sys_id}};
        in["condition"] = b_.chance(50) ? json{{"field", "s"}, {"op", "eq"}, {"value", "closed"}}
                                        : json{{"field", "n"}, {"op", "ge"}, {"value", 2}};
        if (b_.chance(70)) in["timeout"] = duration(true);
        return with_error({{"id", id()}, {"action", "wait_for_condition"}, {"inputs", in}});
      }
      case 5: {
        const std::string s = id();
        const std::string table = write_table(at);
        json in = {{"table", table}, {"values", values()}};
        maybe_fence(in);
        u_.targets.push_back({table, "{{steps." + s + ".sys_id}}"});
        return with_error({{"id", s}, {"action", "create_record"}, {"inputs", in}});
      }
      case 6: {
        const Target t = write_target(at);
        json in = {{"table", t.table}, {"sys_id", t.sys_id}, {"values", values()}};
        maybe_fence(in);
        return with_error({{"id", id()}, {"action", "update_record"}, {"inputs", in}});
      }
      case 7: {
        const Target t = write_target(at);
        json in = {{"table", t.table}, {"sys_id", t.sys_id}};
        maybe_fence(in);
        return with_error({{"id", id()}, {"action", "delete_record"}, {"inputs", in}});
      }
      case 8: {
        const std::string s = id();
        const std::string table = b_.of(kTables);
        u_.targets.push_back({table, "{{steps." + s + ".record.sys_id}}"});
        return {{"id", s}, {"action", "look_up_record"},
                {"inputs", {{"table", table}, {"condition", record_condition()}, {"order_by", "-n"}}}};
      }
      case 9: {
        if (!can_nest) return set_variables();
        const std::string s = id();
        const std::string table = b_.chance(30) ? std::string(kSink) : std::string(b_.of(kTables));
        json lookup = {{"id", s}, {"action", "look_up_records"},
                       {"inputs", {{"table", table}, {"condition", record_condition()}, {"limit", 1 + b_.pick(5)}}}};
        Place inner = at;
        inner.depth++;
        inner.in_loop = true;
        inner.item = "it" + std::to_string(at.depth);
        inner.item_table = table;
        json loop = {{"for_each", "{{steps." + s + ".records}}"}, {"as", inner.item}, {"do", block(inner, 3)}};
        // Both in one step slot: a try holding the look-up and its loop.
        return {{"try", json::array({lookup, loop})},
                {"catch", json::array({{{"action", "log"}, {"inputs", {{"message", "loop: {{error.message}}"}}}}})}};
      }
      case 10: {
        if (!can_nest) return fail();
        Place inner = at;
        inner.depth++;
        json tried = block(inner, 3);
        json caught = json::array({{{"action", "log"}, {"inputs", {{"message", "{{error.step}}: {{error.message}}"}}}}});
        if (b_.chance(40)) {
          for (json& s : block(inner, 2)) caught.push_back(std::move(s));
        }
        return {{"try", tried}, {"catch", caught}};
      }
      case 11: {
        if (!can_nest) return set_variables();
        Place inner = at;
        inner.depth++;
        json node = {{"if", {{"pill", "vars.v"}, {"op", "ge"}, {"value", b_.pick(3)}}}, {"then", block(inner, 2)}};
        if (b_.chance(40)) {
          node["else_if"] = json::array(
              {{{"if", {{"pill", "vars.v"}, {"op", "eq"}, {"value", 0}}}, {"then", block(inner, 2)}}});
        }
        if (b_.chance(50)) node["else"] = block(inner, 2);
        return node;
      }
      case 12: {
        if (u_.kind == UnitKind::kAction) return log_pill();
        const std::string s = id();
        return with_error({{"id", s}, {"action", "call_subflow"},
                           {"inputs", {{"subflow", b_.of(kSubflows)}, {"inputs", {{"sid", target(at).sys_id}}}}}});
      }
      case 13: {
        if (u_.api_flows->empty()) return fire_event(at);
        if (!start(at)) return log_pill();
        const std::string& flow = (*u_.api_flows)[b_.pick(u_.api_flows->size())];
        return with_error({{"id", id()}, {"action", "start_flow"},
                           {"inputs", {{"flow", flow}, {"inputs", {{"sid", target(at).sys_id}}}}}});
      }
      case 14: return fire_event(at);
      case 15: return set_variables();
      case 16: {
        const std::string s = id();
        return with_error({{"id", s}, {"action", "fz.outputs"}, {"inputs", {{"x", target(at).sys_id}}}});
      }
      case 17: return with_error({{"id", id()}, {"action", "fz.throw"}, {"inputs", {{"why", "thrown"}}}});
      case 18: return with_error({{"id", id()}, {"action", "fz.error"}, {"inputs", {{"why", "refused"}}}});
      case 19: {
        const std::string s = id();
        const std::string table = write_table(at);
        json in = {{"table", table}, {"n", b_.pick(4)}};
        if (b_.chance(35)) in["hold"] = b_.of(kLocks);
        u_.targets.push_back({table, "{{steps." + s + ".sys_id}}"});
        return with_error({{"id", s}, {"action", "fz.write"}, {"inputs", in}});
      }
      case 20: {
        if (u_.kind == UnitKind::kAction) return log_pill();
        return with_error({{"id", id()}, {"action", "fz_act"}, {"inputs", {{"sid", target(at).sys_id}, {"n", number()}}}});
      }
      case 21: return fail();
      default:
        if (at.depth == 0 && b_.chance(50)) return {{"end", true}};
        return log_pill();
    }
  }

  json set_variables() { return {{"action", "set_variables"}, {"inputs", {{"values", {{"v", "{{vars.v | add: 1}}"}}}}}}; }
  json fail() { return with_error({{"id", id()}, {"action", "fail"}, {"inputs", {{"message", "failed on purpose"}}}}); }
  json log_pill() { return {{"action", "log"}, {"inputs", {{"message", "{{flow.id}} {{vars.v | default: 0}}"}}}}; }
  json fire_event(const Place& at) {
    if (!start(at)) return log_pill();
    return {{"action", "fire_event"},
            {"inputs", {{"name", b_.of(kEvents)}, {"payload", {{"sid", target(at).sys_id}, {"n", b_.pick(4)}}}}}};
  }

  Bytes& b_;
  Unit& u_;
};

json record_trigger(Bytes& b, std::string* table) {
  static constexpr const char* kWhen[] = {"created", "updated", "created_or_updated", "deleted"};
  static constexpr const char* kRun[] = {"always", "once", "for_each_unique_change", "for_every_update"};
  *table = b.of(kTables);
  const std::string when = b.of(kWhen);
  json t = {{"type", "record"}, {"table", *table}, {"when", when}};
  switch (b.pick(4)) {
    case 1: t["condition"] = {{"field", "n"}, {"op", "le"}, {"value", b.pick(4)}}; break;
    case 2: t["condition"] = {{"not", {{"field", "s"}, {"op", "eq"}, {"value", "closed"}}}}; break;
    case 3:
      if (when == "updated") t["condition"] = {{"field", "n"}, {"op", "changes"}};
      break;
    default: break;
  }
  if (when == "updated" || when == "created_or_updated") t["run"] = b.of(kRun);
  return t;
}

json unit_body(Bytes& b, Unit& u, int max_steps) {
  StepBuilder sb(b, u);
  return sb.block(Place{}, max_steps);
}

std::vector<Target> base_targets() { return {{"t0", "a0"}, {"t1", "a1"}, {kSink, "a2"}}; }

}  // namespace

GeneratedFlows generate_flows(std::string_view recipe, const std::map<std::string, int64_t>& declared) {
  Bytes b(recipe);
  GeneratedFlows out;
  out.lock_limits["pool"] = 1 + static_cast<int64_t>(b.pick(4));
  out.lock_limits["gate"] = 1 + static_cast<int64_t>(b.pick(3));
  for (auto& [name, limit] : out.lock_limits) {
    if (auto it = declared.find(name); it != declared.end()) limit = it->second;
  }

  // Triggers first, so that start_flow steps know the API flows.
  const int flows = 1 + static_cast<int>(b.pick(kMaxFlows));
  std::vector<UnitKind> kinds;
  std::vector<json> triggers;
  std::vector<std::string> tables;
  std::vector<std::string> api_flows;
  for (int i = 0; i < flows; ++i) {
    std::string table;
    switch (b.pick(5)) {
      case 1:
        kinds.push_back(UnitKind::kEventFlow);
        triggers.push_back({{"type", "event"}, {"name", b.of(kEvents)}});
        break;
      case 2:
        kinds.push_back(UnitKind::kApiFlow);
        triggers.push_back({{"type", "api"}});
        api_flows.push_back("fz_f" + std::to_string(i));
        break;
      case 3: {
        kinds.push_back(UnitKind::kScheduleFlow);
        static constexpr const char* kEvery[] = {"10m", "1h", "30m"};
        triggers.push_back(b.chance(70) ? json{{"type", "schedule"}, {"every", b.of(kEvery)}}
                                        : json{{"type", "schedule"}, {"at", "2026-01-01T01:00:00Z"}});
        break;
      }
      default:
        kinds.push_back(UnitKind::kRecordFlow);
        triggers.push_back(record_trigger(b, &table));
        break;
    }
    tables.push_back(table);
  }

  json defs = json::array();
  for (int i = 0; i < flows; ++i) {
    Unit u{kinds[i], base_targets(), kFlowBudget, kFlowStarts, 0, &api_flows, &out.lock_limits};
    switch (kinds[i]) {
      case UnitKind::kRecordFlow: u.targets.push_back({tables[i], "{{trigger.sys_id}}"}); break;
      case UnitKind::kEventFlow: u.targets.push_back({"t0", "{{trigger.payload.sid}}"}); break;
      case UnitKind::kApiFlow: u.targets.push_back({"t0", "{{inputs.sid}}"}); break;
      default: break;
    }
    json def = {{"id", "fz_f" + std::to_string(i)}, {"trigger", triggers[i]}, {"variables", {{"v", 0}}}};
    if (b.chance(8)) def["active"] = false;
    def["actions"] = unit_body(b, u, 6);
    defs.push_back(std::move(def));
  }
  for (int i = 0; i < 2; ++i) {
    Unit u{UnitKind::kSubflow, base_targets(), kSubflowBudget, 0, 0, &api_flows, &out.lock_limits};
    u.targets.push_back({"t0", "{{inputs.sid}}"});
    json steps = unit_body(b, u, 3);
    steps.push_back({{"action", "assign_outputs"}, {"inputs", {{"values", {{"out", "{{inputs.sid}}"}}}}}});
    defs.push_back({{"id", kSubflows[i]},
                    {"type", "subflow"},
                    {"inputs", json::array({{{"name", "sid"}, {"type", "string"}}})},
                    {"outputs", json::array({{{"name", "out"}, {"type", "string"}}})},
                    {"variables", {{"v", 0}}},
                    {"actions", steps}});
  }
  {
    Unit u{UnitKind::kAction, base_targets(), kActionBudget, 0, 0, &api_flows, &out.lock_limits};
    u.targets.push_back({"t0", "{{inputs.sid}}"});
    json steps = unit_body(b, u, 3);
    steps.push_back({{"action", "assign_outputs"}, {"inputs", {{"values", {{"m", "{{inputs.n | add: 1}}"}}}}}});
    defs.push_back({{"id", "fz_act"},
                    {"type", "action"},
                    {"inputs", json::array({{{"name", "sid"}, {"type", "string"}}, {{"name", "n"}, {"type", "integer"}}})},
                    {"outputs", json::array({{{"name", "m"}, {"type", "integer"}}})},
                    {"variables", {{"v", 0}}},
                    {"actions", steps}});
  }
  out.definitions = defs.dump();
  return out;
}

}  // namespace flowrt::fuzz
