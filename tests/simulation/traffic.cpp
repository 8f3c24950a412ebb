#include "tests/simulation/traffic.h"

namespace flowrt::sim {

std::string Op::describe() const {
  switch (kind) {
    case Kind::kInsert: return "insert " + table + " " + values.to_json();
    case Kind::kUpdate: return "update " + table + "/" + sys_id + " " + values.to_json();
    case Kind::kUpdateMissing: return "update (missing) " + table + "/" + sys_id;
    case Kind::kDelete: return "delete " + table + "/" + sys_id;
    case Kind::kFireEvent: return "fire_event " + name + " " + payload.to_json();
    case Kind::kCallFlow: return "call_flow " + flow + " " + values.to_json();
    case Kind::kCancel: return "cancel " + context;
    case Kind::kCancelUnknown: return "cancel (unknown) " + context;
    case Kind::kActivate: return "activate " + flow;
    case Kind::kDeactivate: return "deactivate " + flow;
    case Kind::kAdvance: return "advance " + std::to_string(duration) + "ms";
    case Kind::kSettle: return "settle " + std::to_string(duration) + "ms";
  }
  return "?";
}

Value Traffic::record_values() {
  return Value::object({{"a", Value(g_.between(0, 4))}, {"b", Value(g_.pick(kLetters))}});
}

Op Traffic::next(const TrafficView& view) {
  Op op;
  const int64_t k = g_.between(0, 99);
  std::vector<std::string> live_tables;
  for (const auto& [t, ids] : view.sys_ids) {
    if (!ids.empty()) live_tables.push_back(t);
  }
  if (k < 26) {
    op.kind = Op::Kind::kInsert;
    op.table = g_.pick(s_.tables);
    op.values = record_values();
  } else if (k < 46 && !live_tables.empty()) {
    op.kind = Op::Kind::kUpdate;
    op.table = g_.pick(live_tables);
    op.sys_id = g_.pick(view.sys_ids.at(op.table));
    const int64_t which = g_.between(0, 2);
    op.values = which == 0   ? Value::object({{"a", Value(g_.between(0, 4))}})
                : which == 1 ? Value::object({{"b", Value(g_.pick(kLetters))}})
                             : record_values();
  } else if (k < 48) {
    op.kind = Op::Kind::kUpdateMissing;
    op.table = g_.pick(s_.tables);
    op.sys_id = "missing-" + std::to_string(g_.between(0, 99));
    op.values = record_values();
  } else if (k < 54 && !live_tables.empty()) {
    op.kind = Op::Kind::kDelete;
    op.table = g_.pick(live_tables);
    op.sys_id = g_.pick(view.sys_ids.at(op.table));
  } else if (k < 62) {
    op.kind = Op::Kind::kFireEvent;
    op.name = g_.pick(s_.events);
    op.payload = Value::object({{"k", Value(g_.between(0, 9))}});
  } else if (k < 70) {
    op.kind = Op::Kind::kCallFlow;
    std::vector<std::string> ids;
    for (const FlowSpec& f : s_.flows) ids.push_back(f.id);
    op.flow = g_.pick(ids);  // sometimes not an API flow: an error, nothing starts
    op.values = Value::object({{"k", Value(g_.between(0, 9))}});
  } else if (k < 74 && view.contexts > 0) {
    op.kind = Op::Kind::kCancel;
    op.context = "ctx-" + std::to_string(g_.between(1, static_cast<int64_t>(view.contexts)));
  } else if (k < 75) {
    op.kind = Op::Kind::kCancelUnknown;
    op.context = "ctx-" + std::to_string(view.contexts + 1000);
  } else if (k < 77) {
    const FlowSpec& f = s_.flows[g_.index(s_.flows.size())];
    op.flow = f.id;
    op.kind = view.active.count(f.id) && view.active.at(f.id) ? Op::Kind::kDeactivate : Op::Kind::kActivate;
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
