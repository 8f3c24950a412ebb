// write_record_json against record_to_value: the text a durable store keeps for an ended
// context must be the JSON of the record every other reader builds. Every part of a record
// once, then seeded random fields.
#include <cmath>
#include <limits>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include <gtest/gtest.h>

#include "plans/value_json.h"
#include "runtime/context.h"
#include "runtime/exec_state.h"
#include "runtime/record_json.h"

namespace flowrt {
namespace {

std::string written(const RecordFields& f) {
  std::string text;
  write_record_json(f, text);
  return text;
}

std::string built(const RecordFields& f) { return record_to_value(f).to_json(); }

Value str(std::string_view s) { return Value(s); }

Node node(Value id, std::string_view action) {
  Node n;
  n.id = std::move(id);
  n.action = Value(action);
  return n;
}

TEST(RecordTextTest, NoTriggerNoCauseNoSteps_IsTheBuiltRecordsText) {
  RecordFields f;
  EXPECT_EQ(written(f), built(f));
  f.seq = 42;
  f.id = str("ctx-42");
  f.flow = str("triage");
  f.status = ContextStatus::kCompleted;
  f.started = 1'700'000'000'000;
  f.ended = 1'700'000'000'250;
  f.run_ms = 2.0;  // a double that prints as an integer: "2.0"
  EXPECT_EQ(written(f), built(f));
  EXPECT_NE(written(f).find(R"("runtime_ms":2.0,)"), std::string::npos) << written(f);
}

TEST(RecordTextTest, EveryTriggerType_WithAndWithoutCaller_IsTheBuiltRecordsText) {
  std::vector<TriggerData> triggers(6);
  triggers[0].type = TriggerType::kRecord;
  triggers[0].table = str("incident");
  triggers[0].operation = RecordOperation::kUpdate;
  triggers[0].sys_id = str("inc-1");
  triggers[1].type = TriggerType::kEvent;
  triggers[1].event_name = str("páge \"now\"");
  triggers[2].type = TriggerType::kSchedule;
  triggers[2].time = 1'700'000'123'456;
  triggers[3].type = TriggerType::kApi;
  triggers[3].payload = *parse_json(R"({"a": 1, "long": "0123456789012345678901234567890123456789", "n": [1, 2.5]})");
  triggers[3].caller = str("ops-bot");
  triggers[4].type = TriggerType::kApi;
  triggers[4].payload = Value(7);  // not an object: no "inputs"
  triggers[5].type = TriggerType::kRecord;
  triggers[5].operation = RecordOperation::kDelete;
  triggers[5].caller = str("someone");
  for (size_t limit : {0, 12}) {
    for (const TriggerData& t : triggers) {
      RecordFields f;
      f.trigger = &t;
      f.value_limit = limit;
      EXPECT_EQ(written(f), built(f)) << "limit " << limit;
    }
  }
}

TEST(RecordTextTest, CausesAndChains_AreTheBuiltRecordsText) {
  Cause outside;  // an outside operation: no context, a chain still
  outside.chain = std::make_shared<const Chain>(Chain{str("a"), str("b")});
  Cause parent;
  parent.context_id = str("ctx-1");
  parent.flow_id = str("a");
  parent.chain = std::make_shared<const Chain>(Chain{str("a")});
  Cause no_chain;
  no_chain.context_id = str("ctx-2");
  no_chain.flow_id = str("b");
  for (const Cause* c : {&outside, &parent, &no_chain}) {
    RecordFields f;
    f.cause = c;
    EXPECT_EQ(written(f), built(f));
  }
}

TEST(RecordTextTest, StepsLogsAndVariables_EveryShape_AreTheBuiltRecordsText) {
  const Node with_id = node(str("look"), "look_up_record");
  const Node without_id = node(Value(), "log");
  std::vector<StepEntry> steps(5);
  steps[0] = StepEntry{str("1"), &with_id, 10, 20, *parse_json(R"({"table": "incident", "where": {"a": [1, {}]}})"),
                       *parse_json(R"({"record": {"sys_id": "x", "text": "0123456789012345678901234567890"}})"),
                       StepStatus::kCompleted};
  steps[1] = StepEntry{str("2"), &without_id, 20, -1, Value(), Value(), StepStatus::kInProgress};
  steps[2] = StepEntry{str("3.then.1#2"), &with_id, 30, 31, Value::empty_object(),
                       *parse_json(R"({"error": "no such table", "more": 1})"), StepStatus::kError};
  steps[3] = StepEntry{str("4"), &without_id, 40, 41, Value::empty_object(), Value::empty_object(),
                       StepStatus::kError};  // failed without an "error" output
  steps[4] = StepEntry{str("5"), &with_id, 50, 52, Value::object({{"bytes", str("caf\xC3\xA9 \xFF\x01\n")}}),
                       Value::object({{"x", Value(std::numeric_limits<double>::quiet_NaN())}, {"y", Value(1e300)}}),
                       StepStatus::kSkipped};
  std::vector<LogEntry> logs = {
      LogEntry{100, LogLevel::kInfo, str("1"), str("short")},
      LogEntry{101, LogLevel::kWarn, str("2"), str("a message much longer than the limit, é at the cut")},
      LogEntry{102, LogLevel::kError, Value(), Value(3)},
  };
  const Value names = Value::array({str("count"), str("note"), str("extra")});
  const Value values = Value::array({Value(3), str("a note longer than twelve bytes")});
  for (size_t limit : {0, 1, 12, 40, 4096}) {
    RecordFields f;
    f.steps = &steps;
    f.logs = logs;
    f.variable_names = names;
    f.variables = values;
    f.error = *parse_json(R"({"message": "failed", "step": "3.then.1#2"})");
    f.plan_version = str("v7");
    f.run_ms = 1.23456789;
    f.value_limit = limit;
    EXPECT_EQ(written(f), built(f)) << "limit " << limit;
  }
}

// A value of up to `depth` levels: any JSON type, strings with escapes, multi-byte and
// ill-formed UTF-8, integers and doubles of every size.
Value random_value(std::mt19937_64& rng, int depth) {
  const int kind = static_cast<int>(rng() % (depth > 0 ? 8 : 6));
  switch (kind) {
    case 0: return Value();
    case 1: return Value(rng() % 2 == 0);
    case 2: return Value(static_cast<long long>(rng()));
    case 3: {
      const double d = std::ldexp(static_cast<double>(static_cast<int64_t>(rng())), static_cast<int>(rng() % 200) - 100);
      return Value(d);
    }
    case 4:
    case 5: {
      static const std::string_view kPieces[] = {"a", "\"", "\\", "\n", "\x01", "\xC3\xA9", "\xE2\x82\xAC", "\xFF",
                                                 "\xC3", " ", "z", "\xF0\x9F\x98\x80"};
      std::string s;
      const size_t n = rng() % 40;
      for (size_t i = 0; i < n; ++i) s += kPieces[rng() % std::size(kPieces)];
      return Value(std::string_view(s));
    }
    case 6: {
      std::vector<Value> items;
      for (size_t i = rng() % 4; i > 0; --i) items.push_back(random_value(rng, depth - 1));
      return Value::array(std::move(items));
    }
    default: {
      std::vector<Member> members;
      for (size_t i = rng() % 4; i > 0; --i) {
        members.push_back(Member{Value(std::string_view("k" + std::to_string(i))), random_value(rng, depth - 1)});
      }
      return Value::object(std::move(members));
    }
  }
}

Value random_object(std::mt19937_64& rng) {
  std::vector<Member> members;
  for (size_t i = rng() % 4; i > 0; --i) {
    members.push_back(Member{Value(std::string_view("in" + std::to_string(i))), random_value(rng, 3)});
  }
  return Value::object(std::move(members));
}

TEST(RecordTextTest, SeededRandomFields_AreTheBuiltRecordsText) {
  std::mt19937_64 rng(20261207);
  const Node nodes[] = {node(str("s"), "update_record"), node(Value(), "custom.thing")};
  for (int round = 0; round < 2000; ++round) {
    TriggerData t;
    t.type = static_cast<TriggerType>(rng() % 4);
    t.operation = static_cast<RecordOperation>(rng() % 3);
    t.table = random_value(rng, 0);
    t.sys_id = random_value(rng, 0);
    t.event_name = random_value(rng, 0);
    t.time = static_cast<TimeMs>(rng() % 4'000'000'000'000ULL);
    t.payload = rng() % 3 == 0 ? random_value(rng, 3) : random_object(rng);
    t.caller = rng() % 2 == 0 ? Value() : random_value(rng, 0);
    std::vector<StepEntry> steps;
    for (size_t i = rng() % 5; i > 0; --i) {
      StepEntry e;
      e.path = random_value(rng, 0);
      e.node = &nodes[rng() % 2];
      e.started = static_cast<TimeMs>(rng() % 100);
      e.ended = rng() % 3 == 0 ? -1 : static_cast<TimeMs>(rng() % 100);
      e.inputs = rng() % 5 == 0 ? Value() : random_object(rng);
      e.outputs = rng() % 4 == 0 ? Value() : random_value(rng, 3);
      if (rng() % 3 == 0) e.outputs = Value::object({{"error", random_value(rng, 1)}});
      e.status = static_cast<StepStatus>(rng() % 5);
      steps.push_back(std::move(e));
    }
    std::vector<LogEntry> logs;
    for (size_t i = rng() % 3; i > 0; --i) {
      logs.push_back(LogEntry{static_cast<TimeMs>(rng() % 1000), static_cast<LogLevel>(rng() % 3), random_value(rng, 0),
                              random_value(rng, 1)});
    }
    Cause cause;
    if (rng() % 2 == 0) cause.context_id = random_value(rng, 0);
    cause.flow_id = random_value(rng, 0);
    if (rng() % 2 == 0) cause.chain = std::make_shared<const Chain>(Chain{random_value(rng, 0), random_value(rng, 0)});
    RecordFields f;
    f.seq = rng();
    f.id = random_value(rng, 0);
    f.flow = random_value(rng, 0);
    f.plan_version = random_value(rng, 0);
    f.status = static_cast<ContextStatus>(rng() % 5);
    f.trigger = rng() % 5 == 0 ? nullptr : &t;
    f.cause = rng() % 3 == 0 ? nullptr : &cause;
    f.started = static_cast<TimeMs>(rng() % 3) - 1;
    f.ended = static_cast<TimeMs>(rng() % 3) - 1;
    f.run_ms = static_cast<double>(rng() % 1'000'000) / 997;
    f.steps = rng() % 6 == 0 ? nullptr : &steps;
    f.logs = logs;
    std::vector<Value> names, vars;
    for (size_t i = rng() % 4; i > 0; --i) names.push_back(Value(std::string_view("v" + std::to_string(i))));
    for (size_t i = rng() % 4; i > 0; --i) vars.push_back(random_value(rng, 2));
    f.variable_names = Value::array(std::move(names));
    f.variables = Value::array(std::move(vars));
    f.error = rng() % 2 == 0 ? Value() : random_value(rng, 2);
    f.value_limit = rng() % 3 == 0 ? 0 : rng() % 64;
    ASSERT_EQ(written(f), built(f)) << "round " << round;
  }
}

}  // namespace
}  // namespace flowrt
