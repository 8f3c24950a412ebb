#include "tests/simulation/traffic.h"

namespace flowrt::sim {

std::string Op::describe() const {
  switch (kind) {
    case Kind::kInsert: return "insert " + table + " " + values.to_json();
    case Kind::kUpdate: return "update " + table + "/" + sys_id + " " + values.to_json();
    case Kind::kUpdateMissing: return "update (missing) " + table + "/" + sys_id;
    case Kind::kUpdateWhere: return "update " + table + " where " + where.to_json() + " " + values.to_json();
    case Kind::kDelete: return "delete " + table + "/" + sys_id;
    case Kind::kDeleteWhere: return "delete " + table + " where " + where.to_json();
    case Kind::kFireEvent: return "fire_event " + name + " " + payload.to_json();
    case Kind::kCallFlow: return "call_flow " + flow + " " + values.to_json();
    case Kind::kTestFlow: return "test_flow " + flow + (table.empty() ? " " + values.to_json() : " " + table + "/" + sys_id);
    case Kind::kCancel: return "cancel " + context;
    case Kind::kCancelUnknown: return "cancel (unknown) " + context;
    case Kind::kActivate: return "activate " + flow;
    case Kind::kDeactivate: return "deactivate " + flow;
    case Kind::kSave: return "save " + flow + " version " + std::to_string(version + 1);
    case Kind::kPublish: return "publish " + flow;
    case Kind::kSetProperty: return "set_property " + name + " " + values.to_json();
    case Kind::kAdvance: return "advance " + std::to_string(duration) + "ms";
    case Kind::kSettle: return "settle " + std::to_string(duration) + "ms";
  }
  return "?";
}

Value Traffic::record_values() {
  return Value::object({{"a", Value(g_.between(0, 4))}, {"b", Value(g_.pick(kLetters))}});
}

Value Traffic::where() {
  if (g_.chance(0.5)) return Value::object({{"field", "a"}, {"op", g_.chance(0.5) ? "eq" : "ge"}, {"value", Value(g_.between(0, 4))}});
  return Value::object({{"field", "b"}, {"op", "eq"}, {"value", Value(g_.pick(kLetters))}});
}

Op Traffic::next(const TrafficView& view) {
  if (follow_) {
    Op op = std::move(*follow_);
    follow_.reset();
    return op;
  }
  Op op;
  const int64_t k = g_.between(0, 99);
  if (s_.variant == Variant::kRealClock) {
    // Start the lock flows on either lock; now and then let the timers run a little.
    if (k < 80) {
      op.kind = Op::Kind::kCallFlow;
      op.flow = g_.pick(std::vector<std::string>{"f0", "f0", "f1", "f2", "f2"});
      const std::string key = g_.pick(s_.lock_names);
      const int64_t limit = s_.limit_of(key);
      op.values = Value::object({{"key", Value(key)}, {"w", Value(op.flow == "f2" ? g_.between(1, limit) : limit)}});
    } else {
      op.kind = Op::Kind::kSettle;
      op.duration = g_.between(10, 200);
    }
    return op;
  }
  std::vector<std::string> live_tables;
  for (const auto& [t, ids] : view.sys_ids) {
    if (!ids.empty()) live_tables.push_back(t);
  }
  std::vector<std::string> ids;
  for (const FlowSpec& f : s_.flows) ids.push_back(f.id);
  if (k < 24) {
    op.kind = Op::Kind::kInsert;
    op.table = g_.pick(s_.tables);
    op.values = record_values();
  } else if (k < 40 && !live_tables.empty()) {
    op.kind = Op::Kind::kUpdate;
    op.table = g_.pick(live_tables);
    op.sys_id = g_.pick(view.sys_ids.at(op.table));
    const int64_t which = g_.between(0, 3);
    op.values = which == 0   ? Value::object({{"a", Value(g_.between(0, 4))}})
                : which == 1 ? Value::object({{"b", Value(g_.pick(kLetters))}})
                : which == 2 ? record_values()
                             : Value::object({{"a", Value(g_.between(0, 4))}, {"d", Value()}});  // a new null field: no change
  } else if (k < 42) {
    op.kind = Op::Kind::kUpdateMissing;
    op.table = g_.pick(s_.tables);
    op.sys_id = "missing-" + std::to_string(g_.between(0, 99));
    op.values = record_values();
  } else if (k < 45) {
    op.kind = Op::Kind::kUpdateWhere;
    op.table = g_.pick(s_.tables);
    op.where = where();
    op.values = g_.chance(0.5) ? Value::object({{"b", Value(g_.pick(kLetters))}}) : Value::object({{"a", Value(g_.between(0, 4))}});
  } else if (k < 50 && !live_tables.empty()) {
    op.kind = Op::Kind::kDelete;
    op.table = g_.pick(live_tables);
    op.sys_id = g_.pick(view.sys_ids.at(op.table));
  } else if (k < 51) {
    op.kind = Op::Kind::kDeleteWhere;
    op.table = g_.pick(s_.tables);
    op.where = Value::object({{"field", "a"}, {"op", "eq"}, {"value", Value(g_.between(0, 4))}});
  } else if (k < 58) {
    op.kind = Op::Kind::kFireEvent;
    op.name = g_.pick(s_.events);
    op.payload = Value::object({{"k", Value(g_.between(0, 9))}});
  } else if (k < 65) {
    op.kind = Op::Kind::kCallFlow;
    op.flow = g_.pick(ids);  // sometimes not an API flow: an error, nothing starts
    if (s_.custom == "hang" && g_.chance(0.3)) op.flow = "f0";  // the flow whose action never returns
    op.values = Value::object({{"k", Value(g_.between(0, 9))}});
  } else if (k < 68) {
    op.kind = Op::Kind::kTestFlow;
    const FlowSpec& f = s_.flows[g_.index(s_.flows.size())];
    op.flow = f.id;
    if (f.kind == FlowSpec::Kind::kRecord) {
      const auto it = view.sys_ids.find(f.table);
      if (it == view.sys_ids.end() || it->second.empty()) {
        op.kind = Op::Kind::kFireEvent;
        op.name = g_.pick(s_.events);
        op.payload = Value::object({{"k", Value(g_.between(0, 9))}});
        return op;
      }
      op.table = f.table;
      op.sys_id = g_.pick(it->second);
    } else {
      op.values = Value::object({{"k", Value(g_.between(0, 9))}});
    }
  } else if (k < 71 && view.contexts > 0) {
    op.kind = Op::Kind::kCancel;
    op.context = "ctx-" + std::to_string(g_.between(1, static_cast<int64_t>(view.contexts)));
  } else if (k < 72) {
    op.kind = Op::Kind::kCancelUnknown;
    op.context = "ctx-" + std::to_string(view.contexts + 1000);
  } else if (k < 74) {
    const FlowSpec& f = s_.flows[g_.index(s_.flows.size())];
    op.flow = f.id;
    op.kind = view.active.count(f.id) && view.active.at(f.id) ? Op::Kind::kDeactivate : Op::Kind::kActivate;
  } else if (k < 77) {
    // Another version of a definition that has one: saved as a draft, then made the one
    // that runs (activate for a flow, publish for the subflow).
    std::vector<std::string> versioned;
    for (const auto& [id, versions] : s_.versions) {
      if (versions.size() > 1) versioned.push_back(id);
    }
    if (versioned.empty()) {
      op.kind = Op::Kind::kSettle;
      op.duration = g_.between(0, 3000);
      return op;
    }
    op.kind = Op::Kind::kSave;
    op.flow = g_.pick(versioned);
    const auto pub = view.published.find(op.flow);
    const size_t current = pub == view.published.end() ? 0 : pub->second;
    op.version = (current + 1) % s_.versions.at(op.flow).size();
    Op then;
    then.flow = op.flow;
    then.kind = s_.flow(op.flow) ? Op::Kind::kActivate : Op::Kind::kPublish;
    follow_ = then;
  } else if (k < 79) {
    op.kind = Op::Kind::kSetProperty;
    if (g_.chance(0.5)) {
      op.name = "indirect_recursion_limit";
      op.values = Value(g_.between(1, 3));
    } else {
      op.name = "max_iterations";
      op.values = Value(g_.pick(std::vector<int64_t>{2, 3, 1000}));
    }
  } else if (k < 89) {
    op.kind = Op::Kind::kAdvance;
    op.duration = g_.pick(std::vector<int64_t>{0, 50, 100, 300, 700, 1000, 2000, 5000});
  } else {
    op.kind = Op::Kind::kSettle;
    op.duration = g_.chance(0.3) ? g_.between(0, 3000) : int64_t{24} * 3600 * 1000;
  }
  return op;
}

}  // namespace flowrt::sim
