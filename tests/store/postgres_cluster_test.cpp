// What several nodes on one PostgreSQL store share (store/postgres_cluster.h), against a
// real server: only one of two nodes trying at once takes the lead, and each epoch is
// taken once; a lease that ran out lets another node take over; a leader's store writes
// are fenced by its epoch (a stale leader's batch is refused whole, and so is every later
// one), and record the operations they applied in the same transaction; the inbox numbers
// appends from many connections in the order they commit, so a reader never sees a gap
// that fills later; an append whose connection was lost is read back, committed or not,
// once its server backend has ended, and its sessions end a transaction left idle and
// cancel a statement held up past their limit.
// Each test has a schema of its own.
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

namespace flowrt {
namespace {

using namespace flowrt::test_support;

class PostgresClusterTest : public ::testing::Test {
 protected:
  void SetUp() override {
    url_ = fresh_postgres_schema(::testing::UnitTest::GetInstance()->current_test_info()->name());
    ASSERT_FALSE(url_.empty());
  }
  std::unique_ptr<PostgresCluster> link() {
    Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
    EXPECT_TRUE(c.is_ok()) << (c ? "" : c.message());
    return c ? std::move(c).value() : nullptr;
  }
  int64_t join(PostgresCluster& c, const std::string& name, int lease_ms = 60000) {
    Result<int64_t> n = c.join(name, "127.0.0.1:1", lease_ms);
    EXPECT_TRUE(n.is_ok()) << (n ? "" : n.message());
    return n ? *n : 0;
  }
  // Ends `incarnation`'s lease now, as if it had stopped sending heartbeats long ago.
  void expire(int64_t incarnation) {
    ASSERT_EQ(postgres_exec(url_, "UPDATE cluster_nodes SET lease_until = clock_timestamp() - interval '1 second' "
                                  "WHERE incarnation = " + std::to_string(incarnation)),
              "");
  }
  std::string sql_value(const std::string& sql) const { return postgres_value(url_, sql); }
  // Nodes a and b joined, a leading, with a store opened on its epoch (the leader's writer).
  struct ALeads {
    std::unique_ptr<PostgresCluster> a, b;
    int64_t ia = 0, ib = 0, epoch = 0;
    std::unique_ptr<PostgresStore> store;
  };
  ALeads a_leads() {
    ALeads l;
    l.a = link();
    l.b = link();
    EXPECT_TRUE(l.a && l.b);
    if (!l.a || !l.b) return l;
    l.ia = join(*l.a, "a");
    l.ib = join(*l.b, "b");
    Result<std::optional<ClusterLead>> lead = l.a->try_lead(l.ia);
    EXPECT_TRUE(lead.is_ok() && lead->has_value());
    if (!lead || !*lead) return l;
    l.epoch = (*lead)->epoch;
    Result<std::unique_ptr<PostgresStore>> store = PostgresStore::open(url_, SyncMode::kNormal, false, l.epoch);
    EXPECT_TRUE(store.is_ok()) << store.message();
    if (store) l.store = std::move(store).value();
    return l;
  }
  // An answer was recorded (not failed, not fenced). Epoch 0 is the lead row's until a node leads.
  static bool recorded(const Result<bool>& r) { return r.is_ok() && *r; }
  static StoreBatch batch_of_record(int n, uint64_t applied_op = 0) {
    StoreBatch b;
    b.changes.push_back(RecordPut{"t", json(R"({"sys_id":"r)" + std::to_string(n) + R"("})"), static_cast<uint64_t>(n)});
    b.counters.commit_seq = static_cast<uint64_t>(n);
    b.applied_op = applied_op;
    return b;
  }

  std::string url_;
};

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
