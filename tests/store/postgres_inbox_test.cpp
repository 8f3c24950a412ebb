// The cluster's inbox (store/postgres_cluster.h), against a real server: appends from many
// connections are numbered in the order they commit, so a reader never sees a gap that
// fills later; statements are prepared once per session; hundreds of appends and answers
// go in shares; an answer is recorded once and wakes a listener; an append whose
// connection was lost is read back, committed or not, once its server backend has ended;
// idempotency keys make one entry per caller and key; pruning keeps what it must; an
// append held up past the statement limit appends nothing. Each test has a schema of its
// own (tests/store/postgres_cluster_fixture.h).
#include <gtest/gtest.h>

#include <algorithm>
#include <atomic>
#include <barrier>
#include <chrono>
#include <condition_variable>
#include <future>
#include <memory>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <libpq-fe.h>

#include "store/postgres_cluster.h"
#include "store/postgres_rows.h"
#include "store/postgres_store.h"
#include "tests/support/postgres_support.h"
#include "tests/support/test_support.h"
#include "tests/store/postgres_cluster_fixture.h"

namespace flowrt {
namespace {

using namespace flowrt::test_support;

TEST_F(PostgresClusterTest, InboxAppendsFromManyConnections_AreNumberedInCommitOrder_NoReaderSeesAGap) {
  constexpr int kWriters = 4, kEach = 40;
  std::unique_ptr<PostgresCluster> first = link();
  ASSERT_TRUE(first);
  const int64_t node = join(*first, "w");
  std::atomic<bool> done{false};
  std::vector<std::thread> writers;
  for (int w = 0; w < kWriters; ++w) {
    writers.emplace_back([&, w] {
      std::unique_ptr<PostgresCluster> c = link();
      for (int i = 0; i < kEach; ++i) {
        InboxRequest q{"POST", "/w" + std::to_string(w) + "/" + std::to_string(i), "t", "operator", true,
                       "application/json", std::string("{\"\\u0000\":1}\0raw", 16), ""};
        Result<std::vector<InboxAppended>> appended = c->append(node, {q, q}, "w" + std::to_string(w) + "." + std::to_string(i));
        ASSERT_TRUE(appended.is_ok()) << appended.message();
        const std::vector<uint64_t> seqs = entry_numbers(*appended);
        ASSERT_EQ(seqs.size(), 2u);
        EXPECT_EQ(seqs[1], seqs[0] + 1) << "one append's entries are consecutive";
      }
    });
  }
  // A reader that answers what it sees, in order, as the leader's applier does: whatever
  // it sees after its cursor must start right after it (no entry committed later with a
  // smaller number).
  std::unique_ptr<PostgresCluster> reader = link();
  uint64_t cursor = 0;
  std::thread stopper([&] {
    for (std::thread& t : writers) t.join();
    done.store(true);
  });
  while (true) {
    const bool last = done.load();
    Result<std::vector<InboxEntry>> seen = reader->unanswered(cursor, 50);
    ASSERT_TRUE(seen.is_ok()) << seen.message();
    for (const InboxEntry& e : *seen) {
      ASSERT_EQ(e.seq, cursor + 1) << "a gap: an entry numbered before one already seen committed after it";
      EXPECT_EQ(e.request.body, std::string("{\"\\u0000\":1}\0raw", 16)) << "bodies are bytes, kept whole";
      ASSERT_TRUE(recorded(reader->answer(e.seq, InboxReply{200, "text/plain", "ok"}, /*epoch=*/0)));
      cursor = e.seq;
    }
    if (last && seen->empty()) break;
  }
  stopper.join();
  EXPECT_EQ(cursor, static_cast<uint64_t>(kWriters * kEach * 2));
  Result<std::vector<std::pair<uint64_t, InboxReply>>> answers = reader->answers({1, 2, cursor, cursor + 1});
  ASSERT_TRUE(answers.is_ok());
  EXPECT_EQ(answers->size(), 3u) << "entries 1, 2 and the last are answered; the one after the last does not exist";
}

// Appends and answers go a few hundred rows to a statement: more than that take several
// statements (an append: in its one transaction; answers: a transaction for each share),
// and every entry still gets the number of its place and its own request, keyed ones as
// well, and every answer lands on its entry; an entry answered twice in one call keeps the
// first answer. (Fails if a share's rows are numbered from the wrong place, or a share is
// left out.)
// The inbox's statements, which every node runs several times a second, are prepared once
// per session (an append and an answer statement for each count of rows) and planned once:
// rounds of appends, reads and answers leave the same statements, none ever planned for its
// parameters' values.
TEST_F(PostgresClusterTest, TheInboxStatements_ArePreparedOncePerSession_AndPlannedOnce) {
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c);
  const int64_t node = join(*c, "n");
  EXPECT_EQ(c->setting("plan_cache_mode").value(), "force_generic_plan");
  const InboxRequest request{"POST", "/r", "t", "operator", true, "application/json", "{}", ""};
  uint64_t last = 0;
  for (int round = 0; round < 8; ++round) {
    Result<std::vector<InboxAppended>> one = c->append(node, {request}, "n.a" + std::to_string(round));
    Result<std::vector<InboxAppended>> three = c->append(node, {request, request, request}, "n.b" + std::to_string(round));
    ASSERT_TRUE(one.is_ok() && three.is_ok()) << one.message() << three.message();
    Result<std::vector<InboxEntry>> seen = c->unanswered(last, 100);
    ASSERT_TRUE(seen.is_ok()) << seen.message();
    ASSERT_EQ(seen->size(), 4u);
    ASSERT_TRUE(recorded(c->answer_all({{seen->at(0).seq, InboxReply{200, "text/plain", "a"}},
                                        {seen->at(1).seq, InboxReply{200, "text/plain", "b"}}},
                                       /*epoch=*/0)));
    Result<std::vector<std::pair<uint64_t, InboxReply>>> got = c->answers({seen->at(0).seq, seen->at(1).seq});
    ASSERT_TRUE(got.is_ok()) << got.message();
    EXPECT_EQ(got->size(), 2u);
    ASSERT_TRUE(recorded(c->answer_all({{seen->at(2).seq, InboxReply{200, "text/plain", "c"}},
                                        {seen->at(3).seq, InboxReply{200, "text/plain", "d"}}},
                                       /*epoch=*/0)));
    last = seen->back().seq;
  }
  Result<std::map<std::string, int64_t>> prepared = c->prepared_statements();
  ASSERT_TRUE(prepared.is_ok()) << prepared.message();
  const std::map<std::string, int64_t> once = {
      {"answer_2", 0}, {"answers", 0}, {"append_1", 0}, {"append_3", 0}, {"unanswered", 0}};
  EXPECT_EQ(*prepared, once);
}

TEST_F(PostgresClusterTest, AppendsAndAnswersOfHundreds_GoInShares_EachEntryItsPlaceAndItsAnswer) {
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c);
  const int64_t node = join(*c, "n");
  auto request = [](size_t i, std::string key) {
    return InboxRequest{"POST", "/r/" + std::to_string(i), "t", "operator", true, "application/json",
                        std::string("{\"i\":") + std::to_string(i) + std::string("}\0x", 3), std::move(key)};
  };
  std::vector<InboxRequest> plain, mixed;
  for (size_t i = 0; i < 600; ++i) plain.push_back(request(i, ""));
  for (size_t i = 600; i < 900; ++i) mixed.push_back(request(i, i % 3 == 0 ? "k" + std::to_string(i) : ""));
  mixed.push_back(mixed[0]);  // its key again, in the same append: the same entry
  Result<std::vector<InboxAppended>> first = c->append(node, plain, "n.1");
  ASSERT_TRUE(first.is_ok()) << first.message();
  Result<std::vector<InboxAppended>> second = c->append(node, mixed, "n.2");
  ASSERT_TRUE(second.is_ok()) << second.message();
  std::vector<uint64_t> seqs = entry_numbers(*first);
  for (size_t i = 0; i + 1 < mixed.size(); ++i) seqs.push_back((*second)[i].seq);
  for (size_t i = 0; i < seqs.size(); ++i) ASSERT_EQ(seqs[i], i + 1) << "entry of request " << i;
  EXPECT_EQ(second->back(), (InboxAppended{601, InboxAppended::Kind::kAgain}));

  Result<std::vector<InboxEntry>> seen = c->unanswered(0, 2000);
  ASSERT_TRUE(seen.is_ok()) << seen.message();
  ASSERT_EQ(seen->size(), 900u);
  for (size_t i = 0; i < seen->size(); ++i) {
    ASSERT_EQ((*seen)[i].seq, i + 1);
    ASSERT_EQ((*seen)[i].request.target, "/r/" + std::to_string(i)) << "entry " << i + 1 << " holds another request";
    ASSERT_EQ((*seen)[i].request.body, request(i, "").body);
  }
  EXPECT_EQ(sql_value("SELECT count(*) FROM cluster_inbox WHERE idem_key IS NOT NULL"), "100");

  std::vector<std::pair<uint64_t, InboxReply>> answers;
  for (uint64_t seq = 1; seq <= 900; ++seq) answers.emplace_back(seq, InboxReply{200, "text/plain", std::to_string(seq)});
  answers.emplace_back(7, InboxReply{500, "text/plain", "second"});
  const Result<std::string> session_commit = c->setting("synchronous_commit");
  ASSERT_TRUE(recorded(c->answer_all(answers, /*epoch=*/0)));
  EXPECT_EQ(c->setting("synchronous_commit").value(), session_commit.value())
      << "the answers' commit is not flushed, the session's next ones are as before";
  std::vector<uint64_t> all(900);
  for (size_t i = 0; i < all.size(); ++i) all[i] = i + 1;
  Result<std::vector<std::pair<uint64_t, InboxReply>>> got = c->answers(all);
  ASSERT_TRUE(got.is_ok()) << got.message();
  ASSERT_EQ(got->size(), 900u);
  for (const auto& [seq, reply] : *got) {
    ASSERT_EQ(reply.body, std::to_string(seq)) << "entry " << seq;
    ASSERT_EQ(reply.status, 200);
  }
  EXPECT_EQ(c->unanswered(0, 10)->size(), 0u);
}

TEST_F(PostgresClusterTest, AnAnswerIsRecordedOnce_AndWakesAListener) {
  std::unique_ptr<PostgresCluster> c = link(), listener = link();
  ASSERT_TRUE(c && listener);
  const int64_t node = join(*c, "n");
  ASSERT_TRUE(listener->listen("flowrt_answers").is_ok());
  Result<std::vector<InboxAppended>> done = c->append(node, {InboxRequest{"GET", "/x", "t", "viewer", false, "", "", ""}}, "n.1");
  ASSERT_TRUE(done.is_ok());
  const std::vector<uint64_t> seqs = entry_numbers(*done);
  ASSERT_TRUE(recorded(c->answer(seqs[0], InboxReply{201, "application/json", "{\"a\":1}"}, /*epoch=*/0)));
  ASSERT_TRUE(recorded(c->answer(seqs[0], InboxReply{500, "text/plain", "second"}, /*epoch=*/0)));
  Result<bool> woke = listener->wait(10000);
  ASSERT_TRUE(woke.is_ok());
  EXPECT_TRUE(*woke);
  Result<std::optional<InboxStatus>> e = c->entry(seqs[0]);
  ASSERT_TRUE(e.is_ok() && e->has_value());
  ASSERT_TRUE((*e)->reply.has_value());
  EXPECT_EQ((*e)->reply->status, 201) << "the first answer stands";
  EXPECT_EQ((*e)->reply->body, "{\"a\":1}");
  EXPECT_FALSE((*e)->entry.request.authenticated);
  EXPECT_FALSE(c->entry(999)->has_value());
}

// The connection of an append lost after its commit, and one lost in the middle of its
// transaction (its client gone, the session idle in it, holding the inbox's head row):
// read back from another connection, the first is there with its numbers, the second is
// not, and ending its backend frees the head row for the next append.
TEST_F(PostgresClusterTest, AnAppendWhoseConnectionWasLost_IsReadBack_CommittedOrNot) {
  std::unique_ptr<PostgresCluster> c = link(), other = link();
  ASSERT_TRUE(c && other);
  const int64_t node = join(*c, "n");
  const InboxRequest q{"POST", "/api/events/e", "t", "operator", true, "application/json", "{}", ""};
  const int committed_backend = c->backend_pid();
  Result<std::vector<InboxAppended>> seqs = c->append(node, {q, q}, "n.1");
  ASSERT_TRUE(seqs.is_ok()) << seqs.message();
  Result<std::vector<InboxAppended>> back = other->appended_batch("n.1", committed_backend, 5000, {q, q});
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_EQ(*back, *seqs);
  EXPECT_FALSE(c->lead().is_ok()) << "its backend was ended";
  EXPECT_FALSE(c->connected());

  // A client gone in the middle of an append: its session waits in the transaction.
  PGconn* raw = PQconnectdb(url_.c_str());
  ASSERT_EQ(PQstatus(raw), CONNECTION_OK);
  const int cut_backend = PQbackendPID(raw);
  PGresult* r = PQexec(raw,
                       "BEGIN; UPDATE cluster_inbox_head SET seq = seq + 1 WHERE id = 1; INSERT INTO cluster_inbox(seq, "
                       "incarnation, method, target, caller, role, authenticated, content_type, body, batch) SELECT "
                       "seq, 1, 'POST', '/x', 't', 'operator', true, '', '', 'n.2' FROM cluster_inbox_head");
  ASSERT_EQ(PQresultStatus(r), PGRES_COMMAND_OK) << PQerrorMessage(raw);
  PQclear(r);
  back = other->appended_batch("n.2", cut_backend, 5000, {q});
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_EQ(back->at(0).kind, InboxAppended::Kind::kNone) << "its transaction never committed";
  PQfinish(raw);
  Result<std::vector<InboxAppended>> next = other->append(node, {q}, "n.3");
  ASSERT_TRUE(next.is_ok()) << next.message();
  EXPECT_EQ((*next)[0].seq, (*seqs)[1].seq + 1) << "the head row is free, and no number was used";
  back = other->appended_batch("n.never", 0, 5000, {q});
  ASSERT_TRUE(back.is_ok());
  EXPECT_EQ(*back, std::vector<InboxAppended>{InboxAppended{}});
  EXPECT_TRUE(other->connected());
}

// An Idempotency-Key names one entry per caller: the same request appended again gets
// that entry and adds nothing (no number is used for it), another request with the key
// is refused as a reuse, and another caller's key is its own. Within one append the
// same holds between its requests. A read-back of an append says the same as the append.
TEST_F(PostgresClusterTest, AKeyedRequest_IsAppendedOnce_PerCaller_AndReadBackAsTheAppendSaid) {
  using Kind = InboxAppended::Kind;
  std::unique_ptr<PostgresCluster> c = link(), other = link();
  ASSERT_TRUE(c && other);
  const int64_t node = join(*c, "n");
  auto keyed = [](std::string caller, std::string body, std::string key) {
    return InboxRequest{"POST", "/api/tables/t/records", std::move(caller), "operator", true, "application/json",
                        std::move(body), std::move(key)};
  };
  const InboxRequest q = keyed("t", R"({"a":1})", "k-1");
  Result<std::vector<InboxAppended>> first = c->append(node, {q}, "n.1");
  ASSERT_TRUE(first.is_ok()) << first.message();
  ASSERT_EQ(first->at(0).kind, Kind::kNew);
  const uint64_t s1 = first->at(0).seq;
  Result<std::vector<InboxAppended>> again = other->append(node, {q}, "n.2");
  ASSERT_TRUE(again.is_ok()) << again.message();
  EXPECT_EQ(*again, (std::vector<InboxAppended>{{s1, Kind::kAgain}}));
  Result<std::vector<InboxAppended>> reused = other->append(node, {keyed("t", R"({"a":2})", "k-1")}, "n.3");
  ASSERT_TRUE(reused.is_ok());
  EXPECT_EQ(*reused, (std::vector<InboxAppended>{{s1, Kind::kKeyReused}}));
  Result<std::vector<InboxAppended>> theirs = other->append(node, {keyed("u", R"({"a":1})", "k-1")}, "n.4");
  ASSERT_TRUE(theirs.is_ok());
  EXPECT_EQ(*theirs, (std::vector<InboxAppended>{{s1 + 1, Kind::kNew}})) << "no number went to the repeats";

  // In one append: a new key twice, reused with another body, and a request without one.
  const InboxRequest q2 = keyed("t", R"({"b":1})", "k-2");
  const InboxRequest plain = keyed("t", R"({"c":1})", "");
  const std::vector<InboxRequest> mixed{q2, q, q2, keyed("t", R"({"b":2})", "k-2"), plain};
  const int backend = c->backend_pid();
  Result<std::vector<InboxAppended>> batch = c->append(node, mixed, "n.5");
  ASSERT_TRUE(batch.is_ok()) << batch.message();
  const uint64_t s3 = s1 + 2;
  const std::vector<InboxAppended> expected{
      {s3, Kind::kNew}, {s1, Kind::kAgain}, {s3, Kind::kAgain}, {s3, Kind::kKeyReused}, {s3 + 1, Kind::kNew}};
  EXPECT_EQ(*batch, expected);
  Result<std::vector<InboxAppended>> back = other->appended_batch("n.5", backend, 5000, mixed);
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_EQ(*back, expected) << "read back as the append said";
  // An append that never committed: only what its keys name elsewhere is there.
  const InboxRequest fresh = keyed("t", R"({"d":1})", "k-3");
  back = other->appended_batch("n.never", 0, 5000, {q, fresh, plain});
  ASSERT_TRUE(back.is_ok()) << back.message();
  EXPECT_EQ(*back, (std::vector<InboxAppended>{{s1, Kind::kAgain}, {}, {}}));
  EXPECT_EQ(sql_value("SELECT count(*) FROM cluster_inbox"), "4");
  // Keys and callers are matched as they are, quotes, backslashes and all.
  const InboxRequest odd = keyed("t\u00e9 \"x\"", R"({"e":1})", R"(k"\{,}'--)");
  std::unique_ptr<PostgresCluster> third = link();  // c's session was ended by the read-back
  ASSERT_TRUE(third);
  Result<std::vector<InboxAppended>> odd_first = other->append(node, {odd}, "n.6");
  ASSERT_TRUE(odd_first.is_ok()) << odd_first.message();
  Result<std::vector<InboxAppended>> odd_again = third->append(node, {odd}, "n.7");
  ASSERT_TRUE(odd_again.is_ok()) << odd_again.message();
  EXPECT_EQ(*odd_again, (std::vector<InboxAppended>{{odd_first->at(0).seq, Kind::kAgain}}));
}

// Answered entries are pruned after `seconds`, those with a key after `keyed_seconds`
// (so a key is remembered that long); unanswered ones are kept whatever their age.
TEST_F(PostgresClusterTest, Pruning_KeepsKeyedEntriesLonger_AndUnansweredOnesAlways) {
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c);
  const int64_t node = join(*c, "n");
  const InboxRequest plain{"POST", "/api/events/e", "t", "operator", true, "application/json", "{}", ""};
  InboxRequest keyed = plain;
  keyed.idempotency_key = "k";
  Result<std::vector<InboxAppended>> done = c->append(node, {plain, keyed, plain}, "n.1");
  ASSERT_TRUE(done.is_ok()) << done.message();
  const std::vector<uint64_t> seqs = entry_numbers(*done);
  ASSERT_TRUE(recorded(c->answer_all({{seqs[0], InboxReply{202, "", ""}}, {seqs[1], InboxReply{202, "", ""}}}, /*epoch=*/0)));
  auto age = [&](uint64_t seq, const char* by) {
    ASSERT_EQ(postgres_exec(url_, "UPDATE cluster_inbox SET accepted = accepted - interval '" + std::string(by) +
                                      "', answered = answered - interval '" + by + "' WHERE seq = " +
                                      std::to_string(seq)),
              "");
  };
  auto there = [&] { return sql_value("SELECT string_agg(seq::text, ',' ORDER BY seq) FROM cluster_inbox"); };
  age(seqs[0], "1 hour");
  age(seqs[1], "1 hour");
  ASSERT_EQ(postgres_exec(url_, "UPDATE cluster_inbox SET accepted = accepted - interval '3 days' WHERE seq = " +
                                    std::to_string(seqs[2])),
            "");
  ASSERT_TRUE(c->prune(600, 86400).is_ok());
  EXPECT_EQ(there(), std::to_string(seqs[1]) + "," + std::to_string(seqs[2]));
  age(seqs[1], "2 days");
  ASSERT_TRUE(c->prune(600, 86400).is_ok());
  EXPECT_EQ(there(), std::to_string(seqs[2])) << "the keyed entry goes after a day; the unanswered one stays";
}

// Two nodes appending one keyed request at once (a client that resent it to another node
// while the first append was in flight): one appends it, the other gets that entry.
TEST_F(PostgresClusterTest, OneKeyAppendedFromTwoConnectionsAtOnce_MakesOneEntry) {
  using Kind = InboxAppended::Kind;
  std::unique_ptr<PostgresCluster> a = link(), b = link();
  ASSERT_TRUE(a && b);
  const int64_t node = join(*a, "n");
  for (int round = 0; round < 20; ++round) {
    const InboxRequest q{"POST", "/api/events/e", "t", "operator", true, "application/json", "{}",
                         "key-" + std::to_string(round)};
    std::barrier<> together(2);
    Result<std::vector<InboxAppended>> from_a = Error{""}, from_b = Error{""};
    std::thread other([&] {
      together.arrive_and_wait();
      from_b = b->append(node, {q}, "b." + std::to_string(round));
    });
    together.arrive_and_wait();
    from_a = a->append(node, {q}, "a." + std::to_string(round));
    other.join();
    ASSERT_TRUE(from_a.is_ok() && from_b.is_ok()) << from_a.message() << from_b.message();
    EXPECT_EQ(from_a->at(0).seq, from_b->at(0).seq) << "round " << round;
    EXPECT_EQ((from_a->at(0).kind == Kind::kNew) + (from_b->at(0).kind == Kind::kNew), 1) << "round " << round;
  }
  EXPECT_EQ(sql_value("SELECT count(*) FROM cluster_inbox"), "20");
}

// An append held up by a lock on the inbox (an operator's LOCK TABLE) is cancelled by the
// server after the session's limit: it fails, appends nothing, and the session goes on, so
// the node's thread is not held for as long as the lock is. Without the limit the append
// waits for the lock; the holder lets go after 30 s, and the append then succeeds: the test
// fails rather than hangs.
TEST_F(PostgresClusterTest, AnAppendHeldUpByALockedInbox_IsCancelledByTheServer_AppendsNothing_TheSessionGoesOn) {
  Result<std::unique_ptr<PostgresCluster>> made = PostgresCluster::connect(url_, /*statement_timeout_ms=*/300);
  ASSERT_TRUE(made.is_ok()) << made.message();
  PostgresCluster& c = **made;
  const int64_t node = join(c, "n");
  PGconn* holder = PQconnectdb(url_.c_str());
  ASSERT_EQ(PQstatus(holder), CONNECTION_OK);
  postgres_rows::ResultPtr locked(PQexec(holder, "BEGIN; LOCK TABLE cluster_inbox_head IN ACCESS EXCLUSIVE MODE"));
  ASSERT_TRUE(postgres_rows::result_ok(locked.get()));
  std::mutex m;
  std::condition_variable cv;
  bool appended = false;
  std::thread lets_go([&] {  // the holder lets go once the append has returned, or after 30 s
    std::unique_lock l(m);
    cv.wait_for(l, std::chrono::seconds(30), [&] { return appended; });
    postgres_rows::ResultPtr done(PQexec(holder, "ROLLBACK"));
  });
  const InboxRequest q{"POST", "/api/events/e", "t", "operator", true, "application/json", "{}", ""};
  Result<std::vector<InboxAppended>> held = c.append(node, {q}, "n.1");
  {
    std::lock_guard l(m);
    appended = true;
  }
  cv.notify_all();
  lets_go.join();
  PQfinish(holder);
  EXPECT_FALSE(held.is_ok()) << "the append waited for the lock";
  if (!held) {
    EXPECT_NE(held.message().find("statement timeout"), std::string::npos) << held.message();
  }
  EXPECT_TRUE(c.connected()) << "a cancelled statement leaves the session as it was";
  Result<std::vector<InboxAppended>> next = c.append(node, {q}, "n.2");
  ASSERT_TRUE(next.is_ok()) << next.message();
  EXPECT_EQ(sql_value("SELECT string_agg(batch, ',') FROM cluster_inbox"), "n.2") << "the cancelled append made no entry";
}

// prune() deletes every entry that is due, however many: kPruneRows to a statement, so that
// each stays well within the session's statement limit.
TEST_F(PostgresClusterTest, Pruning_DeletesEveryEntryDue_MoreThanAStatementsShare) {
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c);
  const int64_t due = PostgresCluster::kPruneRows * 2 + 17;
  ASSERT_EQ(postgres_exec(url_, "INSERT INTO cluster_inbox(seq, incarnation, method, target, caller, role, "
                                "authenticated, content_type, body, status, answered) SELECT g, 1, 'POST', '/', 'c', "
                                "'operator', true, '', '', 200, clock_timestamp() - interval '1 hour' FROM "
                                "generate_series(1, " + std::to_string(due + 3) + ") g; UPDATE cluster_inbox SET "
                                "answered = clock_timestamp() WHERE seq > " + std::to_string(due)),
            "");
  ASSERT_TRUE(c->prune(600, 86400).is_ok());
  EXPECT_EQ(sql_value("SELECT count(*) FROM cluster_inbox"), "3") << "the entries answered just now stay";
}

}  // namespace
}  // namespace flowrt

namespace flowrt {
namespace {

// An answer recorded is durable when answer_all returns: a refusal (an entry that changed
// nothing) that a follower has read and passed on to its client must not be lost with the
// database, or the next leader, finding the entry unanswered, would apply it. Each round
// crashes the server right after the answer (an immediate restart: what the WAL writer has
// not yet written is lost).
TEST(PostgresClusterCrashTest, AnAnswer_OutlivesADatabaseCrashRightAfterIt) {
  test_support::PrivatePostgresServer server("answer-crash");
  ASSERT_FALSE(server.url().empty());
  for (int round = 0; round < 5; ++round) {
    uint64_t seq = 0;
    {
      Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(server.url());
      ASSERT_TRUE(c.is_ok()) << c.message();
      Result<int64_t> node = (*c)->join("n" + std::to_string(round), "127.0.0.1:1", 60000);
      ASSERT_TRUE(node.is_ok()) << node.message();
      Result<std::vector<InboxAppended>> done = (*c)->append(
          *node, {InboxRequest{"POST", "/api/records/t", "t", "admin", true, "application/json", "{}", ""}}, "n.1");
      ASSERT_TRUE(done.is_ok()) << done.message();
      seq = test_support::entry_numbers(*done).at(0);
      Result<bool> answered = (*c)->answer(seq, InboxReply{503, "application/json", "{\"error\":\"refused\"}"}, 0);
      ASSERT_TRUE(answered.is_ok() && *answered) << (answered ? "fenced" : answered.message());
      ASSERT_TRUE(server.restart("immediate"));
    }
    Result<std::unique_ptr<PostgresCluster>> again = PostgresCluster::connect(server.url());
    ASSERT_TRUE(again.is_ok()) << again.message();
    Result<std::optional<InboxStatus>> e = (*again)->entry(seq);
    ASSERT_TRUE(e.is_ok() && e->has_value()) << "round " << round;
    ASSERT_TRUE((*e)->reply.has_value()) << "round " << round << ": the answer was lost with the database";
    EXPECT_EQ((*e)->reply->status, 503);
  }
}

}  // namespace
}  // namespace flowrt
