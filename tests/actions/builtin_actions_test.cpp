// The built-in actions on their own, against a fake StepHost: what they ask of the engine,
// what they output, and when they park.
#include <gtest/gtest.h>

#include <map>

#include "actions/action.h"
#include "actions/action_registry.h"
#include "actions/custom_action.h"
#include "compiler/signatures.h"
#include "plans/value_json.h"

namespace flowrt {
namespace {

class FakeHost final : public StepHost {
 public:
  TimeMs now() const override { return 1000; }
  const Value& context_id() const override { return id_; }
  void log(LogLevel level, std::string_view message) override {
    logs.push_back(std::string(level_name(level)) + ":" + std::string(message));
  }
  bool cancel_requested() const override { return false; }
  Result<Value> create_record(const Value& table, const Value& values, const Value&) override {
    Value r = values.with("sys_id", Value("new1"));
    records[std::string(table.as_string()) + "/new1"] = r;
    return r;
  }
  Result<Value> update_record(const Value& table, const Value& sys_id, const Value& values, const Value&) override {
    auto it = records.find(std::string(table.as_string()) + "/" + std::string(sys_id.as_string()));
    if (it == records.end()) return Error{"missing"};
    it->second = it->second.merged(values);
    return it->second;
  }
  Result<bool> delete_record(const Value&, const Value&, const Value&) override { return true; }
  Result<Value> find_records(const RecordQuery& q) override {
    last_query_limit = q.limit;
    return Value::array({Value::object({{"sys_id", Value("a")}}), Value::object({{"sys_id", Value("b")}})});
  }
  Value read_record(std::string_view table, std::string_view sys_id) override {
    auto it = records.find(std::string(table) + "/" + std::string(sys_id));
    return it == records.end() ? Value() : it->second;
  }
  Status fire_event(const Value& name, const Value&) override {
    events.emplace_back(name.as_string());
    return Status::ok();
  }
  Result<StartedFlow> start_flow(const Value& flow, const Value&) override {
    if (flow == Value("busy")) return StartedFlow{Value(), true, Value("already_running")};
    return StartedFlow{Value("ctx-9"), false, Value()};
  }
  bool release_lock(std::string_view name) override { return name == "held"; }
  Value try_lock(const WaitRequest& w) override {
    return w.lock_name == Value("free") ? Value::object({{"result", Value("success")}}) : Value();
  }

  Value id_{"ctx-1"};
  std::vector<std::string> logs;
  std::vector<std::string> events;
  std::map<std::string, Value> records;
  size_t last_query_limit = 99;
};

// A step of a built-in kind with the given inputs in signature order.
struct StepFixture {
  ActionStep step;
  std::vector<Value> inputs;
  Scope scope;

  StepFixture(ActionKind kind, std::initializer_list<std::pair<std::string_view, Value>> given) {
    step.kind = kind;
    const ActionSignature& sig = builtin_signature(kind);
    step.action = sig.name;
    for (const InputParam& p : sig.inputs) {
      step.input_names.push_back(Value(std::string_view(p.param.name)));
      Template t;
      inputs.push_back(Value());
      for (const auto& [name, v] : given) {
        if (name == p.param.name) {
          t.kind = Template::Kind::kConstant;
          t.constant = v;
          inputs.back() = v;
        }
      }
      step.inputs.push_back(t);
    }
  }
  StepOutcome start(StepHost& host) { return builtin_action(step.kind)->start(StepCall{step, inputs, scope, host}); }
  StepOutcome resume(StepHost& host, const WakeUp& w) {
    return builtin_action(step.kind)->resume(StepCall{step, inputs, scope, host}, w);
  }
};

TEST(BuiltinActionsTest, Log_WritesAtItsLevel_RejectsUnknownLevels) {
  FakeHost host;
  EXPECT_EQ(StepFixture(ActionKind::kLog, {{"message", Value(42)}}).start(host).kind, StepOutcome::Kind::kDone);
  EXPECT_EQ(StepFixture(ActionKind::kLog, {{"message", Value("m")}, {"level", Value("error")}}).start(host).kind,
            StepOutcome::Kind::kDone);
  EXPECT_EQ(host.logs, (std::vector<std::string>{"info:42", "error:m"}));
  StepOutcome bad = StepFixture(ActionKind::kLog, {{"message", Value("m")}, {"level", Value("loud")}}).start(host);
  EXPECT_EQ(bad.kind, StepOutcome::Kind::kFailed);
  EXPECT_NE(bad.error.find("info, warn or error"), std::string::npos);
}

TEST(BuiltinActionsTest, Fail_AlwaysFailsWithItsMessage) {
  FakeHost host;
  StepOutcome o = StepFixture(ActionKind::kFail, {{"message", Value("stop here")}}).start(host);
  EXPECT_EQ(o.kind, StepOutcome::Kind::kFailed);
  EXPECT_EQ(o.error, "stop here");
}

TEST(BuiltinActionsTest, RecordActions_OutputInDeclaredOrder) {
  FakeHost host;
  StepOutcome c = StepFixture(ActionKind::kCreateRecord, {{"table", Value("t")}, {"values", *parse_json(R"({"a": 1})")}}).start(host);
  ASSERT_EQ(c.kind, StepOutcome::Kind::kDone);
  EXPECT_EQ(c.outputs.members()[0].key.as_string(), "record");
  EXPECT_EQ(c.outputs["sys_id"], Value("new1"));
  StepOutcome bad = StepFixture(ActionKind::kCreateRecord, {{"table", Value("t")}, {"values", Value(3)}}).start(host);
  EXPECT_EQ(bad.kind, StepOutcome::Kind::kFailed);
  StepOutcome one = StepFixture(ActionKind::kLookUpRecord, {{"table", Value("t")}}).start(host);
  EXPECT_EQ(host.last_query_limit, 1u);
  EXPECT_EQ(one.outputs["record"]["sys_id"], Value("a"));
  EXPECT_EQ(one.outputs["found"], Value(true));
  StepOutcome many = StepFixture(ActionKind::kLookUpRecords, {{"table", Value("t")}, {"limit", Value(-1)}}).start(host);
  EXPECT_EQ(many.kind, StepOutcome::Kind::kFailed);
}

TEST(BuiltinActionsTest, Wait_ParksUntilNowPlusDuration) {
  FakeHost host;
  StepOutcome o = StepFixture(ActionKind::kWait, {{"duration", Value("2s")}}).start(host);
  ASSERT_EQ(o.kind, StepOutcome::Kind::kPark);
  EXPECT_EQ(o.wait.kind, WaitRequest::Kind::kTimer);
  EXPECT_EQ(o.wait.deadline, 3000);
  EXPECT_EQ(StepFixture(ActionKind::kWait, {{"duration", Value(0)}}).start(host).kind, StepOutcome::Kind::kDone);
  EXPECT_EQ(StepFixture(ActionKind::kWait, {{"duration", Value("later")}}).start(host).kind, StepOutcome::Kind::kFailed);
}

TEST(BuiltinActionsTest, WaitForCondition_ParksWithBoundCondition_ResumesWithRecordOrTimeout) {
  FakeHost host;
  host.records["t/r"] = *parse_json(R"({"sys_id": "r", "v": 1})");
  StepFixture f(ActionKind::kWaitForCondition, {{"table", Value("t")}, {"sys_id", Value("r")}, {"timeout", Value("1m")}});
  f.step.condition.kind = Condition::Kind::kCompare;
  f.step.condition.subject.root = PillRoot::kField;
  f.step.condition.subject.path.push_back(PathSegment{Value("v"), -1});
  f.step.condition.op = CompareOp::kEq;
  f.step.condition.value.kind = Template::Kind::kConstant;
  f.step.condition.value.constant = Value(2);
  StepOutcome parked = f.start(host);
  ASSERT_EQ(parked.kind, StepOutcome::Kind::kPark);
  EXPECT_EQ(parked.wait.kind, WaitRequest::Kind::kRecord);
  EXPECT_EQ(parked.wait.deadline, 61000);
  ASSERT_TRUE(parked.wait.condition);
  WakeUp met;
  met.kind = WakeUp::Kind::kRecord;
  met.record = *parse_json(R"({"sys_id": "r", "v": 2})");
  StepOutcome done = f.resume(host, met);
  EXPECT_EQ(done.outputs["timed_out"], Value(false));
  EXPECT_EQ(done.outputs["record"]["v"], Value(2));
  WakeUp timeout;
  timeout.kind = WakeUp::Kind::kTimeout;
  EXPECT_EQ(f.resume(host, timeout).outputs["timed_out"], Value(true));
  host.records.clear();
  EXPECT_EQ(f.start(host).kind, StepOutcome::Kind::kFailed);
}

TEST(BuiltinActionsTest, StartFlowAndFireEvent_GoThroughTheHost) {
  FakeHost host;
  StepOutcome started = StepFixture(ActionKind::kStartFlow, {{"flow", Value("child")}}).start(host);
  EXPECT_EQ(started.outputs, *parse_json(R"({"context_id": "ctx-9", "skipped": false})"));
  StepOutcome skipped = StepFixture(ActionKind::kStartFlow, {{"flow", Value("busy")}}).start(host);
  EXPECT_EQ(skipped.outputs, *parse_json(R"({"context_id": null, "skipped": true})"));
  EXPECT_EQ(StepFixture(ActionKind::kFireEvent, {{"name", Value("go")}}).start(host).kind, StepOutcome::Kind::kDone);
  EXPECT_EQ(host.events, std::vector<std::string>{"go"});
}

TEST(BuiltinActionsTest, Lock_ParksWithTheRequest_Unlock_ReportsWhetherItWasHeld) {
  FakeHost host;
  StepOutcome o = StepFixture(ActionKind::kLock, {{"key", Value("k")}, {"max_attempts", Value(4)}, {"delay", Value("2s")},
                                                  {"weight", Value(2)}, {"max_duration", Value("5m")}})
                      .start(host);
  ASSERT_EQ(o.kind, StepOutcome::Kind::kPark);
  EXPECT_EQ(o.wait.kind, WaitRequest::Kind::kLock);
  EXPECT_EQ(o.wait.lock_name, Value("k"));
  EXPECT_EQ(o.wait.weight, 2);
  EXPECT_EQ(o.wait.deadline, 1000 + 3 * 2000) << "(max_attempts - 1) x delay after the first attempt";
  EXPECT_EQ(o.wait.max_duration, 300000);
  EXPECT_EQ(StepFixture(ActionKind::kLock, {{"key", Value("k")}, {"weight", Value(0)}}).start(host).kind,
            StepOutcome::Kind::kFailed);
  StepOutcome now = StepFixture(ActionKind::kLock, {{"key", Value("free")}}).start(host);
  EXPECT_EQ(now.kind, StepOutcome::Kind::kDone) << "granted without parking when the engine can";
  EXPECT_EQ(StepFixture(ActionKind::kUnlock, {{"key", Value("held")}}).start(host).outputs["released"], Value(true));
  EXPECT_EQ(StepFixture(ActionKind::kUnlock, {{"key", Value("other")}}).start(host).outputs["released"], Value(false));
  EXPECT_EQ(host.logs.back(), "warn:unlock of lock 'other', which this context does not hold");
}

TEST(ActionRegistryTest, Lookup_ByNameAndIndex) {
  ActionRegistry registry;
  CustomActionType t;
  t.name = "x.y";
  t.outputs = {{"o", ParamType::kString, false}};
  t.run = [](CustomActionContext&) -> Result<Value> { return Value::object({{"o", Value(5)}}); };
  ASSERT_TRUE(registry.add(t).is_ok());
  uint32_t index = 99;
  ASSERT_TRUE(registry.find("x.y", &index));
  EXPECT_EQ(index, 0u);
  EXPECT_FALSE(registry.find("nope", &index));
  FakeHost host;
  ActionStep step;
  Scope scope;
  StepOutcome o = registry.action(0)->start(StepCall{step, {}, scope, host});
  EXPECT_EQ(o.kind, StepOutcome::Kind::kFailed) << "an output of the wrong declared type";
  EXPECT_NE(o.error.find("output 'o' must be string, got integer"), std::string::npos);
  EXPECT_EQ(registry.action(1), nullptr);
}

}  // namespace
}  // namespace flowrt
