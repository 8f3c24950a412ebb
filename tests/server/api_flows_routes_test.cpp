// The definition routes over a real socket (docs/API.md, "Definitions and calls"): list,
// get, put, publish, activate, deactivate and test of flows, subflows and actions, and
// validate, with their errors.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <barrier>
#include <string>
#include <thread>

#include "plans/value_json.h"
#include "tests/server/api_routes_fixture.h"

namespace flowrt::testing_http {
namespace {

using ::testing::HasSubstr;

// A designer's test run: the draft when there is one, with inputs, or with a record for a
// record-triggered flow (its trigger's condition bypassed), as SPEC's test_flow.
TEST_F(ApiRoutesTest, Test_RunsTheDraftWithInputsOrARecord) {
  const Value read = client().get("/api/flows/greet").json();
  const std::string draft =
      R"({"id": "greet", "trigger": {"type": "api"}, "inputs": [{"name": "name", "type": "string", "required": true}],
          "actions": [{"action": "log", "inputs": {"message": "draft says hi {{inputs.name}}"}}]})";
  ASSERT_EQ(client()
                .request(http::verb::put, "/api/flows/greet",
                         R"({"definition": )" + draft + R"(, "revision": ")" + std::string(read["revision"].as_string()) + R"("})")
                .status,
            200);
  HttpReply tested = client().post("/api/flows/greet/test?wait=10s", R"({"inputs": {"name": "Di"}})");
  ASSERT_EQ(tested.status, 200) << tested.body;
  EXPECT_EQ(tested.json()["logs"].at(0)["message"], Value("draft says hi Di"));
  HttpReply called = client().post("/api/flows/greet/call?wait=10s", R"({"name": "Di"})");
  EXPECT_EQ(called.json()["logs"].at(0)["message"], Value("hello Di")) << "a call runs the published version";

  // A record-triggered flow, with a record its trigger did not start it for.
  const std::string incident = insert("incident", R"({"number": "INC7"})");
  settle();
  HttpReply started = client().post("/api/flows/on_incident/test",
                                    R"({"record": {"table": "incident", "sys_id": ")" + incident + R"("}})");
  ASSERT_EQ(started.status, 202) << started.body;
  const std::string id(started.json()["context_id"].as_string());
  settle();
  const Value ran = client().get("/api/contexts/" + id).json();
  EXPECT_EQ(ran["status"], Value("completed")) << to_pretty_json(ran);
  EXPECT_EQ(ran["trigger"]["sys_id"], Value(incident));

  // Errors say what and where.
  EXPECT_EQ(client().post("/api/flows/greet/test", R"({"inputs": {}})").status, 400);  // name is required
  EXPECT_EQ(client().post("/api/flows/nope/test", R"({})").status, 404);
  EXPECT_EQ(client().post("/api/flows/on_incident/test", R"({"record": {"table": "incident", "sys_id": "nope"}})").status, 404);
  EXPECT_EQ(client().post("/api/flows/greet/test", R"({"inputs": {"name": "x"}, "record": {}})").json()["pointer"],
            Value("/inputs"));
  EXPECT_EQ(client().post("/api/flows/greet/test", R"({"input": {}})").json()["pointer"], Value("/input"));
  EXPECT_EQ(client().post("/api/flows/greet/test", R"({"record": 5})").json()["pointer"], Value("/record"));
  EXPECT_EQ(client().post("/api/flows/greet/test?wait=1h", R"({"inputs": {"name": "x"}})").status, 400);
}

// A subflow may share a flow's id (ids are unique per type): ?type= names which one a route
// means, a PUT answers with the definition it saved, and publish answers with the one it
// published. Until 2026-12-06 each answered with the flow, and the subflow's own revision
// could not be read.
TEST_F(ApiRoutesTest, Flows_ASubflowSharingAFlowsId_IsReachedByType_AndAnswersAreOfTheOneMeant) {
  HttpReply saved = client().request(http::verb::put, "/api/flows/greet",
                                     R"({"definition": {"id": "greet", "type": "subflow", "actions": []}, "revision": "0"})");
  ASSERT_EQ(saved.status, 200) << saved.body;
  EXPECT_EQ(saved.json()["type"], Value("subflow"));
  EXPECT_EQ(saved.json()["has_draft"], Value(true));
  EXPECT_EQ(client().get("/api/flows/greet").json()["type"], Value("flow")) << "without ?type, the flow first";
  HttpReply sub = client().get("/api/flows/greet?type=subflow");
  ASSERT_EQ(sub.status, 200) << sub.body;
  EXPECT_EQ(sub.json()["revision"], saved.json()["revision"]);
  EXPECT_EQ(sub.header("ETag"), "\"" + std::string(saved.json()["revision"].as_string()) + "\"");

  HttpReply published = client().post("/api/flows/greet/publish", "");
  ASSERT_EQ(published.status, 200) << published.body;
  EXPECT_EQ(published.json()["type"], Value("subflow")) << "the one with the draft was published";
  EXPECT_EQ(published.json()["state"], Value("published"));
  EXPECT_EQ(client().post("/api/flows/greet/publish?type=action", "").status, 404);
  EXPECT_EQ(client().get("/api/flows/greet?type=nonsense").status, 400);
  EXPECT_EQ(client().post("/api/flows/greet/deactivate", "").json()["type"], Value("flow"));
  EXPECT_EQ(client().post("/api/flows/greet/activate?type=subflow", "").status, 400);
  EXPECT_EQ(client().get("/api/flows/greet").json()["state"], Value("inactive")) << "the flow was not activated";
  ASSERT_EQ(client().post("/api/flows/greet/activate", "").status, 200);
  ASSERT_EQ(client().post("/api/flows/greet/call?wait=10s", R"({"name": "Di"})").status, 200);
  EXPECT_EQ(client().get("/api/flows/greet").json()["counts"], *parse_json(R"({"completed": 1})"));
  EXPECT_EQ(client().get("/api/flows/greet?type=subflow").json()["counts"], Value::empty_object())
      << "the flow's figures are not the subflow's";
}

TEST_F(ApiRoutesTest, Flows_ListGetPlanAndLifecycle) {
  HttpReply list = client().get("/api/flows");
  ASSERT_EQ(list.status, 200);
  EXPECT_EQ(list.json()["flows"].size(), 4u);
  HttpReply greet = client().get("/api/flows/greet");
  ASSERT_EQ(greet.status, 200);
  EXPECT_EQ(greet.json()["state"], Value("active"));
  EXPECT_EQ(greet.json()["definition"]["id"], Value("greet"));
  EXPECT_EQ(greet.header("ETag"), "\"" + std::string(greet.json()["revision"].as_string()) + "\"");
  EXPECT_EQ(client().get("/api/flows/nope").status, 404);

  // Counts and run-time percentiles over the newest contexts.
  ASSERT_EQ(client().post("/api/flows/greet/call?wait=10s", R"({"name": "a"})").status, 200);
  ASSERT_EQ(client().post("/api/flows/greet/call?wait=10s", R"({})").status, 400);
  const Value figures = client().get("/api/flows/greet").json();
  EXPECT_EQ(figures["counts"], Value::object({{"completed", Value(1)}}));
  EXPECT_TRUE(figures["runtime_ms"]["p99"].is_number());
  EXPECT_EQ(client().get("/api/flows/on_ping").json()["counts"], Value::empty_object());

  HttpReply plan = client().get("/api/flows/greet/plan");
  ASSERT_EQ(plan.status, 200);
  EXPECT_TRUE(plan.json()["plan"].is_object());

  HttpReply off = client().post("/api/flows/greet/deactivate", "");
  ASSERT_EQ(off.status, 200) << off.body;
  EXPECT_EQ(off.json()["state"], Value("inactive"));
  EXPECT_NE(off.json()["revision"], greet.json()["revision"]);
  EXPECT_EQ(client().post("/api/flows/greet/call", R"({"name": "x"})").status, 400);  // not active
  EXPECT_EQ(client().post("/api/flows/greet/activate", "").json()["state"], Value("active"));
  EXPECT_EQ(client().post("/api/flows/nope/publish", "").status, 404);
}

// A lifecycle change the engine refuses: a draft that does not compile is a 422 with the
// compiler's reason, and the running version stays; activating or deactivating a subflow
// (a definition that is not a flow) is a 404 `no flow`, its definition unchanged.
TEST_F(ApiRoutesTest, Flows_LifecycleRefusals_422ForADraftThatDoesNotCompile_404NoFlowForASubflow) {
  const std::string revision(client().get("/api/flows/greet").json()["revision"].as_string());
  const std::string broken =
      R"({"id": "greet", "trigger": {"type": "api"}, "actions": [{"id": "x", "action": "no_such_action"}]})";
  ASSERT_EQ(client()
                .request(http::verb::put, "/api/flows/greet",
                         R"({"definition": )" + broken + R"(, "revision": ")" + revision + R"("})")
                .status,
            200);
  for (const char* change : {"publish", "activate"}) {
    HttpReply refused = client().post(std::string("/api/flows/greet/") + change, "");
    EXPECT_EQ(refused.status, 422) << change << ": " << refused.body;
    EXPECT_THAT(refused.json()["error"].as_string(), HasSubstr("no_such_action")) << change;
  }
  HttpReply ran = client().post("/api/flows/greet/call?wait=10s", R"({"name": "Ed"})");
  EXPECT_EQ(ran.json()["logs"].at(0)["message"], Value("hello Ed")) << "the published version still runs";

  const std::string subflow =
      R"({"id": "helper", "type": "subflow", "outputs": [{"name": "n", "type": "integer"}], "actions": []})";
  HttpReply saved = client().request(http::verb::put, "/api/flows/helper",
                                     R"({"definition": )" + subflow + R"(, "revision": "0"})");
  ASSERT_EQ(saved.status, 200) << saved.body;
  ASSERT_EQ(client().post("/api/flows/helper/publish", "").status, 200);
  const std::string published(client().get("/api/flows/helper").json()["revision"].as_string());
  for (const char* change : {"activate", "deactivate"}) {
    HttpReply refused = client().post(std::string("/api/flows/helper/") + change, "");
    EXPECT_EQ(refused.status, 404) << change << ": " << refused.body;
    EXPECT_EQ(refused.json()["error"], Value("no flow 'helper'")) << change;
  }
  EXPECT_EQ(client().get("/api/flows/helper").json()["revision"], Value(published));
}

TEST_F(ApiRoutesTest, Flows_PutSavesADraftAtItsRevisionAndRefusesAStaleOne) {
  const Value read = client().get("/api/flows/greet").json();
  const std::string revision(read["revision"].as_string());
  const std::string draft =
      R"({"id": "greet", "trigger": {"type": "api"}, "inputs": [{"name": "name", "type": "string", "required": true}],
          "actions": [{"action": "log", "inputs": {"message": "hi {{inputs.name}}"}}]})";
  HttpReply saved = client().request(http::verb::put, "/api/flows/greet",
                                     R"({"definition": )" + draft + R"(, "revision": ")" + revision + R"("})");
  ASSERT_EQ(saved.status, 200) << saved.body;
  EXPECT_TRUE(saved.json()["has_draft"].as_bool());
  EXPECT_NE(saved.json()["revision"].as_string(), revision);

  // A second editor who read the same revision is refused, told the current one.
  HttpReply stale = client().request(http::verb::put, "/api/flows/greet",
                                     R"({"definition": )" + draft + R"(, "revision": ")" + revision + R"("})");
  EXPECT_EQ(stale.status, 409);
  EXPECT_EQ(stale.json()["revision"], saved.json()["revision"]);

  // Publishing the draft makes it the running version.
  ASSERT_EQ(client().post("/api/flows/greet/publish", "").status, 200);
  HttpReply ran = client().post("/api/flows/greet/call?wait=10s", R"({"name": "Cy"})");
  EXPECT_EQ(ran.json()["logs"].at(0)["message"], Value("hi Cy"));

  // A new definition is put at revision "0".
  HttpReply fresh = client().request(
      http::verb::put, "/api/flows/fresh",
      R"({"definition": {"id": "fresh", "trigger": {"type": "api"}, "actions": []}, "revision": "0"})");
  EXPECT_EQ(fresh.status, 200) << fresh.body;
  EXPECT_EQ(fresh.json()["state"], Value("draft"));

  EXPECT_EQ(client().request(http::verb::put, "/api/flows/greet", R"({"definition": {"id": "other"}, "revision": "0"})").json()["pointer"],
            Value("/definition/id"));
  EXPECT_EQ(client().request(http::verb::put, "/api/flows/greet", R"({"definition": {"id": "greet"}})").json()["pointer"],
            Value("/revision"));
}

// Two editors saving at the same revision at once: one wins, the other is refused with the
// winner's revision, and the draft is the winner's. Each round both wait at a barrier,
// then send; which one wins is the server's choice, that exactly one does is the contract.
TEST_F(ApiRoutesTest, Flows_TwoPutsAtTheSameRevisionAtOnce_OneWins_TheOtherIsToldTheWinnersRevision) {
  constexpr int kRounds = 40;
  HttpClient second(service_->port());
  HttpClient* editors[2] = {&client(), &second};
  std::barrier ready(2);
  for (int round = 0; round < kRounds; ++round) {
    const std::string revision(client().get("/api/flows/greet").json()["revision"].as_string());
    HttpReply replies[2];
    auto put = [&](int editor) {
      const std::string message = "round " + std::to_string(round) + " editor " + std::to_string(editor);
      const std::string body = R"({"definition": {"id": "greet", "trigger": {"type": "api"}, "actions": [{"action": "log", "inputs": {"message": ")" +
                               message + R"("}}]}, "revision": ")" + revision + R"("})";
      ready.arrive_and_wait();
      replies[editor] = editors[editor]->request(http::verb::put, "/api/flows/greet", body);
    };
    std::thread other(put, 1);
    put(0);
    other.join();
    const int winner = replies[0].status == 200 ? 0 : 1;
    ASSERT_EQ(replies[winner].status, 200) << "round " << round << ": " << replies[0].body << " / " << replies[1].body;
    ASSERT_EQ(replies[1 - winner].status, 409) << "round " << round << ": " << replies[1 - winner].body;
    const std::string won(replies[winner].json()["revision"].as_string());
    EXPECT_NE(won, revision);
    EXPECT_EQ(replies[1 - winner].json()["revision"], Value(won)) << "the loser is told the winner's revision";
    const Value now = client().get("/api/flows/greet").json();
    EXPECT_EQ(now["revision"], Value(won));
    EXPECT_EQ(now["definition"]["actions"].at(0)["inputs"]["message"],
              Value("round " + std::to_string(round) + " editor " + std::to_string(winner)));
  }
}

TEST_F(ApiRoutesTest, Validate_HeldDefinitionsOrAPostedOne) {
  HttpReply all = client().post("/api/validate", "");
  ASSERT_EQ(all.status, 200);
  EXPECT_TRUE(all.json()["valid"].as_bool());
  HttpReply broken = client().post("/api/validate", R"({"id": "b", "trigger": {"type": "api"}, "actions": [{"action": "nope"}]})");
  ASSERT_EQ(broken.status, 200);
  EXPECT_FALSE(broken.json()["valid"].as_bool());
  EXPECT_EQ(broken.json()["errors"].at(0)["pointer"], Value("/actions/0/action"));
  // Nothing of it was kept.
  EXPECT_EQ(client().get("/api/flows/b").status, 404);

  // A held definition that does not compile is named: it has no file (it was saved over
  // the API). Until 2026-12-06 its "file" was "", and two broken ones could not be told apart.
  ASSERT_EQ(client()
                .request(http::verb::put, "/api/flows/b2",
                         R"({"definition": {"id": "b2", "trigger": {"type": "api"}, "actions": [{"action": "nope"}]}, "revision": "0"})")
                .status,
            200);
  HttpReply held = client().post("/api/validate", "");
  ASSERT_EQ(held.status, 200);
  ASSERT_EQ(held.json()["errors"].size(), 1u) << held.body;
  EXPECT_EQ(held.json()["errors"].at(0)["file"], Value("flow 'b2' (saved)"));
}

}  // namespace
}  // namespace flowrt::testing_http
