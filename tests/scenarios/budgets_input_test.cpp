// Input budgets (docs/BEHAVIOUR.md, "Budgets"): definition and events files, JSON nesting,
// strings, definition count, templates and steps per flow. For each, the bound itself
// passes and one past it fails with an error naming the budget, its limit and where; the
// named hostile inputs are refused cleanly and the engine keeps working afterwards.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <thread>
#include <utility>

#include "runtime/harness.h"
#include "testing/flow_test.h"
#include "tests/support/test_support.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;
namespace fs = std::filesystem;

constexpr const char* kGood = R"({"id": "good", "trigger": {"type": "api"},
  "actions": [{"action": "log", "inputs": {"message": "still working"}}]})";

class InputBudgetsTest : public FlowTest {
 protected:
  void SetUp() override {
    FlowTest::SetUp();
    dir_ = fs::path(test_support::temp_path("flowrt-budgets-" + test_support::current_test_file_name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_);
  }
  void TearDown() override {
    fs::remove_all(dir_);
    FlowTest::TearDown();
  }
  std::string Write(const std::string& name, const std::string& text) {
    const std::string path = (dir_ / name).string();
    std::ofstream(path, std::ios::binary) << text;
    return path;
  }
  void SetProperty(std::string_view name, long long value) {
    Status s = engine().set_property(name, Value(value));
    ASSERT_TRUE(s.is_ok()) << s.message();
  }
  Status Events(std::string_view text) { return Harness(engine()).run_text(text, "events.jsonl"); }
  // The first diagnostic of loading `text`, or "" when it loads.
  std::string LoadError(std::string_view text) {
    Diagnostics d = engine().load_text(text, "test.json");
    return d.empty() ? std::string() : d.list().front().describe();
  }
  // The engine still loads and runs a flow after a refusal.
  void ExpectStillWorking() {
    ASSERT_TRUE(Load(kGood));
    CallFlow("good");
    Settle();
    EXPECT_THAT(OnlyContext("good"), HasLog("still working"));
  }

  fs::path dir_;
};

// ---- max_definition_file_bytes ----

TEST_F(InputBudgetsTest, DefinitionFileBytes_AtTheLimitLoads_OnePastIsRefusedBeforeParsing) {
  const std::string text = R"({"id": "f", "trigger": {"type": "api"}, "actions": []})";
  const std::string at = Write("at.json", text);
  const std::string past = Write("past.json", text + " ");
  SetProperty("max_definition_file_bytes", static_cast<long long>(text.size()));
  Diagnostics ok = engine().load({at});
  EXPECT_TRUE(ok.empty()) << ok.describe();
  Diagnostics refused = engine().load({past});
  ASSERT_EQ(refused.size(), 1u);
  EXPECT_EQ(refused.list().front().describe(),
            past + ": /: file of " + std::to_string(text.size() + 1) + " bytes is larger than the limit of " +
                std::to_string(text.size()) + " bytes (max_definition_file_bytes)");
  // Not parsed: a file past the limit is refused for its size even when it is not JSON.
  Diagnostics garbage = engine().load({Write("garbage.json", std::string(text.size() + 1, '['))});
  EXPECT_NE(garbage.describe().find("(max_definition_file_bytes)"), std::string::npos) << garbage.describe();
  EXPECT_EQ(engine().load_text(text + " ", "inline.json").describe(),
            "inline.json: /: definitions of " + std::to_string(text.size() + 1) +
                " bytes are larger than the limit of " + std::to_string(text.size()) +
                " bytes (max_definition_file_bytes)");
  SetProperty("max_definition_file_bytes", 1 << 20);
  ExpectStillWorking();
}

// ---- max_events_file_bytes ----

TEST_F(InputBudgetsTest, EventsFileBytes_AtTheLimitRuns_OnePastIsRefusedBeforeParsing) {
  const std::string line = R"({"op": "insert", "table": "t", "values": {"n": 1}})" "\n";
  const std::string at = Write("at.jsonl", line);
  const std::string past = Write("past.jsonl", line + "\n");
  SetProperty("max_events_file_bytes", static_cast<long long>(line.size()));
  Status ok = Harness(engine()).run_file(at);
  EXPECT_TRUE(ok.is_ok()) << ok.message();
  Status refused = Harness(engine()).run_file(past);
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.message(), past + ": file of " + std::to_string(line.size() + 1) +
                                   " bytes is larger than the limit of " + std::to_string(line.size()) +
                                   " bytes (max_events_file_bytes)");
  EXPECT_EQ(Records("t").size(), 1u) << "nothing of the refused file is applied";
  SetProperty("max_events_file_bytes", 1 << 20);
  ExpectStillWorking();
}

// A pipe (a FIFO here; /dev/stdin and a shell's <(...) are the same) has no size to look
// at first: it is read to its end, and refused as soon as it passes the limit.
TEST_F(InputBudgetsTest, EventsFileBytes_FromAPipe_AtTheLimitRuns_OnePastIsRefused) {
  const std::string line = R"({"op": "insert", "table": "t", "values": {"n": 1}})" "\n";
  SetProperty("max_events_file_bytes", static_cast<long long>(line.size()));
  auto run_from_fifo = [&](const std::string& text) {
    const std::string fifo = (dir_ / "events.fifo").string();
    fs::remove(fifo);
    EXPECT_EQ(mkfifo(fifo.c_str(), 0600), 0);
    std::thread writer([&] { std::ofstream(fifo, std::ios::binary) << text; });  // opens once a reader does
    Status s = Harness(engine()).run_file(fifo);
    // A reader of our own, so that the writer never waits for ever for one that did not come.
    const int unblock = open(fifo.c_str(), O_RDONLY | O_NONBLOCK);
    writer.join();
    if (unblock >= 0) close(unblock);
    return std::make_pair(s, fifo);
  };
  auto [ok, fifo] = run_from_fifo(line);
  EXPECT_TRUE(ok.is_ok()) << ok.message();
  EXPECT_EQ(Records("t").size(), 1u);
  auto [refused, fifo_again] = run_from_fifo(line + "\n");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.message(), fifo_again + ": file is larger than the limit of " + std::to_string(line.size()) +
                                   " bytes (max_events_file_bytes)");
  EXPECT_EQ(Records("t").size(), 1u) << "nothing of the refused pipe is applied";
  Status directory = Harness(engine()).run_file(dir_.string());
  EXPECT_EQ(directory.message(), dir_.string() + ": cannot read: it is a directory");
  SetProperty("max_events_file_bytes", 1 << 20);
  ExpectStillWorking();
}

// ---- max_json_depth ----

// A definition whose JSON nests `depth` levels: the object, "variables", then arrays.
std::string NestedDefinition(int depth) {
  return R"({"id": "deep", "trigger": {"type": "api"}, "variables": {"v": )" + std::string(depth - 2, '[') +
         std::string(depth - 2, ']') + "}, \"actions\": []}";
}

TEST_F(InputBudgetsTest, JsonDepth_AtTheLimitLoads_OnePastIsRefusedWithLineAndColumn) {
  SetProperty("max_json_depth", 8);
  EXPECT_EQ(LoadError(NestedDefinition(8)), "");
  const std::string past = NestedDefinition(9);
  const size_t column = past.find('[') + 7;  // the ninth level opens at the seventh bracket
  // Named by the pointer of the value that goes too deep: the sixth array's first item.
  EXPECT_EQ(LoadError(past), "test.json: /variables/v/0/0/0/0/0/0: line 1, column " + std::to_string(column) +
                                 ": nesting deeper than the limit of 8 levels (max_json_depth)");
}

TEST_F(InputBudgetsTest, JsonDepth_InAnEventsLine_AtTheLimitApplies_OnePastIsRefusedWithItsLine) {
  SetProperty("max_json_depth", 4);
  // Levels: the line, "values", then arrays.
  Status ok = Events(R"({"op": "insert", "table": "t", "values": {"v": [[1]]}})");
  EXPECT_TRUE(ok.is_ok()) << ok.message();
  Status refused = Events("\n" R"({"op": "insert", "table": "t", "values": {"v": [[[1]]]}})");
  ASSERT_FALSE(refused.is_ok());
  EXPECT_EQ(refused.message(), "events.jsonl:2: column 50: nesting deeper than the limit of 4 levels (max_json_depth)");
  EXPECT_EQ(Records("t").size(), 1u);
}

// A value built in C++ and given to the API nests no deeper than a JSON text may: it is
// refused naming the budget (until 2026-12-06 it was taken, and one some 70,000 deep
// crashed the process when written out). A custom action's outputs likewise fail its step.
TEST_F(InputBudgetsTest, JsonDepth_OfValuesGivenToTheApi_AtTheLimitTaken_DeeperRefused) {
  SetProperty("max_json_depth", 8);
  auto nested = [](int arrays) {
    Value v(1);
    for (int i = 0; i < arrays; ++i) v = Value::array({v});
    return v;
  };
  // The values object is the first level, its field's arrays the rest.
  ASSERT_TRUE(engine().insert("t", Value::object({{"v", nested(7)}})).is_ok());
  const std::string refused = "values nests deeper than the limit of 8 (max_json_depth)";
  EXPECT_EQ(engine().insert("t", Value::object({{"v", nested(8)}})).message(), refused);
  const Value deep = Value::object({{"v", nested(20000)}});
  EXPECT_EQ(engine().insert("t", deep).message(), refused);
  const std::string sys_id(Records("t").at(0)["sys_id"].as_string());
  EXPECT_EQ(engine().update("t", sys_id, deep).message(), refused);
  EXPECT_EQ(engine().fire_event("e", deep).message(), "payload nests deeper than the limit of 8 (max_json_depth)");
  ASSERT_TRUE(Load(R"({"id": "api", "trigger": {"type": "api"}, "actions": []})"));
  EXPECT_EQ(engine().call_flow("api", deep).message(), "inputs nests deeper than the limit of 8 (max_json_depth)");
  EXPECT_EQ(engine().test_flow("api", Value(), deep).message(), "inputs nests deeper than the limit of 8 (max_json_depth)");
  EXPECT_EQ(engine().find_records("t", deep, 10).message(), "where nests deeper than the limit of 8 (max_json_depth)");
  EXPECT_EQ(Records("t").size(), 1u);

  CustomActionType t;
  t.name = "deep.out";
  t.outputs = {{"o", ParamType::kAny, false}};
  t.run = [&nested](CustomActionContext&) -> Result<Value> { return Value::object({{"o", nested(20000)}}); };
  ASSERT_TRUE(engine().register_action(t).is_ok());
  ASSERT_TRUE(Load(R"({"id": "d", "trigger": {"type": "api"}, "actions": [{"id": "s", "action": "deep.out"}]})"));
  CallFlow("d");
  Settle();
  EXPECT_THAT(OnlyContext("d"), FailedWith("action 'deep.out' returned outputs nesting deeper than the limit of 8 (max_json_depth)"));
  ExpectStillWorking();
}

TEST_F(InputBudgetsTest, JsonDepth_HostileBrackets_AreRefusedCleanly_InDefinitionsAndEvents) {
  const std::string brackets(100000, '[');
  std::string objects;
  for (int i = 0; i < 500000; ++i) objects += "{\"a\":";
  for (const std::string* bomb : {&brackets, static_cast<const std::string*>(&objects)}) {
    const std::string error = LoadError(*bomb);
    // The pointer is that of the deepest enclosing value whose pointer fits in 256 bytes.
    std::string pointer;
    for (int i = 0; i < 128; ++i) pointer += bomb == &brackets ? "/0" : "/a";
    EXPECT_EQ(error, "test.json: " + pointer + ": line 1, column " + std::string(bomb == &brackets ? "257" : "1281") +
                         ": nesting deeper than the limit of 256 levels (max_json_depth)");
    EXPECT_EQ(engine().load({Write("bomb.json", *bomb)}).list().front().message,
              error.substr(error.find("line 1")));
    Status s = Events("{\"op\": \"insert\", \"table\": \"t\", \"values\": {\"v\": " + *bomb);
    ASSERT_FALSE(s.is_ok());
    EXPECT_NE(s.message().find("events.jsonl:1: column "), std::string::npos) << s.message();
    EXPECT_NE(s.message().find("nesting deeper than the limit of 256 levels (max_json_depth)"), std::string::npos);
  }
  ExpectStillWorking();
}

// ---- max_string_bytes ----

TEST_F(InputBudgetsTest, StringBytes_AtTheLimitLoads_OnePastIsRefusedWhereItStarts) {
  SetProperty("max_string_bytes", 16);
  auto flow = [](const std::string& name) {
    return R"({"id": "s", "name": ")" + name + R"(", "trigger": {"type": "api"}, "actions": []})";
  };
  EXPECT_EQ(LoadError(flow(std::string(16, 'x'))), "");
  EXPECT_EQ(LoadError(flow(std::string(17, 'x'))),
            "test.json: /name: line 1, column 21: string longer than the limit of 16 bytes (max_string_bytes)");
  // In an events line too; an escape counts as written.
  Status ok = Events(R"({"op": "insert", "table": "t", "values": {"s": "0123456789abcd\n"}})");
  EXPECT_TRUE(ok.is_ok()) << ok.message();
  Status refused = Events(R"({"op": "insert", "table": "t", "values": {"s": "0123456789abcde\n"}})");
  EXPECT_EQ(refused.message(), "events.jsonl:1: column 48: string longer than the limit of 16 bytes (max_string_bytes)");
  EXPECT_EQ(Records("t").size(), 1u);
}

TEST_F(InputBudgetsTest, StringBytes_A100MegabyteString_IsRefusedClearly_InADefinitionAndAnEvent) {
  const std::string huge(100u << 20, 'x');
  const std::string definition = R"({"id": "big", "name": ")" + huge + R"(", "trigger": {"type": "api"}, "actions": []})";
  const std::string event = R"({"op": "fire_event", "name": "e", "payload": ")" + huge + "\"}";
  // With the default file budgets, the size is what is refused first.
  EXPECT_NE(LoadError(definition).find("larger than the limit of 67108864 bytes (max_definition_file_bytes)"),
            std::string::npos);
  EXPECT_EQ(Events(event).message(), "events.jsonl:1: line of " + std::to_string(event.size()) +
                                         " bytes is larger than the limit of 67108864 bytes (max_events_file_bytes)");
  // With room for the files, the string itself.
  SetProperty("max_definition_file_bytes", 1ll << 30);
  SetProperty("max_events_file_bytes", 1ll << 30);
  EXPECT_EQ(LoadError(definition),
            "test.json: /name: line 1, column 23: string longer than the limit of 16777216 bytes (max_string_bytes)");
  Status s = Events(event);
  EXPECT_EQ(s.message(), "events.jsonl:1: column 46: string longer than the limit of 16777216 bytes (max_string_bytes)");
  ExpectStillWorking();
}

// An error quoting a value a user wrote quotes at most 64 bytes of it: a definition whose
// "type" is a 10 MB string, an events line whose "table" is one, each get a short message
// (until 2026-12-06 such messages held the whole value).
TEST_F(InputBudgetsTest, ErrorsQuoteAtMost64BytesOfAValue_InADefinitionAndAnEvent) {
  const std::string big(10u << 20, 'x');
  const std::string error = LoadError(R"({"id": "big", "type": ")" + big + R"(", "actions": []})");
  EXPECT_EQ(error, "test.json: /type: type must be \"flow\", \"subflow\" or \"action\", not \"" + std::string(63, 'x') + "...");
  Status s = Events(R"({"op": "insert", "table": [")" + big + R"("], "values": {}})");
  EXPECT_FALSE(s.is_ok());
  EXPECT_LT(s.message().size(), 300u) << s.message().substr(0, 300);
  ExpectStillWorking();
}

// ---- max_definitions ----

std::string Flows(int n, const char* prefix) {
  std::string out = "[";
  for (int i = 0; i < n; ++i) {
    out += std::string(i ? "," : "") + R"({"id": ")" + prefix + std::to_string(i) +
           R"(", "trigger": {"type": "api"}, "actions": []})";
  }
  return out + "]";
}

TEST_F(InputBudgetsTest, MaxDefinitions_AtTheLimitLoads_OnePastIsRefused_AndNothingIsAdded) {
  SetProperty("max_definitions", 3);
  EXPECT_EQ(LoadError(Flows(4, "a")), "test.json: /3: more than 3 definitions (max_definitions)");
  EXPECT_EQ(LoadError(Flows(2, "b")), "");
  EXPECT_EQ(LoadError(Flows(2, "c")),
            "test.json: /: 4 definitions would be registered, more than the limit of 3 (max_definitions)");
  EXPECT_FALSE(engine().call_flow("c0").is_ok()) << "nothing of a refused load is added";
  ASSERT_TRUE(engine().save(Json(R"({"id": "d", "trigger": {"type": "api"}, "actions": []})")).is_ok());
  Status s = engine().save(Json(R"({"id": "e", "trigger": {"type": "api"}, "actions": []})"));
  EXPECT_EQ(s.message(), "definition 'e' not saved: 3 definitions are registered, the limit (max_definitions) is 3");
  // Replacing a draft adds nothing.
  EXPECT_TRUE(engine().save(Json(R"({"id": "d", "trigger": {"type": "api"}, "actions": []})")).is_ok());
  CallFlow("b1");
  Settle();
  EXPECT_THAT(OnlyContext("b1"), HasStatus("completed"));
}

// ---- max_template_bytes ----

TEST_F(InputBudgetsTest, TemplateBytes_AtTheLimitCompiles_OnePastIsRefusedWithItsPointer) {
  SetProperty("max_template_bytes", 32);
  auto flow = [](const std::string& id, size_t bytes) {
    const std::string pill = "{{flow.id}}";
    return R"({"id": ")" + id + R"(", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": ")" +
           pill + std::string(bytes - pill.size(), '.') + R"("}}]})";
  };
  EXPECT_EQ(LoadError(flow("at", 32)), "");
  EXPECT_EQ(LoadError(flow("past", 33)),
            "test.json: /actions/0/inputs/message: template of 33 bytes is longer than the limit of 32 bytes "
            "(max_template_bytes)");
  CallFlow("at");
  Settle();
  EXPECT_THAT(OnlyContext("at"), HasLog("at" + std::string(21, '.')));
}

// ---- max_actions (steps per flow) ----

TEST_F(InputBudgetsTest, MaxActions_AtTheLimitLoads_OnePastIsRefusedNamingTheFlow) {
  SetProperty("max_actions", 3);
  auto flow = [](const std::string& id, int steps) {
    std::string actions;
    for (int i = 0; i < steps; ++i) actions += std::string(i ? "," : "") + R"({"action": "log", "inputs": {"message": "x"}})";
    return R"({"id": ")" + id + R"(", "trigger": {"type": "api"}, "actions": [)" + actions + "]}";
  };
  EXPECT_EQ(LoadError(flow("at", 3)), "");
  EXPECT_NE(LoadError(flow("past", 4)).find("flow 'past' has 4 action steps, more than max_actions (3)"),
            std::string::npos);
}

// ---- min_schedule_interval ----

std::string EveryFlow(const std::string& id, const std::string& every) {
  return R"({"id": ")" + id + R"(", "trigger": {"type": "schedule", "every": )" + every + R"(}, "actions": []})";
}

TEST_F(InputBudgetsTest, MinScheduleInterval_TheDefaultIsOneSecond_ShorterIsRefusedAtThePointerOfEvery) {
  EXPECT_EQ(LoadError(EveryFlow("at", R"("1s")")), "");
  EXPECT_EQ(LoadError(EveryFlow("storm", R"("1ms")")),
            "test.json: /trigger/every: every \"1ms\" is shorter than the minimum schedule interval of 1s "
            "(min_schedule_interval)");
  EXPECT_EQ(LoadError(EveryFlow("ms", "999")),
            "test.json: /trigger/every: every 999 is shorter than the minimum schedule interval of 1s "
            "(min_schedule_interval)");
  // "every 1ms, advance 24h" cannot make 86 million contexts: the flow never loads.
  EXPECT_TRUE(engine().advance(24 * 3600 * 1000).is_ok());
  EXPECT_EQ(Contexts("storm").size(), 0u);
  ExpectStillWorking();
}

TEST_F(InputBudgetsTest, MinScheduleInterval_AtTheLimitLoads_OnePastIsRefused_AlsoOnActivateAndPublish) {
  SetProperty("min_schedule_interval", 60000);
  EXPECT_EQ(engine().properties().min_schedule_interval, 60000);
  EXPECT_EQ(LoadError(EveryFlow("at", R"("1m")")), "");
  EXPECT_EQ(LoadError(EveryFlow("past", R"("59s999ms")")),
            "test.json: /trigger/every: every \"59s999ms\" is shorter than the minimum schedule interval of 1m "
            "(min_schedule_interval)");
  // A draft may hold it; activating or publishing it is refused.
  ASSERT_TRUE(engine().save(Json(EveryFlow("draft", R"("30s")"))).is_ok());
  Status activate = engine().activate("draft");
  ASSERT_FALSE(activate.is_ok());
  EXPECT_NE(activate.message().find("every \"30s\" is shorter than the minimum schedule interval of 1m (min_schedule_interval)"),
            std::string::npos)
      << activate.message();
  Status publish = engine().publish("draft");
  ASSERT_FALSE(publish.is_ok());
  EXPECT_NE(publish.message().find("min_schedule_interval"), std::string::npos) << publish.message();
  // Lowered, the same flow activates.
  SetProperty("min_schedule_interval", 30000);
  EXPECT_TRUE(engine().activate("draft").is_ok());
  Status bad = engine().set_property("min_schedule_interval", Value("0ms"));
  ASSERT_FALSE(bad.is_ok());
  EXPECT_NE(bad.message().find("min_schedule_interval"), std::string::npos) << bad.message();
}

}  // namespace
}  // namespace flowrt
