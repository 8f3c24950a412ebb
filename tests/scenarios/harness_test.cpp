// The events file (SPEC section 11): every op, and bad lines named by line number with
// nothing after them applied.
#include "runtime/harness.h"
#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

class HarnessTest : public FlowTest {
 protected:
  Status Run(std::string_view events) { return Harness(engine()).run_text(events, "events.jsonl"); }
};

TEST_F(HarnessTest, RecordOps_ByIdAndByWhere) {
  ASSERT_TRUE(Load(R"({"id": "u", "trigger": {"type": "record", "table": "t", "when": "updated"}, "actions": []})"));
  Status s = Run(R"({"op": "insert", "table": "t", "values": {"sys_id": "a", "k": 1}}
{"op": "insert", "table": "t", "values": {"sys_id": "b", "k": 2}}
{"op": "insert", "table": "t", "values": {"sys_id": "c", "k": 2}}

{"op": "update", "table": "t", "sys_id": "a", "values": {"k": 10}}
{"op": "update", "table": "t", "where": {"field": "k", "op": "eq", "value": 2}, "values": {"k": 20}}
{"op": "delete", "table": "t", "sys_id": "a"}
{"op": "delete", "table": "t", "where": {"field": "sys_id", "op": "eq", "value": "b"}}
)");
  ASSERT_TRUE(s.is_ok()) << s.message();
  std::vector<Value> rows = Records("t");
  ASSERT_EQ(rows.size(), 1u);
  EXPECT_EQ(rows[0]["sys_id"], Value("c"));
  EXPECT_EQ(rows[0]["k"], Value(20));
  EXPECT_EQ(Contexts("u").size(), 3u);
}

TEST_F(HarnessTest, EventsCallsClockAndProperties) {
  ASSERT_TRUE(Load(R"([
    {"id": "e", "trigger": {"type": "event", "name": "ping"}, "actions": [{"action": "log", "inputs": {"message": "{{trigger.payload.n}}"}}]},
    {"id": "a", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "{{inputs.d}}"}}]}])"));
  Status s = Run(R"({"op": "fire_event", "name": "ping", "payload": {"n": 1}}
{"op": "call_flow", "flow": "a", "inputs": {"d": "2h"}}
{"op": "set_property", "name": "max_iterations", "value": 5}
{"op": "advance", "duration": "30m"}
{"op": "settle", "until": "1h"}
{"op": "cancel", "context": "ctx-2"}
)");
  ASSERT_TRUE(s.is_ok()) << s.message();
  EXPECT_THAT(OnlyContext("e"), HasLog("1"));
  EXPECT_THAT(OnlyContext("a"), HasStatus("cancelled"));
  EXPECT_EQ(engine().properties().max_iterations, 5u);
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + 1800000);
}

// `settle` with `until: "0ms"` waits without moving the clock, but the file ends with a
// bare settle (24h): every timer within 24h of the last line fires there, so a
// wait_for_condition timeout of 1h always fires; one of 2d, or none, does not.
TEST_F(HarnessTest, TheImplicitFinalSettle_FiresEveryTimerWithin24h) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"id": "x", "action": "wait_for_condition", "inputs": {"table": "t", "sys_id": "r1",
        "condition": {"field": "done", "op": "eq", "value": true}, "timeout": "{{inputs.timeout}}"}}]})"));
  Status s = Run(R"({"op": "insert", "table": "t", "values": {"sys_id": "r1", "done": false}}
{"op": "call_flow", "flow": "w", "inputs": {"timeout": "1h"}}
{"op": "call_flow", "flow": "w", "inputs": {"timeout": "2d"}}
{"op": "settle", "until": "0ms"}
)");
  ASSERT_TRUE(s.is_ok()) << s.message();
  std::vector<ContextRecord> cs = Contexts("w");
  ASSERT_EQ(cs.size(), 2u);
  EXPECT_THAT(cs[0], HasStatus("completed"));
  EXPECT_EQ(cs[0].step("x")["outputs"]["timed_out"], Value(true));
  EXPECT_THAT(cs[1], HasStatus("waiting"));
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + 3600000);
}

struct BadLine {
  const char* line;
  const char* error;
};

class BadLineTest : public HarnessTest, public ::testing::WithParamInterface<BadLine> {};

TEST_P(BadLineTest, IsReportedWithItsLineNumber_NothingAfterIsApplied) {
  const std::string events = std::string(R"({"op": "insert", "table": "t", "values": {"n": 1}})") + "\n" +
                             GetParam().line + "\n" + R"({"op": "insert", "table": "t", "values": {"n": 3}})" + "\n";
  Status s = Run(events);
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message().rfind("events.jsonl:2: ", 0), 0u) << s.message();
  EXPECT_NE(s.message().find(GetParam().error), std::string::npos) << s.message();
  std::vector<Value> rows = Records("t");
  ASSERT_EQ(rows.size(), 1u) << "the line before ran, nothing after did";
  EXPECT_EQ(rows[0]["n"], Value(1));
}

INSTANTIATE_TEST_SUITE_P(
    Lines, BadLineTest,
    ::testing::Values(BadLine{R"({"op": "insert", "table": )", "column"},
                      BadLine{R"([1, 2])", "JSON object"},
                      BadLine{R"({"table": "t"})", "needs \"op\""},
                      BadLine{R"({"op": "insrt", "table": "t"})", "unknown op 'insrt'"},
                      BadLine{R"({"op": "insert", "values": {}})", "field 'table' must be a non-empty string (missing)"},
                      BadLine{R"({"op": "insert", "table": "t", "values": [1]})", "field 'values' must be an object"},
                      BadLine{R"({"op": "insert", "table": "t", "valeus": {}})", "has no field 'valeus'"},
                      BadLine{R"({"op": "update", "table": "t", "values": {}})", "either \"sys_id\" or \"where\""},
                      BadLine{R"({"op": "update", "table": "t", "sys_id": "zz", "values": {}})", "no record in t with sys_id zz"},
                      BadLine{R"({"op": "update", "table": "t", "where": {"field": "n", "op": "bogus", "value": 1}, "values": {}})", "unknown op \"bogus\""},
                      BadLine{R"({"op": "call_flow", "flow": "nope"})", "no flow 'nope'"},
                      BadLine{R"({"op": "advance", "duration": "soon"})", "is not a duration"},
                      BadLine{R"({"op": "advance", "duration": "106751991167d"})",
                              "field 'duration': duration \"106751991167d\" is too large: the maximum is 36500d"},
                      BadLine{R"({"op": "advance", "duration": 9223372036854775807})", "is too large: the maximum is 36500d"},
                      BadLine{R"({"op": "settle", "until": "1000000000000d"})", "field 'until': duration \"1000000000000d\" is too large"},
                      BadLine{R"({"op": "set_property", "name": "max_wishes", "value": 1})", "unknown property 'max_wishes'"},
                      BadLine{R"({"op": "cancel", "context": "ctx-77"})", "no context 'ctx-77'"},
                      BadLine{R"({"op": "activate", "id": "ghost"})", "no flow 'ghost'"}),
    [](const ::testing::TestParamInfo<BadLine>& p) { return "line" + std::to_string(p.index); });

TEST_F(HarnessTest, FileEndsWithImplicitSettle) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [{"action": "wait", "inputs": {"duration": "1h"}}]})"));
  ASSERT_TRUE(Run(R"({"op": "call_flow", "flow": "w"})").is_ok());
  EXPECT_THAT(OnlyContext("w"), HasStatus("completed"));
}

TEST_F(HarnessTest, OpFilter_SeesEachOpBeforeItIsApplied_AndItsErrorStopsTheRunAsABadLine) {
  Harness harness(engine());
  std::vector<std::string> seen;
  harness.set_op_filter([&](const Value& op) -> Result<Value> {
    seen.push_back(std::string(op["op"].as_string()));
    if (op["op"] == Value("advance")) return op.with("duration", Value(1000));  // bounded
    if (op["op"] == Value("delete")) return Error{"refused by the filter"};
    return op;
  });
  Status s = harness.run_text(R"({"op": "insert", "table": "t", "values": {"n": 1}}

{"op": "advance", "duration": "10d"}
{"op": "delete", "table": "t", "where": {"field": "n", "op": "eq", "value": 1}}
{"op": "insert", "table": "t", "values": {"n": 2}}
)", "events.jsonl");
  ASSERT_FALSE(s.is_ok());
  EXPECT_EQ(s.message(), "events.jsonl:4: refused by the filter");
  EXPECT_EQ(seen, (std::vector<std::string>{"insert", "advance", "delete"})) << "a bad line is never filtered";
  EXPECT_EQ(engine().now(), kDefaultVirtualStart + 1000) << "the filtered op is the one applied";
  EXPECT_EQ(Records("t").size(), 1u) << "nothing after the refused line is applied";
}

TEST_F(HarnessTest, MissingFile_IsAnErrorNamingIt) {
  Status s = Harness(engine()).run_file("/nonexistent/events.jsonl");
  ASSERT_FALSE(s.is_ok());
  EXPECT_NE(s.message().find("/nonexistent/events.jsonl"), std::string::npos);
}

}  // namespace
}  // namespace flowrt
