// What several nodes on one PostgreSQL store share (store/postgres_cluster.h), against a
// real server: only one of two nodes trying at once takes the lead, and each epoch is
// taken once; a lease that ran out lets another node take over; a leader's store writes
// are fenced by its epoch (a stale leader's batch is refused whole, and so is every later
// one), and record the operations they applied in the same transaction; its sessions end a
// transaction left idle and cancel a statement held up past their limit. The inbox's
// tests are in postgres_inbox_test.cpp. Each test has a schema of its own
// (tests/store/postgres_cluster_fixture.h).
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

TEST_F(PostgresClusterTest, TwoNodesTryingToLeadAtOnce_OneWins_AndEachEpochIsTakenOnce) {
  std::unique_ptr<PostgresCluster> a = link(), b = link();
  ASSERT_TRUE(a && b);
  std::set<int64_t> epochs;
  for (int round = 0; round < 20; ++round) {
    const int64_t ia = join(*a, "a"), ib = join(*b, "b");
    std::optional<ClusterLead> la, lb;
    std::barrier sync(2);
    std::thread ta([&] {
      sync.arrive_and_wait();
      Result<std::optional<ClusterLead>> r = a->try_lead(ia);
      ASSERT_TRUE(r.is_ok()) << r.message();
      la = *r;
    });
    std::thread tb([&] {
      sync.arrive_and_wait();
      Result<std::optional<ClusterLead>> r = b->try_lead(ib);
      ASSERT_TRUE(r.is_ok()) << r.message();
      lb = *r;
    });
    ta.join();
    tb.join();
    ASSERT_NE(la.has_value(), lb.has_value()) << "round " << round << ": exactly one of two may lead";
    const ClusterLead won = la ? *la : *lb;
    EXPECT_TRUE(epochs.insert(won.epoch).second) << "epoch " << won.epoch << " taken twice";
    Result<ClusterLead> now = a->lead();
    ASSERT_TRUE(now.is_ok());
    EXPECT_EQ(now->incarnation, la ? ia : ib);
    EXPECT_EQ(now->epoch, won.epoch);
    // The winner's lease runs out: the other takes over with the next epoch.
    expire(la ? ia : ib);
    Result<std::optional<ClusterLead>> next = (la ? b : a)->try_lead(la ? ib : ia);
    ASSERT_TRUE(next.is_ok()) << next.message();
    ASSERT_TRUE(next->has_value()) << "a lease that ran out frees the lead";
    EXPECT_EQ((*next)->epoch, won.epoch + 1);
    EXPECT_TRUE(epochs.insert((*next)->epoch).second);
    ASSERT_TRUE(a->leave(ia).is_ok());
    ASSERT_TRUE(b->leave(ib).is_ok());
  }
}

TEST_F(PostgresClusterTest, ALiveLeader_KeepsTheLead_ALeaderThatLeft_HandsItOverAtOnce_EachNotesWhatItRuns) {
  std::unique_ptr<PostgresCluster> a = link(), b = link();
  ASSERT_TRUE(a && b);
  const int64_t ia = join(*a, "a"), ib = join(*b, "b");
  ASSERT_TRUE(a->try_lead(ia)->has_value());
  EXPECT_FALSE(b->try_lead(ib)->has_value()) << "a's lease runs for a minute";
  ASSERT_TRUE(a->heartbeat(ia, 60000, NodeRuns{3, 2, 1}).is_ok());
  EXPECT_FALSE(b->try_lead(ib)->has_value());
  {
    // What each runs, as its last heartbeat noted: zeros until its first.
    Result<std::vector<ClusterNodeRow>> now = b->nodes();
    ASSERT_TRUE(now.is_ok());
    ASSERT_EQ(now->size(), 2u);
    EXPECT_EQ((*now)[0].runs, NodeRuns{}) << "b";
    EXPECT_EQ((*now)[1].runs, (NodeRuns{3, 2, 1})) << "a";
  }
  ASSERT_TRUE(a->leave(ia).is_ok());
  EXPECT_FALSE(a->heartbeat(ia, 60000).is_ok()) << "a node that left has no lease to renew";
  EXPECT_TRUE(b->try_lead(ib)->has_value()) << "leaving frees the lead without waiting for the lease";
  // A node whose own lease ran out cannot take the lead.
  std::unique_ptr<PostgresCluster> c = link();
  const int64_t ic = join(*c, "c");
  expire(ib);
  expire(ic);
  EXPECT_FALSE(c->try_lead(ic)->has_value()) << "only a live node may lead";
  Result<std::vector<ClusterNodeRow>> nodes = c->nodes();
  ASSERT_TRUE(nodes.is_ok());
  ASSERT_EQ(nodes->size(), 3u);
  EXPECT_EQ((*nodes)[0].name, "c");
  EXPECT_FALSE((*nodes)[0].alive);
  EXPECT_TRUE((*nodes)[2].left);
}

TEST_F(PostgresClusterTest, AStaleLeadersStoreWrite_IsFenced_WholeBatchRefused_TheNewLeadersGoes) {
  std::unique_ptr<PostgresCluster> a = link(), b = link();
  ASSERT_TRUE(a && b);
  const int64_t ia = join(*a, "a"), ib = join(*b, "b");
  Result<std::optional<ClusterLead>> la = a->try_lead(ia);
  ASSERT_TRUE(la.is_ok() && la->has_value());
  Result<std::unique_ptr<PostgresStore>> old =
      PostgresStore::open(url_, SyncMode::kNormal, /*read_only=*/false, (*la)->epoch);
  ASSERT_TRUE(old.is_ok()) << old.message();
  ASSERT_TRUE((*old)->write(batch_of_record(1, /*applied_op=*/7)).is_ok());
  EXPECT_EQ(sql_value("SELECT applied_op FROM cluster_lead"), "7") << "recorded with the batch";

  expire(ia);
  Result<std::optional<ClusterLead>> lb = b->try_lead(ib);
  ASSERT_TRUE(lb.is_ok() && lb->has_value());
  EXPECT_EQ((*lb)->applied_op, 7u) << "the new leader starts after what the last one applied";

  Status fenced = (*old)->write(batch_of_record(2, 9));
  ASSERT_FALSE(fenced.is_ok());
  EXPECT_NE(fenced.message().find("fenced"), std::string::npos) << fenced.message();
  EXPECT_EQ(sql_value("SELECT count(*) FROM records"), "1") << "none of the refused batch is there";
  EXPECT_EQ(sql_value("SELECT applied_op FROM cluster_lead"), "7");
  EXPECT_FALSE((*old)->write(batch_of_record(3)).is_ok()) << "a fenced store writes nothing more";

  Result<std::unique_ptr<PostgresStore>> fresh =
      PostgresStore::open(url_, SyncMode::kNormal, /*read_only=*/false, (*lb)->epoch);
  ASSERT_TRUE(fresh.is_ok()) << fresh.message() << " (two leaders' stores need no writer's lock)";
  ASSERT_TRUE((*fresh)->write(batch_of_record(2, 9)).is_ok());
  EXPECT_EQ(sql_value("SELECT count(*) FROM records"), "2");
  EXPECT_EQ(sql_value("SELECT applied_op FROM cluster_lead"), "9");
  ASSERT_TRUE((*fresh)->write(batch_of_record(4, 0)).is_ok());
  EXPECT_EQ(sql_value("SELECT applied_op FROM cluster_lead"), "9") << "applied_op never goes back";
}

// A stale leader's answers are fenced as its store batches are. Found by the fault runs: a
// leader paused past its lease refused an entry (its store was fenced: "refused, nothing
// was written"), the next leader applied it, and the stale leader's answer came first, so
// the client was told "refused" of an insert that is there.
TEST_F(PostgresClusterTest, AStaleLeadersAnswer_IsFenced_TheNewLeadersAnswerStands) {
  std::unique_ptr<PostgresCluster> a = link(), b = link();
  ASSERT_TRUE(a && b);
  const int64_t ia = join(*a, "a"), ib = join(*b, "b");
  const int64_t old_epoch = (*a->try_lead(ia))->epoch;
  Result<std::vector<InboxAppended>> done =
      b->append(ib, {InboxRequest{"POST", "/x", "t", "operator", true, "", "", ""},
                     InboxRequest{"POST", "/y", "t", "operator", true, "", "", ""}}, "b.1");
  ASSERT_TRUE(done.is_ok()) << done.message();
  const std::vector<uint64_t> seqs = entry_numbers(*done);
  ASSERT_TRUE(recorded(a->answer(seqs[0], InboxReply{201, "text/plain", "by a"}, old_epoch))) << "a leads: recorded";

  expire(ia);
  Result<std::optional<ClusterLead>> lb = b->try_lead(ib);
  ASSERT_TRUE(lb.is_ok() && lb->has_value());
  Result<bool> stale = a->answer(seqs[1], InboxReply{503, "text/plain", "refused by a"}, old_epoch);
  ASSERT_TRUE(stale.is_ok()) << stale.message();
  EXPECT_FALSE(*stale) << "fenced: another node leads";
  Result<std::optional<InboxStatus>> e = b->entry(seqs[1]);
  ASSERT_TRUE(e.is_ok() && e->has_value());
  EXPECT_FALSE((*e)->reply.has_value()) << "the stale leader's answer is not there";

  ASSERT_TRUE(recorded(b->answer(seqs[1], InboxReply{201, "text/plain", "by b"}, (*lb)->epoch)));
  e = b->entry(seqs[1]);
  ASSERT_TRUE(e.is_ok() && e->has_value() && (*e)->reply.has_value());
  EXPECT_EQ((*e)->reply->body, "by b");
  Result<bool> late = a->answer(seqs[1], InboxReply{500, "text/plain", "late"}, old_epoch);
  ASSERT_TRUE(late.is_ok()) << late.message();
  EXPECT_FALSE(*late);
}

// The answers' fence locks the lead row FOR KEY SHARE, which only the takeover's FOR UPDATE
// waits for: a leader's own store batches (which update the row) go on while an answer is
// recorded, and a takeover waits for it, then fences the answers after it. With FOR SHARE
// the leader's batches would queue behind its own answers (and its followers' answers run
// 5-7% slower: SCALING.md).
TEST_F(PostgresClusterTest, AnAnswerInFlight_HoldsUpATakeover_NotTheLeadersOwnBatches) {
  ALeads l = a_leads();
  ASSERT_TRUE(l.store);
  PostgresCluster* a = l.a.get();
  PostgresCluster* b = l.b.get();
  const int64_t ia = l.ia, ib = l.ib, epoch = l.epoch;
  PostgresStore* store = l.store.get();

  // Declared before the connection, so that on a failure the connection closes first
  // (its lock goes) and the threads these wait for can end.
  std::future<Status> batch;
  std::future<Result<std::optional<ClusterLead>>> taken;
  // An answer being recorded: its transaction holds the lock answer_all takes.
  postgres_rows::ConnPtr held(PQconnectdb(url_.c_str()));
  PGconn* answering = held.get();
  ASSERT_EQ(PQstatus(answering), CONNECTION_OK) << PQerrorMessage(answering);
  auto exec = [&](const std::string& sql) {
    PGresult* r = PQexec(answering, sql.c_str());
    const bool ok = PQresultStatus(r) == PGRES_COMMAND_OK;
    PQclear(r);
    return ok;
  };
  ASSERT_TRUE(exec("BEGIN"));
  {
    postgres_rows::Params p;
    p.integer(epoch);
    postgres_rows::ResultPtr fence(postgres_rows::exec_params(answering, PostgresCluster::kAnswerFence, p));
    ASSERT_EQ(PQntuples(fence.get()), 1) << PQerrorMessage(answering);
  }

  batch = std::async(std::launch::async, [&] { return store->write(batch_of_record(1, 1)); });
  ASSERT_EQ(batch.wait_for(std::chrono::seconds(20)), std::future_status::ready)
      << "the leader's batch waited for its own answer";
  EXPECT_TRUE(batch.get().is_ok());

  expire(ia);
  taken = std::async(std::launch::async, [&] { return b->try_lead(ib); });
  // The takeover waits on the lead row's lock (its backend shows it), not a moment longer.
  EXPECT_TRUE(WaitFor([&] {
    return sql_value("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock' AND pid = " +
                     std::to_string(b->backend_pid())) == "1";
  })) << "the takeover did not wait for the answer in flight";
  EXPECT_NE(taken.wait_for(std::chrono::milliseconds(0)), std::future_status::ready);
  ASSERT_TRUE(exec("COMMIT"));
  Result<std::optional<ClusterLead>> lead = taken.get();
  ASSERT_TRUE(lead.is_ok() && lead->has_value()) << (lead ? "" : lead.message());
  EXPECT_EQ((*lead)->epoch, epoch + 1);
  Result<bool> late = a->answer(1, InboxReply{200, "", ""}, epoch);
  ASSERT_TRUE(late.is_ok()) << late.message();
  EXPECT_FALSE(*late) << "an answer after the takeover is fenced";
}

TEST_F(PostgresClusterTest, ATakeoverWaitsForTheBatchInFlight_ThenFencesTheNext) {
  ALeads l = a_leads();
  ASSERT_TRUE(l.store);
  PostgresCluster* b = l.b.get();
  const int64_t ia = l.ia, ib = l.ib;
  PostgresStore* store = l.store.get();
  expire(ia);
  // Many batches race one takeover: every batch that committed did so before the
  // takeover (its applied_op is what the new leader starts from), none after.
  std::atomic<uint64_t> last_ok{0};
  std::thread writer([&] {
    for (int n = 1; n <= 400; ++n) {
      if (!store->write(batch_of_record(n, static_cast<uint64_t>(n))).is_ok()) return;
      last_ok.store(static_cast<uint64_t>(n));
    }
  });
  Result<std::optional<ClusterLead>> taken = b->try_lead(ib);
  writer.join();
  ASSERT_TRUE(taken.is_ok() && taken->has_value());
  EXPECT_EQ((*taken)->applied_op, last_ok.load()) << "the takeover saw exactly the batches that committed";
  EXPECT_EQ(sql_value("SELECT count(*) FROM records"), std::to_string(last_ok.load()));
}

// A writing session of the cluster ends a transaction its client left idle (the client
// died, or was cut off from the server without the server noticing) after
// kIdleInTransactionTimeoutMs, so that the row locks it holds do not wedge the others.
TEST_F(PostgresClusterTest, ItsSessionsEndATransactionLeftIdle) {
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c);
  Result<std::string> shown = c->setting("idle_in_transaction_session_timeout");
  ASSERT_TRUE(shown.is_ok()) << shown.message();
  EXPECT_EQ(*shown, "10s");
}

// What the limit does: a session that stays idle inside a transaction holding a row lock
// (as a node that died mid-batch would) is ended by the server once the limit has run, and
// the lock goes with it, so another session waiting for the row gets it. Without the limit
// the waiter times out after 20 s.
TEST_F(PostgresClusterTest, ASessionLeftIdleInATransaction_IsEnded_AndItsRowLockFreed) {
  ASSERT_EQ(postgres_exec(url_, "CREATE TABLE held (k int PRIMARY KEY); INSERT INTO held VALUES (1)"), "");
  PGconn* stuck = PQconnectdb(url_.c_str());
  ASSERT_EQ(PQstatus(stuck), CONNECTION_OK);
  ASSERT_TRUE(postgres_rows::limit_idle_transactions(stuck, 300));
  PGresult* held = PQexec(stuck, "BEGIN; SELECT k FROM held FOR UPDATE");
  ASSERT_EQ(PQresultStatus(held), PGRES_TUPLES_OK);
  PQclear(held);
  // `stuck` now sits idle in its transaction; the waiter blocks on its row until it ends.
  EXPECT_EQ(postgres_exec(url_, "SET lock_timeout = '20s'; SELECT k FROM held FOR UPDATE"), "")
      << "the row lock of the idle session was never freed";
  PGresult* after = PQexec(stuck, "SELECT 1");
  EXPECT_NE(PQresultStatus(after), PGRES_TUPLES_OK) << "the idle session was not ended";
  PQclear(after);
  PQfinish(stuck);
}

// A cluster session's statements are cancelled by the server after
// PostgresCluster::kStatementTimeoutMs, unless the URL (or the role, or the database) sets a
// limit of its own.
TEST_F(PostgresClusterTest, ItsSessionsLimitAStatement_UnlessTheUrlSetsALimitOfItsOwn) {
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c);
  Result<std::string> shown = c->setting("statement_timeout");
  ASSERT_TRUE(shown.is_ok()) << shown.message();
  EXPECT_EQ(*shown, "10s");
  Result<std::unique_ptr<PostgresCluster>> own = PostgresCluster::connect(url_ + "%20-cstatement_timeout%3D1500");
  ASSERT_TRUE(own.is_ok()) << own.message();
  shown = (*own)->setting("statement_timeout");
  ASSERT_TRUE(shown.is_ok()) << shown.message();
  EXPECT_EQ(*shown, "1500ms") << "the URL's limit stands";
}

}  // namespace
}  // namespace flowrt
