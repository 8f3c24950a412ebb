// Cluster nodes in this process on a real PostgreSQL server (tests/server/cluster_fixture.h):
// operations through the inbox. Operations forwarded at once commit in inbox order; a
// forwarded definition change is durable with its number; writes with an Idempotency-Key
// are applied once, whichever node they are sent to, and one not put into the inbox is
// never answered "not accepted"; two forwarders of one incarnation name their appends
// apart; a write that changed nothing is answered before the next entry is applied; an
// operation whose effects were durable when its leader stopped, but whose answer was not,
// is not applied again by the next leader, which names the context it started when it is a
// call. Waits are on the cluster's own signals (an
// answer's notification), bounded.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <future>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plans/value_json.h"
#include "runtime/engine_core.h"
#include "runtime/journal.h"
#include "server/cluster_forwarder.h"
#include "server/cluster_node.h"
#include "store/postgres_cluster.h"
#include "tests/server/cluster_fixture.h"
#include "tests/server/sse_reader.h"

namespace flowrt::testing_http {
namespace {

using ::testing::HasSubstr;
using ::testing::Not;
using namespace flowrt::test_support;

// The inbox entries' answers erased, as if their leader had stopped after their effects were
// durable and before it recorded the answers.
void erase_answers(const std::string& url, const std::vector<uint64_t>& seqs) {
  std::string list;
  for (uint64_t seq : seqs) list += (list.empty() ? "" : ", ") + std::to_string(seq);
  ASSERT_EQ(postgres_exec(url, "UPDATE cluster_inbox SET answered = NULL, status = NULL, reply = NULL, reply_type = "
                               "NULL WHERE seq IN (" + list + ")"),
            "");
}

TEST_F(ClusterPostgresTest, ManyOperationsForwardedAtOnce_CommitInInboxOrder) {
  server::ClusterNode& a = join("a");
  ASSERT_TRUE(a.leads());
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c->listen("flowrt_answers").is_ok());
  const int64_t client = *c->join("client", "", 60000);
  // 60 events in one append: the leader overlaps their durable waits, but each starts only
  // once the one before it committed.
  std::vector<InboxRequest> events;
  for (int n = 0; n < 60; ++n) {
    events.push_back(InboxRequest{"POST", "/api/events/ping", "t", "operator", true, "application/json",
                                  R"({"n": )" + std::to_string(n) + "}", ""});
  }
  const std::vector<uint64_t> seqs = entry_numbers(*c->append(client, events, "test.1"));
  for (uint64_t seq : seqs) {
    std::optional<InboxStatus> done = answered(*c, seq);
    ASSERT_TRUE(done.has_value()) << "operation " << seq;
    EXPECT_EQ(done->reply->status, 202) << done->reply->body;
  }
  a.service()->engine().settle(0);
  HttpClient to_a(a.port());
  HttpReply list = to_a.get("/api/contexts?flow=on_ping&limit=100");
  ASSERT_EQ(list.status, 200);
  const Value contexts = list.json()["contexts"];
  ASSERT_EQ(contexts.items().size(), 60u);
  std::vector<std::pair<int64_t, int64_t>> order;  // (seq, n)
  for (const Value& ctx : contexts.items()) {
    HttpReply one = to_a.get("/api/contexts/" + std::string(ctx["id"].as_string()));
    const std::string message(one.json()["steps"].items()[0]["inputs"]["message"].as_string());
    order.emplace_back(ctx["seq"].as_int(), std::stoll(message.substr(5)));
  }
  std::sort(order.begin(), order.end());
  for (size_t i = 0; i < order.size(); ++i) EXPECT_EQ(order[i].second, static_cast<int64_t>(i)) << "inbox order";
}

// A write with an Idempotency-Key goes through the inbox on every node, the leader too, so
// sending it again, to any node, gets the first answer (the same operation) and applies
// nothing more; the key sent with another request is refused (422) and applies nothing.
TEST_F(ClusterPostgresTest, AWriteWithAnIdempotencyKey_IsAppliedOnce_WhicheverNodeItIsSentTo) {
  server::ClusterNode& a = join("a");
  ASSERT_TRUE(a.leads());
  server::ClusterNode& b = join("b");
  HttpClient to_a(a.port()), to_b(b.port());
  const std::string insert = "/api/tables/incident/records";
  HttpReply first = to_b.post_keyed(insert, R"({"number": "INC1"})", "insert-INC1");
  ASSERT_EQ(first.status, 201) << first.body;
  const std::string op = first.header("X-Flowrt-Operation");
  ASSERT_FALSE(op.empty());
  for (HttpClient* to : {&to_b, &to_a}) {
    HttpReply again = to->post_keyed(insert, R"({"number": "INC1"})", "insert-INC1");
    EXPECT_EQ(again.status, 201) << again.body;
    EXPECT_EQ(again.body, first.body) << "the first answer, record and all";
    EXPECT_EQ(again.header("X-Flowrt-Operation"), op);
  }
  HttpReply op_seen = to_a.get("/api/cluster/operations/" + op);
  ASSERT_EQ(op_seen.status, 200) << op_seen.body;
  EXPECT_EQ(op_seen.json()["idempotency_key"], Value("insert-INC1")) << op_seen.body;
  HttpReply from_leader = to_a.post_keyed(insert, R"({"number": "INC2"})", "insert-INC2");
  EXPECT_EQ(from_leader.status, 201) << from_leader.body;
  EXPECT_NE(from_leader.header("X-Flowrt-Operation"), "") << "through the inbox on the leader too";
  EXPECT_EQ(to_b.post_keyed(insert, R"({"number": "INC2"})", "insert-INC2").header("X-Flowrt-Operation"),
            from_leader.header("X-Flowrt-Operation"));
  HttpReply reused = to_a.post_keyed(insert, R"({"number": "INC9"})", "insert-INC1");
  EXPECT_EQ(reused.status, 422) << reused.body;
  EXPECT_THAT(reused.body, HasSubstr("was sent before with another request (operation " + op + ")"));
  EXPECT_EQ(to_b.post_keyed(insert, R"({"number": "INC9"})", "").status, 400) << "an empty key";
  HttpReply plain = to_a.post(insert, R"({"number": "INC3"})");
  EXPECT_EQ(plain.status, 201) << plain.body;
  EXPECT_EQ(plain.header("X-Flowrt-Operation"), "") << "a write without a key is the leader's own, as before";

  HttpReply records = to_a.get("/api/tables/incident/records?limit=10");
  ASSERT_EQ(records.status, 200);
  const Value list = records.json()["records"];
  std::vector<std::string> numbers;
  for (const Value& r : list.items()) numbers.emplace_back(r["number"].as_string());
  std::sort(numbers.begin(), numbers.end());
  EXPECT_EQ(numbers, (std::vector<std::string>{"INC1", "INC2", "INC3"}));
}

// What keys are for: a follower answers "not known" when the client's deadline comes while
// its append waits (here on the inbox's head row, held by the test), and the append then
// commits. Sent again with its key, to the leader or the follower, the insert gets the
// answer of the one that was applied, and is there once.
TEST_F(ClusterPostgresTest, AnInsertAnsweredNotKnown_SentAgainWithItsKey_IsAppliedOnce) {
  server::ClusterNode& a = join("a");
  ASSERT_TRUE(a.leads());
  forward_timeout_ = std::chrono::milliseconds(500);
  server::ClusterNode& b = join("b");
  PGconn* holder = PQconnectdb(url_.c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
  PGresult* held = PQexec(holder, "BEGIN; SELECT seq FROM cluster_inbox_head WHERE id = 1 FOR UPDATE");
  ASSERT_EQ(PQresultStatus(held), PGRES_TUPLES_OK) << PQerrorMessage(holder);
  PQclear(held);

  HttpClient to_a(a.port()), to_b(b.port());
  const std::string insert = "/api/tables/incident/records";
  HttpReply unknown = to_b.post_keyed(insert, R"({"number": "INC5"})", "insert-INC5");
  EXPECT_EQ(unknown.status, 504) << unknown.body;
  EXPECT_THAT(unknown.body, HasSubstr("whether it was is not known")) << "the append is still in flight";
  PGresult* done = PQexec(holder, "COMMIT");  // the append goes on, and commits
  PQclear(done);
  PQfinish(holder);

  HttpReply again = to_a.post_keyed(insert, R"({"number": "INC5"})", "insert-INC5");
  EXPECT_EQ(again.status, 201) << again.body;
  const std::string op = again.header("X-Flowrt-Operation");
  EXPECT_EQ(again.json()["number"], Value("INC5"));
  HttpReply third = to_b.post_keyed(insert, R"({"number": "INC5"})", "insert-INC5");
  EXPECT_EQ(third.status, 201) << third.body;
  EXPECT_EQ(third.header("X-Flowrt-Operation"), op) << "one operation, whichever node answers";
  EXPECT_EQ(third.body, again.body);
  const Value list = to_a.get(R"(/api/tables/incident/records?where={"field":"number","op":"eq","value":"INC5"})")
                         .json()["records"];
  EXPECT_EQ(list.size(), 1u) << "applied once";
}

// A keyed write a node could not put into the inbox (here: its append times out on the
// inbox head, held by the test) is not answered "not accepted", as an unkeyed one is: an
// earlier sending with its key may have been accepted, so the answer says to send it again
// with the key. Sent again once the head is free, it is applied.
TEST_F(ClusterPostgresTest, AKeyedWriteNotPutIntoTheInbox_IsNotAnsweredNotAccepted) {
  server::ClusterNode& a = join("a");
  ASSERT_TRUE(a.leads());
  auto b_node = open("b", 3000, url_ + "%20-cstatement_timeout%3D300");
  ASSERT_TRUE(b_node) << b_node.error().describe();
  nodes_.push_back(std::move(b_node).value());
  server::ClusterNode& b = *nodes_.back();
  PGconn* holder = PQconnectdb(url_.c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
  PGresult* held = PQexec(holder, "BEGIN; SELECT seq FROM cluster_inbox_head WHERE id = 1 FOR UPDATE");
  ASSERT_EQ(PQresultStatus(held), PGRES_TUPLES_OK) << PQerrorMessage(holder);
  PQclear(held);

  HttpClient to_b(b.port());
  const std::string insert = "/api/tables/incident/records";
  HttpReply plain = to_b.post(insert, R"({"number": "INC7"})");
  EXPECT_EQ(plain.status, 503) << plain.body;
  EXPECT_THAT(plain.body, HasSubstr("the request was not accepted")) << "without a key, it was not";
  HttpReply keyed = to_b.post_keyed(insert, R"({"number": "INC6"})", "insert-INC6");
  EXPECT_EQ(keyed.status, 503) << keyed.body;
  EXPECT_THAT(keyed.body, ::testing::Not(HasSubstr("not accepted")));
  EXPECT_THAT(keyed.body, HasSubstr("send it again with the key"));
  PGresult* done = PQexec(holder, "COMMIT");
  PQclear(done);
  PQfinish(holder);

  HttpReply again = to_b.post_keyed(insert, R"({"number": "INC6"})", "insert-INC6");
  EXPECT_EQ(again.status, 201) << again.body;
}

TEST_F(ClusterPostgresTest, AForwardedDefinitionChange_IsDurableWithItsNumber_AsAnyOperationIs) {
  // A flow saved, published and activated through the inbox: each is applied under its
  // number, which the batch that makes it durable records, so that a next leader does not
  // apply it again (and answer a save that landed with "stale").
  server::ClusterNode& a = join("a");
  ASSERT_TRUE(a.leads());
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c->listen("flowrt_answers").is_ok());
  const int64_t client = *c->join("client", "", 60000);
  const std::string flow = R"({"id": "noted", "trigger": {"type": "event", "name": "note"},
    "actions": [{"action": "log", "inputs": {"message": "noted"}}]})";
  const InboxRequest save{"PUT", "/api/flows/noted", "t", "admin", true, "application/json",
                          R"({"revision": "0", "definition": )" + flow + "}", ""};
  const InboxRequest publish{"POST", "/api/flows/noted/publish", "t", "admin", true, "application/json", "{}", ""};
  for (const InboxRequest& r : {save, publish}) {
    SCOPED_TRACE(r.target);
    const uint64_t seq = (*c->append(client, {r}, "test." + r.method + r.target))[0].seq;
    std::optional<InboxStatus> done = answered(*c, seq);
    ASSERT_TRUE(done.has_value());
    EXPECT_EQ(done->reply->status, 200) << done->reply->body;
    EXPECT_EQ(sql_value("SELECT applied_op FROM cluster_lead"), std::to_string(seq)) << "durable with its effects";
  }
}

TEST_F(ClusterPostgresTest, TwoForwardersOfOneIncarnation_NameTheirAppendsApart) {
  // A leading node has two forwarders (its follower's, still answering, and its keyed
  // writes'), both of its incarnation. An append is read back by its name when its
  // connection is lost: two appends named alike would take each other's entries.
  std::unique_ptr<PostgresCluster> c = link();
  const int64_t incarnation = *c->join("twins", "", 60000);
  server::ClusterForwarder follower(url_, incarnation, std::chrono::milliseconds(500));
  server::ClusterForwarder keyed(url_, incarnation, std::chrono::milliseconds(500));
  follower.start();
  keyed.start();
  server::Request ping;
  ping.method(server::http::verb::post);
  ping.target("/api/events/ping");
  ping.body() = R"({"payload": {}})";
  const server::Caller caller{"t", server::Role::kOperator};
  {
    server::Reply first = follower.forward(ping, caller);
    server::Reply second = keyed.forward(ping, caller);
    const std::string mine = "batch LIKE '" + std::to_string(incarnation) + ".%'";
    EXPECT_TRUE(WaitFor([&] { return sql_value("SELECT count(*) FROM cluster_inbox WHERE " + mine) == "2"; }))
        << "both appended (no node leads: neither is answered)";
    EXPECT_EQ(sql_value("SELECT count(DISTINCT batch) FROM cluster_inbox WHERE " + mine), "2");
  }
  follower.stop();
  keyed.stop();
}

TEST_F(ClusterPostgresTest, AWriteThatChangedNothing_IsAnswered_BeforeTheNextEntryIsApplied) {
  // A next leader answers every unanswered entry up to the durable applied_op as applied.
  // So a refused write's answer is recorded before the entry after it can commit: held up
  // here (the lead row locked: the answer's fence waits), the next entry is not applied.
  server::ClusterNode& a = join("a");
  ASSERT_TRUE(a.leads());
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c->listen("flowrt_answers").is_ok());
  const int64_t client = *c->join("client", "", 60000);
  PGconn* holder = PQconnectdb(url_.c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
  PGresult* held = PQexec(holder, "BEGIN; SELECT epoch FROM cluster_lead FOR UPDATE");
  ASSERT_EQ(PQresultStatus(held), PGRES_TUPLES_OK) << PQerrorMessage(holder);
  PQclear(held);
  const InboxRequest refused{"POST", "/api/tables/incident/records", "t", "operator", true, "application/json",
                             R"({"number": )", ""};
  const InboxRequest insert{"POST", "/api/tables/incident/records", "t", "operator", true, "application/json",
                            R"({"number": "INC9"})", ""};
  const std::vector<InboxAppended> appended = *c->append(client, {refused, insert}, "test.nothing");
  ASSERT_EQ(appended.size(), 2u);
  const std::string held_by = std::to_string(PQbackendPID(holder));
  const bool waits = test_support::WaitFor([&] {
    return sql_value("SELECT count(*) FROM pg_stat_activity WHERE " + held_by + " = ANY(pg_blocking_pids(pid))") != "0";
  });
  HttpClient to_a(a.port());
  HttpReply incidents = to_a.get("/api/tables/incident/records");
  PQclear(PQexec(holder, "COMMIT"));  // let go in any case: the nodes stop at the end
  PQfinish(holder);
  ASSERT_TRUE(waits) << "the leader waits for the lead row";
  ASSERT_EQ(incidents.status, 200) << incidents.body;
  EXPECT_THAT(incidents.body, Not(HasSubstr("INC9"))) << "applied while the refusal before it was not answered";
  std::optional<InboxStatus> first = answered(*c, appended[0].seq);
  std::optional<InboxStatus> second = answered(*c, appended[1].seq);
  ASSERT_TRUE(first.has_value());
  ASSERT_TRUE(second.has_value());
  EXPECT_EQ(first->reply->status, 400) << first->reply->body;
  EXPECT_EQ(second->reply->status, 201) << second->reply->body;
}

TEST_F(ClusterPostgresTest, ARefusalsAnswer_OutlivesACrashOfTheDatabaseRightAfterIt) {
  // A follower passes a refusal on to its client as soon as it reads it. Were the answer's
  // commit not flushed, a crash of the database could lose it, and the next leader would
  // find the entry unanswered and apply it. A private server, crashed ("immediate") right
  // after the answer is read, in three rounds, each with a node of its own.
  test_support::PrivatePostgresServer database("refusal-crash");
  ASSERT_FALSE(database.url().empty());
  url_ = database.url();
  const InboxRequest refused{"POST", "/api/tables/incident/records", "t", "operator", true, "application/json",
                             R"({"number": )", ""};
  for (int round = 0; round < 3; ++round) {
    nodes_.clear();  // the last round's node leaves: the lead is free at once
    server::ClusterNode& leader = join("a" + std::to_string(round));
    ASSERT_TRUE(leader.leads()) << "round " << round;
    uint64_t seq = 0;
    {
      std::unique_ptr<PostgresCluster> c = link();
      ASSERT_TRUE(c->listen("flowrt_answers").is_ok());
      const int64_t client = *c->join("client" + std::to_string(round), "", 60000);
      seq = (*c->append(client, {refused}, "test.crash." + std::to_string(round)))[0].seq;
      std::optional<InboxStatus> first = answered(*c, seq);
      ASSERT_TRUE(first.has_value()) << "round " << round;
      ASSERT_EQ(first->reply->status, 400) << first->reply->body;
      ASSERT_TRUE(database.restart("immediate"));
    }
    std::unique_ptr<PostgresCluster> again = link();
    Result<std::optional<InboxStatus>> e = again->entry(seq);
    ASSERT_TRUE(e.is_ok() && e->has_value()) << "round " << round;
    ASSERT_TRUE((*e)->reply.has_value()) << "round " << round << ": the refusal's answer was lost with the database";
    EXPECT_EQ((*e)->reply->status, 400);
  }
  nodes_.clear();
}

TEST_F(ClusterPostgresTest, AnOperationDurableButUnanswered_IsNotAppliedAgainByTheNextLeader) {
  server::ClusterNode& a = join("a");
  ASSERT_TRUE(a.leads());
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c->listen("flowrt_answers").is_ok());
  const int64_t client = *c->join("client", "", 60000);
  const InboxRequest insert{"POST", "/api/tables/incident/records", "t", "operator", true, "application/json",
                            R"({"number": "INC7"})", ""};
  const uint64_t seq = (*c->append(client, {insert}, "test.1"))[0].seq;
  std::optional<InboxStatus> first = answered(*c, seq);
  ASSERT_TRUE(first.has_value());
  EXPECT_EQ(first->reply->status, 201) << first->reply->body;
  EXPECT_EQ(sql_value("SELECT applied_op FROM cluster_lead"), std::to_string(seq)) << "durable with its effects";

  // As if a had stopped after the effects were durable and before it answered.
  erase_answers(url_, {seq});
  nodes_.front()->stop();
  // And one more accepted while no node leads.
  const InboxRequest second_insert{"POST", "/api/tables/incident/records", "t", "operator", true,
                                   "application/json", R"({"number": "INC8"})", ""};
  const uint64_t next = (*c->append(client, {second_insert}, "test.2"))[0].seq;

  server::ClusterNode& b = join("b");
  ASSERT_TRUE(b.leads()) << "a left: b takes the lead at once";
  std::optional<InboxStatus> again = answered(*c, seq);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->reply->status, 200);
  EXPECT_THAT(again->reply->body, HasSubstr("applied by the node that led before"));
  std::optional<InboxStatus> later = answered(*c, next);
  ASSERT_TRUE(later.has_value());
  EXPECT_EQ(later->reply->status, 201) << later->reply->body;
  HttpClient to_b(b.port());
  HttpReply records = to_b.get("/api/tables/incident/records?limit=10");
  ASSERT_EQ(records.status, 200);
  std::vector<std::string> numbers;
  const Value list = records.json()["records"];
  for (const Value& r : list.items()) numbers.emplace_back(r["number"].as_string());
  EXPECT_THAT(numbers, ::testing::UnorderedElementsAre("INC7", "INC8")) << "INC7 once: not applied again";
}

// A call whose leader stopped after the call was durable and before it answered: the next
// leader, answering it without applying it again, names the context it started (kept with
// the inbox entry in the batch that queued it), and only that context exists. The
// operation's status names it too, answered or not.
TEST_F(ClusterPostgresTest, ACallDurableButUnanswered_IsToldItsContextByTheNextLeader) {
  server::ClusterNode& a = join("a");
  ASSERT_TRUE(a.leads());
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c->listen("flowrt_answers").is_ok());
  const int64_t client = *c->join("client", "", 60000);
  const InboxRequest call{"POST", "/api/flows/greet/call", "t", "operator", true, "application/json",
                          R"({"name": "Ada"})", ""};
  const InboxRequest insert{"POST", "/api/tables/incident/records", "t", "operator", true, "application/json",
                            R"({"number": "INC7"})", ""};
  const std::vector<uint64_t> seqs = entry_numbers(*c->append(client, {call, insert}, "test.1"));
  ASSERT_EQ(seqs.size(), 2u);
  std::optional<InboxStatus> called = answered(*c, seqs[0]);
  std::optional<InboxStatus> inserted = answered(*c, seqs[1]);
  ASSERT_TRUE(called.has_value());
  ASSERT_TRUE(inserted.has_value());
  ASSERT_EQ(called->reply->status, 202) << called->reply->body;
  const std::string context_id(parse_json(called->reply->body)->find("context_id")->as_string());
  ASSERT_FALSE(context_id.empty()) << called->reply->body;
  EXPECT_EQ(sql_value("SELECT started FROM cluster_inbox WHERE seq = " + std::to_string(seqs[0])), context_id);
  EXPECT_EQ(sql_value("SELECT COALESCE(started, 'none') FROM cluster_inbox WHERE seq = " + std::to_string(seqs[1])),
            "none")
      << "an insert starts no context of its own, whatever its record triggers";

  // As if a had stopped after both were durable and before it answered them.
  erase_answers(url_, seqs);
  {
    // Unanswered, the operation already names its context.
    HttpClient to_a(a.port());
    HttpReply op = to_a.get("/api/cluster/operations/" + std::to_string(seqs[0]));
    ASSERT_EQ(op.status, 200) << op.body;
    EXPECT_EQ(op.json()["answered"], Value(false)) << op.body;
    EXPECT_EQ(op.json()["context_id"], Value(std::string_view(context_id))) << op.body;
    HttpReply other = to_a.get("/api/cluster/operations/" + std::to_string(seqs[1]));
    ASSERT_EQ(other.status, 200) << other.body;
    EXPECT_EQ(other.json().find("context_id"), nullptr) << other.body;
  }
  nodes_.front()->stop();

  server::ClusterNode& b = join("b");
  ASSERT_TRUE(b.leads());
  std::optional<InboxStatus> again = answered(*c, seqs[0]);
  ASSERT_TRUE(again.has_value());
  EXPECT_EQ(again->reply->status, 200);
  const Value body = *parse_json(again->reply->body);
  EXPECT_THAT(again->reply->body, HasSubstr("applied by the node that led before"));
  ASSERT_NE(body.find("context_id"), nullptr) << again->reply->body;
  EXPECT_EQ(body["context_id"].as_string(), context_id);
  std::optional<InboxStatus> insert_again = answered(*c, seqs[1]);
  ASSERT_TRUE(insert_again.has_value());
  EXPECT_EQ(insert_again->reply->status, 200);
  EXPECT_THAT(insert_again->reply->body, Not(HasSubstr("context_id")));

  b.service()->engine().settle(0);
  HttpClient to_b(b.port());
  HttpReply list = to_b.get("/api/contexts?flow=greet&limit=10");
  ASSERT_EQ(list.status, 200) << list.body;
  const Value contexts = list.json()["contexts"];
  ASSERT_EQ(contexts.items().size(), 1u) << "the call once: not applied again";
  EXPECT_EQ(contexts.items()[0]["id"].as_string(), context_id);
}

}  // namespace
}  // namespace flowrt::testing_http
