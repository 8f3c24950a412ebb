// Every route of the API over a real socket (docs/API.md): records, events, calls, contexts,
// locks, keyed writes and the status routes, with their errors. The definition routes
// (/api/flows, test, validate) are in api_flows_routes_test.cpp.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <algorithm>
#include <barrier>
#include <functional>
#include <numeric>
#include <thread>

#include "plans/value_json.h"
#include "runtime/engine_core.h"
#include "server/api_common.h"
#include "server/auth.h"
#include "tests/server/api_routes_fixture.h"

namespace flowrt::testing_http {
namespace {

using ::testing::HasSubstr;

// A table name or sys_id goes into the Location header percent-encoded: CR and LF in them
// would otherwise end the header and begin others (a header injection). Until 2026-12-06
// a sys_id "inj\r\nSet-Cookie: evil=1" set that cookie.
TEST_F(ApiRoutesTest, Records_Insert_LocationIsPercentEncoded_NoHeaderComesFromTheRecord) {
  HttpReply created = client().post("/api/tables/t%0D%0AX-Injected:%20tbl/records",
                                    R"({"sys_id": "inj\r\nSet-Cookie: evil=1\r\nX-Also: yes"})");
  ASSERT_EQ(created.status, 201) << created.body;
  EXPECT_EQ(created.header("Location"),
            "/api/tables/t%0D%0AX-Injected%3A%20tbl/records/inj%0D%0ASet-Cookie%3A%20evil%3D1%0D%0AX-Also%3A%20yes");
  EXPECT_EQ(created.header("Set-Cookie"), "");
  EXPECT_EQ(created.header("X-Injected"), "");
  EXPECT_EQ(created.header("X-Also"), "");
  HttpReply read = client().get(created.header("Location"));
  ASSERT_EQ(read.status, 200) << "the Location reads the record back: " << read.body;
  EXPECT_EQ(read.json()["sys_id"], Value("inj\r\nSet-Cookie: evil=1\r\nX-Also: yes"));
}

TEST_F(ApiRoutesTest, Records_InsertReadPatchDelete) {
  HttpReply created = client().post("/api/tables/incident/records", R"({"number": "INC1", "priority": 1})");
  ASSERT_EQ(created.status, 201) << created.body;
  const std::string id(created.json()["sys_id"].as_string());
  EXPECT_EQ(created.header("Location"), "/api/tables/incident/records/" + id);
  EXPECT_EQ(created.json()["number"], Value("INC1"));
  settle();  // on_incident marks it

  HttpReply read = client().get("/api/tables/incident/records/" + id);
  ASSERT_EQ(read.status, 200);
  EXPECT_EQ(read.json()["state"], Value("seen"));

  HttpReply patched = client().request(http::verb::patch, "/api/tables/incident/records/" + id, R"({"priority": 2})");
  ASSERT_EQ(patched.status, 200) << patched.body;
  EXPECT_EQ(patched.json()["priority"], Value(2));
  EXPECT_EQ(patched.json()["sys_mod_count"], Value(2));

  HttpReply deleted = client().request(http::verb::delete_, "/api/tables/incident/records/" + id);
  ASSERT_EQ(deleted.status, 200);
  EXPECT_EQ(deleted.json()["deleted"]["sys_id"], Value(id));
  EXPECT_EQ(client().get("/api/tables/incident/records/" + id).status, 404);
  EXPECT_EQ(client().request(http::verb::patch, "/api/tables/incident/records/" + id, R"({"a": 1})").status, 404);
  EXPECT_EQ(client().request(http::verb::delete_, "/api/tables/incident/records/" + id).status, 404);
}

TEST_F(ApiRoutesTest, Records_ListWhereAndPages) {
  for (int i = 0; i < 5; ++i) insert("task", R"({"n": )" + std::to_string(i) + R"(, "odd": )" + (i % 2 ? "true" : "false") + "}");
  HttpReply first = client().get("/api/tables/task/records?limit=2");
  ASSERT_EQ(first.status, 200) << first.body;
  ASSERT_EQ(first.json()["records"].size(), 2u);
  EXPECT_EQ(first.json()["records"].at(0)["n"], Value(0));
  const std::string next(first.json()["next"].as_string());
  HttpReply second = client().get("/api/tables/task/records?limit=2&cursor=" + next);
  EXPECT_EQ(second.json()["records"].at(0)["n"], Value(2));
  HttpReply last = client().get("/api/tables/task/records?limit=2&cursor=4");
  EXPECT_EQ(last.json()["records"].size(), 1u);
  EXPECT_TRUE(last.json()["next"].is_null());

  // where= is a condition, URL-encoded.
  HttpReply odd = client().get("/api/tables/task/records?where=%7B%22field%22%3A%22odd%22%2C%22op%22%3A%22eq%22%2C%22value%22%3Atrue%7D");
  ASSERT_EQ(odd.status, 200) << odd.body;
  EXPECT_EQ(odd.json()["records"].size(), 2u);

  HttpReply bad = client().get("/api/tables/task/records?where=%7B%22field%22");
  EXPECT_EQ(bad.status, 400);
  EXPECT_THAT(bad.json()["error"].as_string(), HasSubstr("where is not valid JSON"));
  EXPECT_EQ(client().get("/api/tables/task/records?where=%7B%22op%22%3A%22nope%22%7D").status, 400);
  // A condition the engine refuses names the value at fault in "pointer", as a body does.
  HttpReply bad_op =
      client().get("/api/tables/task/records?where=%7B%22field%22%3A%22n%22%2C%22op%22%3A%22zz%22%2C%22value%22%3A1%7D");
  EXPECT_EQ(bad_op.status, 400);
  EXPECT_EQ(bad_op.json()["pointer"], Value("/op")) << bad_op.body;
  EXPECT_EQ(client().get("/api/tables/task/records?limit=0").status, 400);
  EXPECT_EQ(client().get("/api/tables/task/records?limit=abc").status, 400);

  HttpReply tables = client().get("/api/tables");
  EXPECT_THAT(tables.body, HasSubstr("\"task\""));
}

// A list page's body has a byte budget (server::kPageBodyBytes, 1 MiB): a page with a large
// limit over large items is cut once its body would pass it, and its next cursor continues
// right after the last item it holds, so paging through gives every item once, in order.
// An item larger than the budget alone still makes a page, of one. Until 2026-12-06 such a
// page held every item up to the limit (?limit=10000 of 1 KB records: a 10 MB body, which
// a client that does not read kept for the write's deadline).
TEST_F(ApiRoutesTest, ListPages_AreCutAtTheirBodysByteBudget_AndPagingGivesEveryItemOnce) {
  // 40 records of about 60 KB, and 150 contexts of about 16 KB (the record keeps that
  // much of each input: record_value_limit): 2.4 MB each, past the budget twice.
  constexpr int kItems = 40, kContexts = 150;
  const std::string pad(60000, 'x');
  for (int i = 0; i < kItems; ++i) insert("big", R"({"n": )" + std::to_string(i) + R"(, "pad": ")" + pad + R"("})");
  for (int i = 0; i < kContexts; ++i) {
    ASSERT_EQ(client().post("/api/flows/greet/call", R"({"name": ")" + pad + R"("})").status, 202);
  }
  ASSERT_TRUE(engine().insert("big", Value::object({{"n", Value(kItems)}, {"pad", Value(std::string(1200000, 'y'))}})));
  settle();

  // Pages through `list` from its first page; `add` takes each page's items, and says
  // whether a page of them may pass the budget (one item alone may).
  auto page_through = [&](const std::string& list, const std::string& key, const std::function<void(const Value&)>& add) {
    int pages = 0;
    std::string cursor;
    while (true) {
      HttpReply r = client().get(list + cursor);
      EXPECT_EQ(r.status, 200) << r.body;
      const Value items = r.json()[key];
      EXPECT_GE(items.size(), 1u) << "page " << pages;
      if (items.size() > 1) {
        EXPECT_LE(r.body.size(), server::kPageBodyBytes) << "page " << pages;
      }
      for (size_t i = 0; i < items.size(); ++i) add(items.at(i));
      ++pages;
      if (r.json()["next"].is_null() || items.size() == 0 || pages > 100) return pages;
      cursor = "&cursor=" + std::string(r.json()["next"].as_string());
    }
  };

  HttpReply first = client().get("/api/tables/big/records?limit=10000");
  ASSERT_EQ(first.status, 200);
  EXPECT_LT(first.json()["records"].size(), static_cast<size_t>(kItems)) << "the first page was not cut";
  EXPECT_FALSE(first.json()["next"].is_null());
  std::vector<int64_t> records;
  const int record_pages = page_through("/api/tables/big/records?limit=10000", "records", [&](const Value& r) {
    records.push_back(r["n"].as_int());
  });
  std::vector<int64_t> all(kItems + 1);
  std::iota(all.begin(), all.end(), 0);
  EXPECT_EQ(records, all) << "each record once, in insertion order";
  EXPECT_GE(record_pages, 4) << "2.4 MB in pages of at most 1 MiB, and the 1.2 MB record alone";

  HttpReply contexts = client().get("/api/contexts?limit=1000");
  ASSERT_EQ(contexts.status, 200);
  EXPECT_LT(contexts.json()["contexts"].size(), static_cast<size_t>(kContexts)) << "the first page was not cut";
  EXPECT_FALSE(contexts.json()["next"].is_null());
  std::vector<std::string> ids;
  const int context_pages =
      page_through("/api/contexts?limit=1000", "contexts", [&](const Value& c) { ids.emplace_back(c["id"].as_string()); });
  std::vector<std::string> newest_first;
  for (int seq = kContexts; seq >= 1; --seq) newest_first.push_back("ctx-" + std::to_string(seq));
  EXPECT_EQ(ids, newest_first) << "each context once, newest first";
  EXPECT_GE(context_pages, 3);
}

TEST_F(ApiRoutesTest, Records_UpdateAndDeleteWhere) {
  for (int i = 0; i < 4; ++i) insert("task", R"({"n": )" + std::to_string(i) + "}");
  HttpReply updated = client().post("/api/tables/task/records/update",
                                    R"({"where": {"field": "n", "op": "ge", "value": 2}, "values": {"done": true}})");
  ASSERT_EQ(updated.status, 200) << updated.body;
  EXPECT_EQ(updated.json()["updated"], Value(2));
  HttpReply deleted = client().post("/api/tables/task/records/delete", R"({"where": {"field": "done", "op": "eq", "value": true}})");
  ASSERT_EQ(deleted.status, 200) << deleted.body;
  EXPECT_EQ(deleted.json()["deleted"], Value(2));
  EXPECT_EQ(client().get("/api/tables/task/records").json()["records"].size(), 2u);

  HttpReply no_where = client().post("/api/tables/task/records/update", R"({"values": {"x": 1}})");
  EXPECT_EQ(no_where.status, 400);
  EXPECT_EQ(no_where.json()["pointer"], Value("/where"));
  EXPECT_EQ(client().post("/api/tables/task/records/update", R"({"where": {"field": "n", "op": "eq", "value": 1}})").json()["pointer"],
            Value("/values"));
  HttpReply bad_op = client().post("/api/tables/task/records/delete", R"({"where": {"field": "n", "op": "zz", "value": 1}})");
  EXPECT_EQ(bad_op.status, 400);
  EXPECT_EQ(bad_op.json()["pointer"], Value("/where/op")) << bad_op.body;
  EXPECT_THAT(bad_op.json()["error"].as_string(), HasSubstr("where: "));
  EXPECT_EQ(client().get("/api/tables/task/records").json()["records"].size(), 2u) << "nothing deleted";
}

TEST_F(ApiRoutesTest, Records_BadBodiesSayWhatAndWhere) {
  HttpReply syntax = client().post("/api/tables/incident/records", R"({"a": {"b": [1, 2,)");
  EXPECT_EQ(syntax.status, 400);
  EXPECT_THAT(syntax.json()["error"].as_string(), HasSubstr("not valid JSON"));
  EXPECT_EQ(syntax.json()["pointer"], Value("/a/b/2"));
  HttpReply not_object = client().post("/api/tables/incident/records", "[1]");
  EXPECT_EQ(not_object.status, 400);
  EXPECT_THAT(not_object.json()["error"].as_string(), HasSubstr("must be a JSON object"));
  EXPECT_EQ(client().post("/api/tables/incident/records", "").status, 400);
  // Nothing of those was written.
  EXPECT_EQ(client().get("/api/tables/incident/records").json()["records"].size(), 0u);
}

TEST_F(ApiRoutesTest, Events_StartTheirFlows) {
  HttpReply fired = client().post("/api/events/ping", R"({"n": 7})");
  ASSERT_EQ(fired.status, 202) << fired.body;
  settle();
  HttpReply list = client().get("/api/contexts?flow=on_ping");
  ASSERT_EQ(list.json()["contexts"].size(), 1u);
  const std::string id(list.json()["contexts"].at(0)["id"].as_string());
  HttpReply record = client().get("/api/contexts/" + id);
  EXPECT_EQ(record.json()["logs"].at(0)["message"], Value("pong 7"));
  EXPECT_EQ(client().post("/api/events/ping", "").status, 202);  // no body: an empty payload
  EXPECT_EQ(client().post("/api/events/ping", "{").status, 400);
}

TEST_F(ApiRoutesTest, Call_ReturnsTheContextOrWaitsForItsRecord) {
  HttpReply started = client().post("/api/flows/greet/call", R"({"name": "Ada"})");
  ASSERT_EQ(started.status, 202) << started.body;
  EXPECT_THAT(started.json()["context_id"].as_string(), HasSubstr("ctx-"));

  HttpReply waited = client().post("/api/flows/greet/call?wait=10s", R"({"name": "Bo"})");
  ASSERT_EQ(waited.status, 200) << waited.body;
  EXPECT_EQ(waited.json()["status"], Value("completed"));
  EXPECT_EQ(waited.json()["logs"].at(0)["message"], Value("hello Bo"));

  EXPECT_EQ(client().post("/api/flows/greet/call", R"({})").status, 400);           // name is required
  EXPECT_EQ(client().post("/api/flows/greet/call", R"({"name": 5})").status, 400);  // wrong type
  EXPECT_EQ(client().post("/api/flows/nope/call", R"({})").status, 404);
  EXPECT_EQ(client().post("/api/flows/greet/call?wait=forever", R"({"name": "x"})").status, 400);
  EXPECT_EQ(client().post("/api/flows/greet/call?wait=1h", R"({"name": "x"})").status, 400);
}

TEST_F(ApiRoutesTest, Call_WaitEndsWith202WhileTheContextStillRuns) {
  const std::string gate = insert("gate", R"({"open": false})");
  HttpReply r = client().post("/api/flows/hold_desk/call?wait=50ms", R"({"gate": ")" + gate + R"("})");
  ASSERT_EQ(r.status, 202) << r.body;
  EXPECT_EQ(r.json()["status"], Value("waiting"));
}

TEST_F(ApiRoutesTest, Contexts_NewestFirstInPagesWithFilters) {
  for (int i = 0; i < 5; ++i) ASSERT_EQ(client().post("/api/flows/greet/call", R"({"name": "n)" + std::to_string(i) + "\"}").status, 202);
  client().post("/api/events/ping", "{}");
  settle();
  HttpReply first = client().get("/api/contexts?limit=4");
  ASSERT_EQ(first.status, 200);
  const Value page = first.json()["contexts"];
  ASSERT_EQ(page.size(), 4u);
  EXPECT_EQ(page.at(0)["id"], Value("ctx-6"));
  EXPECT_EQ(page.at(3)["id"], Value("ctx-3"));
  EXPECT_EQ(first.json()["next"], Value("3"));
  HttpReply second = client().get("/api/contexts?limit=4&cursor=3");
  EXPECT_EQ(second.json()["contexts"].size(), 2u);
  EXPECT_TRUE(second.json()["next"].is_null());
  // A page that ends exactly at the oldest has no next either.
  EXPECT_TRUE(client().get("/api/contexts?limit=2&cursor=3").json()["next"].is_null());

  EXPECT_EQ(client().get("/api/contexts?flow=greet").json()["contexts"].size(), 5u);
  EXPECT_EQ(client().get("/api/contexts?status=completed").json()["contexts"].size(), 6u);
  EXPECT_EQ(client().get("/api/contexts?status=error").json()["contexts"].size(), 0u);
  EXPECT_EQ(client().get("/api/contexts?since=2999-01-01T00:00:00Z").json()["contexts"].size(), 0u);
  EXPECT_EQ(client().get("/api/contexts?since=2000-01-01T00:00:00Z").json()["contexts"].size(), 6u);
  EXPECT_EQ(client().get("/api/contexts?since=yesterday").status, 400);
  // Queued contexts have no record yet: the list says so rather than showing none.
  HttpReply queued = client().get("/api/contexts?status=queued");
  EXPECT_EQ(queued.status, 400);
  EXPECT_THAT(queued.json()["error"].as_string(), HasSubstr("queue_depth"));
  HttpReply unknown = client().get("/api/contexts?status=finished");
  EXPECT_EQ(unknown.status, 400);
  EXPECT_THAT(unknown.json()["error"].as_string(), HasSubstr("'finished'"));

  HttpReply one = client().get("/api/contexts/ctx-1");
  ASSERT_EQ(one.status, 200);
  EXPECT_EQ(one.json()["flow"], Value("greet"));
  EXPECT_EQ(one.json(), engine().context("ctx-1")->value());  // the record as `flowrt run` prints it
  EXPECT_EQ(client().get("/api/contexts/ctx-99").status, 404);
}

TEST_F(ApiRoutesTest, Cancel_EndsAWaitingContextAndRefusesAnEndedOne) {
  const std::string gate = insert("gate", R"({"open": false})");
  const std::string id(client().post("/api/flows/hold_desk/call", R"({"gate": ")" + gate + R"("})").json()["context_id"].as_string());
  settle();
  ASSERT_EQ(client().get("/api/contexts/" + id).json()["status"], Value("waiting"));
  HttpReply cancelled = client().post("/api/contexts/" + id + "/cancel", "");
  ASSERT_EQ(cancelled.status, 200) << cancelled.body;
  EXPECT_EQ(cancelled.json()["status"], Value("cancelled"));
  HttpReply again = client().post("/api/contexts/" + id + "/cancel", "");
  EXPECT_EQ(again.status, 409);
  EXPECT_EQ(client().post("/api/contexts/ctx-99/cancel", "").status, 404);
  // Its lock went with it.
  EXPECT_EQ(client().get("/api/locks").json()["locks"].size(), 0u);
}

TEST_F(ApiRoutesTest, Locks_ShowHoldersAndWaiters) {
  const std::string gate = insert("gate", R"({"open": false})");
  const std::string a(client().post("/api/flows/hold_desk/call", R"({"gate": ")" + gate + R"("})").json()["context_id"].as_string());
  settle();
  const std::string b(client().post("/api/flows/hold_desk/call", R"({"gate": ")" + gate + R"("})").json()["context_id"].as_string());
  settle();
  HttpReply locks = client().get("/api/locks");
  ASSERT_EQ(locks.status, 200);
  EXPECT_TRUE(locks.json()["now"].is_string());
  const Value desk = locks.json()["locks"].at(0);
  EXPECT_EQ(desk["name"], Value("desk"));
  EXPECT_EQ(desk["holders"].at(0)["context"], Value(a));
  EXPECT_EQ(desk["waiters"].at(0)["context"], Value(b));
  // Opening the gate lets a finish and b take the lock, then wait at the gate... which is open.
  client().request(http::verb::patch, "/api/tables/gate/records/" + gate, R"({"open": true})");
  settle();
  EXPECT_EQ(client().get("/api/contexts/" + b).json()["status"], Value("completed"));
}

TEST_F(ApiRoutesTest, Skipped_StatsMetricsHealth) {
  EXPECT_EQ(client().get("/api/skipped").json()["skipped"].size(), 0u);
  client().post("/api/flows/greet/call", R"({"name": "s"})");
  settle();
  HttpReply stats = client().get("/api/stats");
  ASSERT_EQ(stats.status, 200);
  EXPECT_EQ(stats.json()["contexts_started"], Value(1));
  for (const char* key : {"queue_depth", "running_contexts", "waiting_contexts", "contexts_per_s", "runtime_ms", "connections"}) {
    EXPECT_TRUE(stats.json().contains(key)) << key;
  }
  // The one context ended: nothing queued or running, one running time; the flows' figures
  // count the same window.
  EXPECT_EQ(stats.json()["queue_depth"], Value(0));
  EXPECT_EQ(stats.json()["running_contexts"], Value(0));
  EXPECT_EQ(stats.json()["runtime_ms"]["count"], Value(1));
  EXPECT_EQ(stats.json()["runtime_ms"]["p50"], engine().context("ctx-1")->value()["runtime_ms"]);
  EXPECT_EQ(client().get("/api/flows/greet").json()["runtime_ms"], stats.json()["runtime_ms"]);
  // A context that waits counts as waiting, not running; once it ends, as neither.
  const std::string gate = insert("gate", R"({"open": false})");
  const std::string id(client().post("/api/flows/hold_desk/call", R"({"gate": ")" + gate + R"("})").json()["context_id"].as_string());
  settle();
  Value now = client().get("/api/stats").json();
  EXPECT_EQ(now["waiting_contexts"], Value(1)) << now.to_json();
  EXPECT_EQ(now["running_contexts"], Value(0)) << now.to_json();
  EXPECT_EQ(now["runnable_contexts"], Value(0)) << now.to_json();
  client().request(http::verb::patch, "/api/tables/gate/records/" + gate, R"({"open": true})");
  settle();
  now = client().get("/api/stats").json();
  EXPECT_EQ(now["waiting_contexts"], Value(0)) << now.to_json();
  EXPECT_EQ(now["runtime_ms"]["count"], Value(2)) << now.to_json();
  HttpReply metrics = client().get("/metrics");
  ASSERT_EQ(metrics.status, 200);
  EXPECT_THAT(metrics.header("Content-Type"), HasSubstr("text/plain"));
  EXPECT_THAT(metrics.body, HasSubstr("# TYPE flowrt_contexts_started_total counter\nflowrt_contexts_started_total 2\n"));
  // The store's checkpoint figures are there whatever the store (none fail here).
  EXPECT_THAT(metrics.body, HasSubstr("\nflowrt_store_checkpoint_failures_total 0\n"));
  EXPECT_EQ(now["store_checkpoint_failures"], Value(0)) << now.to_json();
  EXPECT_EQ(client().get("/healthz").status, 200);
  EXPECT_EQ(client().get("/readyz").json()["status"], Value("ready"));
  EXPECT_EQ(client().get("/api/whoami").json()["role"], Value("admin"));  // loopback, no tokens
}

// A kept answer replays only the fields an answer keeps, each on its own line: an answer
// stored before Location was percent-encoded could hold CR LF from a sys_id, which a
// replay copied into the response as headers of the record's choosing.
TEST_F(ApiRoutesTest, AKeptAnswersReplay_SetsNoHeaderFromALineBreakInAValue_NorAFieldAnswersDoNotKeep) {
  const std::string target = "/api/tables/incident/records";
  const std::string body = R"({"number": "K9"})";
  const std::string caller(client().get("/api/whoami").json()["name"].as_string());
  KeyedWritePut kept;
  kept.caller = caller;
  kept.key = "old-answer";
  kept.request = server::to_hex(server::sha256("POST " + target + "\n" + body));
  kept.status = 201;
  kept.headers = R"({"Content-Type": "application/json", "Location": "/api/x\r\nSet-Cookie: stolen=1", "Set-Cookie": "b=2"})";
  kept.body = R"({"sys_id": "x"})";
  kept.at = engine().now();
  engine().core().keyed_writes.restore({kept});
  HttpReply replayed = client().post_keyed(target, body, "old-answer");
  EXPECT_EQ(replayed.status, 201) << replayed.body;
  EXPECT_EQ(replayed.header("Idempotent-Replayed"), "true");
  EXPECT_EQ(replayed.header("Set-Cookie"), "");
  EXPECT_EQ(replayed.header("Location"), "");
  EXPECT_EQ(replayed.header("Content-Type"), "application/json");
}

// A single server remembers a keyed write's answer in its store (server/keyed_write_handler.h;
// a cluster's nodes in its inbox: ClusterPostgresTest.AWriteWithAnIdempotencyKey_*).
TEST_F(ApiRoutesTest, AWriteWithAnIdempotencyKey_IsAppliedOnce_SentAgainItGetsTheFirstAnswer_AlsoAfterARestart) {
  const std::string target = "/api/tables/incident/records";
  auto count = [&](const std::string& number) {
    HttpReply r = client().get(R"(/api/tables/incident/records?where={"field":"number","op":"eq","value":")" + number +
                               R"("})");
    EXPECT_EQ(r.status, 200) << r.body;
    return r.json()["records"].size();
  };
  HttpReply first = client().post_keyed(target, R"({"number": "K1"})", "insert-K1");
  ASSERT_EQ(first.status, 201) << first.body;
  EXPECT_EQ(first.header("Idempotent-Replayed"), "");
  HttpReply again = client().post_keyed(target, R"({"number": "K1"})", "insert-K1");
  EXPECT_EQ(again.status, 201) << again.body;
  EXPECT_EQ(again.body, first.body);
  EXPECT_EQ(again.header("Location"), first.header("Location"));
  EXPECT_EQ(again.header("Content-Type"), "application/json");
  EXPECT_EQ(again.header("Idempotent-Replayed"), "true");
  EXPECT_EQ(count("K1"), 1u);

  // The key names one request: another body with it is refused, nothing written.
  HttpReply other = client().post_keyed(target, R"({"number": "K2"})", "insert-K1");
  EXPECT_EQ(other.status, 422) << other.body;
  EXPECT_THAT(other.json()["error"].as_string(), HasSubstr("was sent before with another request"));
  EXPECT_EQ(count("K2"), 0u);
  HttpReply malformed = client().post_keyed(target, R"({"number": "K1"})", "a key");
  EXPECT_EQ(malformed.status, 400);
  EXPECT_THAT(malformed.json()["error"].as_string(), HasSubstr("1 to 200 visible ASCII characters"));

  // A refusal is an answer too: kept, and given again.
  HttpReply refused = client().post_keyed("/api/flows/greet/call", R"({})", "greet-nobody");
  EXPECT_EQ(refused.status, 400) << refused.body;
  HttpReply refused_again = client().post_keyed("/api/flows/greet/call", R"({})", "greet-nobody");
  EXPECT_EQ(refused_again.status, 400);
  EXPECT_EQ(refused_again.body, refused.body);
  EXPECT_EQ(refused_again.header("Idempotent-Replayed"), "true");

  // A deferred answer (a call that waits for its context) is kept once it is given.
  HttpReply waited = client().post_keyed("/api/flows/greet/call?wait=10s", R"({"name": "Kay"})", "greet-kay");
  ASSERT_EQ(waited.status, 200) << waited.body;
  EXPECT_EQ(waited.json()["status"], Value("completed"));
  HttpReply waited_again = client().post_keyed("/api/flows/greet/call?wait=10s", R"({"name": "Kay"})", "greet-kay");
  EXPECT_EQ(waited_again.status, 200);
  EXPECT_EQ(waited_again.body, waited.body);
  EXPECT_EQ(waited_again.header("Idempotent-Replayed"), "true");
  settle();
  size_t greetings = 0;
  for (const ContextRecord& c : engine().contexts()) greetings += c.flow() == "greet" ? 1 : 0;
  EXPECT_EQ(greetings, 1u) << "the call ran once";

  // The store keeps the keys: after a restart the same request gets the same answer.
  client_.reset();
  service_.reset();
  start();
  HttpReply after = client().post_keyed(target, R"({"number": "K1"})", "insert-K1");
  EXPECT_EQ(after.status, 201) << after.body;
  EXPECT_EQ(after.body, first.body);
  EXPECT_EQ(after.header("Location"), first.header("Location"));
  EXPECT_EQ(after.header("Idempotent-Replayed"), "true");
  EXPECT_EQ(count("K1"), 1u);
  // And a new key is a new write.
  EXPECT_EQ(client().post_keyed(target, R"({"number": "K1"})", "insert-K1-again").status, 201);
  EXPECT_EQ(count("K1"), 2u);
}

// A client gone while its keyed call waits (?wait=5m) does not keep the key "being answered"
// (409) until the wait ends: the server sees the close and drops the reply, and the key is
// then applied with no answer kept, as for any client gone before its answer (API.md). The
// same request sent again is told the context the call started, also after a restart.
TEST_F(ApiRoutesTest, AKeyedCallWhoseClientLeavesWhileItWaits_FreesItsKeyAtOnce) {
  const std::string gate = insert("gate", R"({"open": false})");
  const std::string body = R"({"gate": ")" + gate + R"("})";
  {
    HttpClient gone(service_->port());
    gone.write_raw("POST /api/flows/hold_desk/call?wait=5m HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                   "Idempotency-Key: hold-1\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
    // Its context started (a bounded number of round trips): the key is claimed.
    size_t started = 0;
    for (int i = 0; i < 5000 && started == 0; ++i) started = client().get("/api/contexts?flow=hold_desk").json()["contexts"].size();
    ASSERT_EQ(started, 1u);
  }  // gone, its call still waiting at the gate
  HttpReply again;
  const auto give_up = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  do {
    again = client().post_keyed("/api/flows/hold_desk/call?wait=5m", body, "hold-1");
  } while (again.status == 409 && std::chrono::steady_clock::now() < give_up);
  EXPECT_EQ(again.status, 200) << again.body;
  EXPECT_EQ(again.json()["applied"], Value(true));
  EXPECT_THAT(again.json()["note"].as_string(), HasSubstr("the client left before it was answered"))
      << "the server did not stop: the note does not say it did";
  EXPECT_EQ(again.header("Idempotent-Replayed"), "true");
  const Value contexts = client().get("/api/contexts?flow=hold_desk").json()["contexts"];
  ASSERT_EQ(contexts.size(), 1u) << "the call ran once";
  const Value started = contexts.items()[0]["id"];
  ASSERT_TRUE(started.is_string()) << contexts.to_json();
  EXPECT_EQ(again.json()["context_id"], started) << again.body;

  // What it started is kept with its key: told again by the next server on the same store.
  client_.reset();
  service_.reset();
  start();
  HttpReply after = client().post_keyed("/api/flows/hold_desk/call?wait=5m", body, "hold-1");
  EXPECT_EQ(after.status, 200) << after.body;
  EXPECT_EQ(after.json()["applied"], Value(true));
  EXPECT_EQ(after.json()["context_id"], started) << after.body;
  EXPECT_EQ(client().get("/api/contexts?flow=hold_desk").json()["contexts"].size(), 1u) << "the call ran once";
}

TEST_F(ApiRoutesTest, UnknownRoutesAndMethods) {
  HttpReply missing = client().get("/api/nope");
  EXPECT_EQ(missing.status, 404);
  EXPECT_THAT(missing.json()["error"].as_string(), HasSubstr("no such route"));
  HttpReply wrong = client().request(http::verb::delete_, "/api/flows");
  EXPECT_EQ(wrong.status, 405);
  EXPECT_EQ(wrong.header("Allow"), "GET");
  EXPECT_EQ(client().get("/api/tables/x/records/%zz").status, 400);
  // A long target of two-byte characters: the message cuts it between characters.
  std::string long_target = "/";
  for (int i = 0; i < 150; ++i) long_target += "\xC3\xA9";
  HttpReply cut = client().get(long_target);
  EXPECT_EQ(cut.status, 404);
  ASSERT_TRUE(static_cast<bool>(parse_json(cut.body))) << "the body is JSON, so UTF-8: " << cut.body;
  EXPECT_THAT(cut.json()["error"].as_string(), HasSubstr("no such route: /\xC3\xA9"));
  // The viewer is served, and HEAD answers without a body.
  HttpReply page = client().get("/");
  EXPECT_EQ(page.status, 200);
  EXPECT_THAT(page.header("Content-Type"), HasSubstr("text/html"));
  EXPECT_EQ(client().get("/app.js").status, 200);
  EXPECT_EQ(client().get("/contexts.js").status, 200);
  HttpReply head = client().request(http::verb::head, "/app.css");
  EXPECT_EQ(head.status, 200);
}

}  // namespace
}  // namespace flowrt::testing_http
