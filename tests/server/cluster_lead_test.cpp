// Cluster nodes in this process on a real PostgreSQL server (tests/server/cluster_fixture.h):
// the lead. A leader that finds another in the lead row gives up, and so does one whose
// lease renewal is answered after its lease ran out, and a node whose store is cut while
// it loads the state to lead; a stale leader's answers are not recorded; a stale leader's
// lock holder's write is refused, and the next leader resumes the holder; a context parked
// across three changes of leader ends once; a leader stopped cleanly keeps its lease
// through its drain, and records the answers of what it applied. Waits are on the cluster's own signals (the
// lost-lead callback, an answer's notification), bounded; without the give-up, the loading
// node's open would wait without end (the test's timeout ends it).
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <memory>
#include <atomic>
#include <string>
#include <thread>
#include <vector>

#include "runtime/engine_core.h"
#include "runtime/journal.h"
#include "runtime/perturb.h"
#include "server/cluster_node.h"
#include "store/postgres_cluster.h"
#include "tests/server/cluster_fixture.h"

namespace flowrt::testing_http {
namespace {

using ::testing::HasSubstr;
using namespace flowrt::test_support;

TEST_F(ClusterPostgresTest, ALeaderThatFindsAnotherInTheLeadRow_GivesUp) {
  server::ClusterNode& a = join("a", 900);
  server::ClusterNode& b = join("b", 900);
  ASSERT_TRUE(a.leads());
  // b takes the lead as it would once a's lease had run out (a stalled meanwhile).
  ASSERT_EQ(postgres_exec(url_, "UPDATE cluster_lead SET incarnation = " + std::to_string(b.incarnation()) +
                                    ", epoch = epoch + 1"),
            "");
  std::future<std::string> why = lost_lead_of("a");
  ASSERT_EQ(why.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "a noticed within a few periods";
  EXPECT_THAT(why.get(), HasSubstr("took the lead"));
}

// A leader whose renewal is answered only after its lease ran out (the node, or its link
// to the database, stalled) gives the lead up even when no other node took it: a renewal
// counts from when it was asked for, and the heartbeat and the control thread both look
// at the lease before they go on. Here the database holds the cluster's tables for two
// leases, so a's renewal and its read of the lead row both wait, and the renewal is
// answered late. (The seeded kill run found it, seed 42: a leader resumed from SIGSTOP
// renewed its lease before it looked, and led on.)
TEST_F(ClusterPostgresTest, ALeaderWhoseRenewalIsAnsweredAfterItsLeaseRanOut_GivesTheLeadUp_WithNoOtherNode) {
  server::ClusterNode& a = join("a", 900);
  ASSERT_TRUE(a.leads());
  std::future<std::string> why = lost_lead_of("a");
  EXPECT_EQ(postgres_exec(url_, "BEGIN; LOCK TABLE cluster_nodes, cluster_lead IN ACCESS EXCLUSIVE MODE; "
                                "SELECT pg_sleep(1.8); COMMIT"),
            "");
  ASSERT_EQ(why.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "a led on";
  EXPECT_THAT(why.get(), HasSubstr("its lease could not be renewed for 900 ms"));
}

// A leader whose lead was taken while it ran (as after it stalled past its lease) still
// applies inbox entries, but its answers are fenced: none is recorded (the next leader
// answers the entry), and it gives the lead up. The heartbeat, which also finds the lead
// row changed, may say so first (every lease/3, here 10 s): either way nothing is recorded.
TEST_F(ClusterPostgresTest, AStaleLeadersAnswerToAnInboxEntry_IsNotRecorded_AndItGivesTheLeadUp) {
  server::ClusterNode& a = join("a", 30000);
  ASSERT_TRUE(a.leads());
  std::future<std::string> why = lost_lead_of("a");
  ASSERT_EQ(postgres_exec(url_, "UPDATE cluster_lead SET epoch = epoch + 1"), "");
  std::unique_ptr<PostgresCluster> c = link();
  const int64_t client = *c->join("client", "", 60000);
  Result<std::vector<InboxAppended>> appended =
      c->append(client, {InboxRequest{"GET", "/api/tables", "t", "viewer", true, "", "", ""}}, "test.1");
  ASSERT_TRUE(appended.is_ok()) << appended.message();
  const uint64_t seq = entry_numbers(*appended)[0];
  ASSERT_EQ(why.wait_for(std::chrono::seconds(20)), std::future_status::ready) << "a gave the lead up";
  EXPECT_THAT(why.get(), ::testing::AnyOf(HasSubstr("answers to the inbox were fenced"), HasSubstr("took the lead")));
  // Unfenced, the read's answer is recorded within milliseconds of its append.
  for (int i = 0; i < 10; ++i) {
    Result<std::optional<InboxStatus>> e = c->entry(seq);
    ASSERT_TRUE(e.is_ok() && e->has_value());
    ASSERT_FALSE((*e)->reply.has_value()) << "a stale leader's answer was recorded: " << (*e)->reply->body;
    (void)c->wait(100);
  }
}

// Holds the lock "desk" for four seconds, then writes while holding it.
constexpr const char* kGuarded = R"({"id": "guarded", "trigger": {"type": "api"},
  "actions": [{"id": "take", "action": "lock", "inputs": {"key": "desk", "max_attempts": 3600, "delay": "1s"}},
              {"action": "wait", "inputs": {"duration": "4s"}},
              {"action": "create_record", "inputs": {"table": "entered", "while_holding": "desk",
               "values": {"token": "{{steps.take.token}}"}}},
              {"action": "unlock", "inputs": {"key": "desk"}}]})";

// A stale holder: a leader whose lead was taken while it ran (as after it stalled past its
// lease) still runs a context holding the lock "desk". When its wait ends, the context
// writes while holding the lock, in the stale leader's memory; the write is refused by
// the fence (every store batch carries the leader's epoch), so it is not in the database.
// The next leader resumes the context from its last durable step, still holding the lock
// with the same token, and the guarded write lands once. (A write from outside to the
// stale leader is not acknowledged either: its wait for durability ends with an error.)
// Real clock: the takeover must come within the context's four-second wait.
TEST_F(ClusterPostgresTest, AStaleHoldersWriteWhileHoldingALock_IsRefused_TheNextLeaderResumesTheHolder) {
  std::ofstream(dir_ / "flows" / "guarded.json") << kGuarded;
  server::ClusterNode& a = join("a", 900);
  ASSERT_TRUE(a.leads());
  HttpClient to_a(a.port());
  HttpReply call = to_a.post("/api/flows/guarded/call", "{}");
  ASSERT_EQ(call.status / 100, 2) << call.body;
  const std::string context(call.json()["context_id"].as_string());
  Engine& stale = a.service()->engine();
  stale.settle(0);
  Journal& journal = *stale.core().journal;
  ASSERT_TRUE(journal.wait_durable(journal.appended()).is_ok()) << "the holder waits, durably";
  HttpReply held = to_a.get("/api/locks");
  ASSERT_EQ(held.json()["locks"].at(0)["holders"].at(0)["context"], Value(context)) << held.body;
  const Value token = held.json()["locks"].at(0)["holders"].at(0)["token"];

  // Another incarnation takes the lead row, as it would once a's lease had run out.
  std::unique_ptr<PostgresCluster> c = link();
  const int64_t ghost = *c->join("ghost", "", 60000);
  ASSERT_EQ(postgres_exec(url_, "UPDATE cluster_lead SET incarnation = " + std::to_string(ghost) + ", epoch = epoch + 1"),
            "");
  // a, stale, goes on: the holder's wait ends and it writes while holding the lock.
  stale.settle(10000);
  EXPECT_EQ(to_a.get("/api/tables/entered/records").json()["records"].size(), 1u)
      << "the stale holder wrote, in its own memory";
  HttpReply refused = to_a.post("/api/tables/note/records", R"({"n": 1})");
  EXPECT_NE(refused.status / 100, 2) << "a stale leader acknowledged a write: " << refused.body;
  EXPECT_EQ(lost_lead_of("a").wait_for(std::chrono::seconds(20)), std::future_status::ready);

  // The ghost's lease runs out; b takes the lead from what is in the database.
  ASSERT_EQ(postgres_exec(url_, "UPDATE cluster_nodes SET lease_until = clock_timestamp() - interval '1 second' "
                                "WHERE incarnation = " + std::to_string(ghost)),
            "");
  server::ClusterNode& b = join("b", 900);
  ASSERT_TRUE(b.leads());
  HttpClient to_b(b.port());
  // Its wait is over: the resumed holder writes at once (b may have done so already).
  b.service()->engine().settle(10000);
  EXPECT_EQ(to_b.get("/api/tables/note/records").json()["records"].size(), 0u) << "the refused write is not there";
  const Value entered = to_b.get("/api/tables/entered/records").json()["records"];
  ASSERT_EQ(entered.size(), 1u) << "the guarded write, once: the stale one is not there";
  EXPECT_EQ(entered.at(0)["token"], token) << "written by the same holding, with the same token";
  EXPECT_EQ(to_b.get("/api/contexts/" + context).json()["status"], Value("completed"));
  EXPECT_EQ(to_b.get("/api/locks").json()["locks"].size(), 0u) << "the lock is free";
}

// A context parked across many leaders: it waits longer than three changes of leader
// take. Each leader leaves (a clean stop: its lease ends at once and the node that joined
// just before takes the lead) while the context waits; every new leader loads it from its
// last durable step with the time it has left, and it ends once, writing its record once,
// on whichever node leads when its time comes.
constexpr const char* kParked = R"({"id": "parked", "trigger": {"type": "api"},
  "actions": [{"action": "wait", "inputs": {"duration": "12s"}},
              {"action": "create_record", "inputs": {"table": "woke", "values": {"n": 1}}}]})";

TEST_F(ClusterPostgresTest, AContextParkedAcrossThreeChangesOfLeader_EndsOnce) {
  std::ofstream(dir_ / "flows" / "parked.json") << kParked;
  server::ClusterNode* leader = &join("a", 900);
  ASSERT_TRUE(leader->leads());
  HttpReply call = HttpClient(leader->port()).post("/api/flows/parked/call", "{}");
  ASSERT_EQ(call.status / 100, 2) << call.body;
  const std::string context(call.json()["context_id"].as_string());
  leader->service()->engine().settle(0);
  int changes = 0;
  for (const char* name : {"b", "c", "d"}) {
    server::ClusterNode& next = join(name, 900);
    ASSERT_FALSE(next.leads());
    HttpReply waiting = HttpClient(leader->port()).get("/api/contexts/" + context);
    if (waiting.json()["status"] != Value("waiting")) break;  // the machine was slow: fewer changes
    leader->stop();
    ASSERT_TRUE(WaitFor([&] { return next.leads(); })) << name << " takes the lead";
    leader = &next;
    ++changes;
  }
  EXPECT_GE(changes, 2) << "the context waited through at least two changes of leader (12 s; about 1 s each)";
  leader->service()->engine().settle(30000);  // until its wait has ended and it has run
  HttpClient to_leader(leader->port());
  HttpReply one = to_leader.get("/api/contexts/" + context);
  ASSERT_EQ(one.status, 200) << one.body;
  EXPECT_EQ(one.json()["status"], Value("completed")) << one.body;
  EXPECT_EQ(one.json()["steps"].size(), 2u) << "the wait and the insert, each once: " << one.body;
  EXPECT_EQ(to_leader.get("/api/tables/woke/records").json()["records"].size(), 1u) << "its record, once";
}

// Cuts every connection named `g_cut_name` at the first store write once armed, and waits
// until the server has ended them: the store of the node using that name never writes
// again (a leader's store does not connect again). Set before arming; the hook runs on a
// journal thread.
std::string g_cut_name;
std::atomic<bool> g_cut_armed{false};
std::atomic<int> g_cuts{0};
void cut_at_first_write(PerturbPoint p) {
  if (p != PerturbPoint::kBeforeStoreWrite || !g_cut_armed.exchange(false)) return;
  const std::string server = postgres_server_url();
  const std::string named = "application_name = '" + g_cut_name + "'";
  const std::string pids = postgres_value(server, "SELECT string_agg(pid::text, ',') FROM pg_stat_activity WHERE " + named);
  if (pids.empty()) return;
  (void)postgres_exec(server, "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid IN (" + pids + ")");
  for (int i = 0; i < 1000; ++i) {
    if (postgres_value(server, "SELECT count(*) FROM pg_stat_activity WHERE pid IN (" + pids + ")") == "0") break;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));  // the backends exit (bounded: 10 s)
  }
  g_cuts.fetch_add(1);
}

// Held at kRecoveryBeforeLocks once armed: the node loading the state to lead waits there
// until the test lets it go on.
std::atomic<bool> g_hold_armed{false};
std::promise<void>* g_held = nullptr;
std::shared_future<void> g_go_on;

void hold_in_recovery(PerturbPoint p) {
  if (p != PerturbPoint::kRecoveryBeforeLocks || !g_hold_armed.exchange(false)) return;
  g_held->set_value();
  g_go_on.wait();
}

// A node taking the lead answers on its port all the while it loads the state: its
// follower's routes go on (its port is handed to the leader's service, not closed and
// bound again), a request sent to it meanwhile goes into the inbox and is applied and
// answered once it leads, and its event stream, which it would pass on from itself, is a
// 503 to try again.
TEST_F(ClusterPostgresTest, ANodeTakingTheLead_AnswersOnItsPortWhileItLoads_AndAppliesWhatCameMeanwhile) {
  server::ClusterNode& a = join("a", 900);
  server::ClusterNode& b = join("b", 900);
  ASSERT_TRUE(a.leads());
  ASSERT_FALSE(b.leads());
  std::promise<void> held, go_on;
  g_held = &held;
  g_go_on = go_on.get_future().share();
  g_hold_armed = true;
  set_perturb_hook(&hold_in_recovery);
  a.stop();  // it leaves: b takes the lead at its next look and loads the state
  ASSERT_EQ(held.get_future().wait_for(std::chrono::seconds(20)), std::future_status::ready) << "b did not load";

  HttpClient to_b(b.port());
  HttpReply ready = to_b.get("/readyz");
  EXPECT_EQ(ready.status, 200);
  EXPECT_EQ(ready.json()["role"], Value("follower")) << "its follower's routes answer while it loads";
  HttpReply stream = to_b.get("/api/stream");
  EXPECT_EQ(stream.status, 503) << stream.body;
  EXPECT_EQ(stream.header("Retry-After"), "1");
  std::future<HttpReply> inserted = std::async(std::launch::async, [port = b.port()] {
    return HttpClient(port).post("/api/tables/incident/records", R"({"number": "INC9"})");
  });
  const auto appended_by = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (sql_value("SELECT count(*) FROM cluster_inbox") != "1" && std::chrono::steady_clock::now() < appended_by) {
    std::this_thread::yield();
  }
  EXPECT_EQ(sql_value("SELECT count(*) FROM cluster_inbox WHERE answered IS NULL"), "1") << "in the inbox, waiting";

  go_on.set_value();
  HttpReply r = inserted.get();
  set_perturb_hook(nullptr);
  ASSERT_EQ(r.status, 201) << r.body;
  EXPECT_NE(r.header("X-Flowrt-Operation"), "") << "forwarded while b loaded, applied once it led";
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(20);
  while (!b.leads() && std::chrono::steady_clock::now() < deadline) std::this_thread::yield();
  ASSERT_TRUE(b.leads());
  HttpClient after(b.port());
  EXPECT_EQ(after.get("/api/cluster").json()["node"]["role"], Value("leader"));
  EXPECT_EQ(after.get("/api/tables/incident/records/" + std::string(r.json()["sys_id"].as_string())).status, 200);
}

// The store's connection is cut while a node loads the state to lead (its load waits for
// the write of the definitions it loads): it gives the lead up once its writes have failed
// for a lease, rather than keep the lead and wait without end; the next node leads.
TEST_F(ClusterPostgresTest, ANodeWhoseStoreIsCutWhileItLoadsTheStateToLead_GivesTheLeadUp) {
  {
    server::ClusterNode& a = join("a", 900);
    ASSERT_TRUE(a.leads());
    HttpClient to_a(a.port());
    ASSERT_EQ(to_a.post("/api/tables/incident/records", R"({"number": "INC1"})").status, 201);
    a.stop();  // it leaves: the next node to join leads from the start, loading the state in open
  }
  g_cut_name = "flowrt_cut_" + std::to_string(::getpid());
  std::future<std::string> why = lost_lead_of("b");
  g_cuts = 0;
  g_cut_armed = true;
  set_perturb_hook(&cut_at_first_write);
  auto b = open("b", 900, url_ + "&application_name=" + g_cut_name);
  set_perturb_hook(nullptr);
  EXPECT_EQ(g_cuts.load(), 1) << "b's store was cut while it loaded";
  ASSERT_FALSE(b) << "b cannot have loaded the state";
  EXPECT_THAT(b.error().describe(), HasSubstr("gave its store up"));
  ASSERT_EQ(why.wait_for(std::chrono::seconds(20)), std::future_status::ready);
  // The store gives up a lease after its first failed write. The heartbeat's connection,
  // which carries the same name, is cut too; on a loaded machine its new connection may
  // come later than that, and then its lease runs out first: either way b gives the lead up.
  EXPECT_THAT(why.get(), ::testing::AnyOf(HasSubstr("its store could not be written"),
                                          HasSubstr("its lease could not be renewed for 900 ms")));

  // Not wedged: b left the lead, and the next node leads with the state a left.
  server::ClusterNode& c = join("c", 900);
  ASSERT_TRUE(c.leads());
  HttpClient to_c(c.port());
  HttpReply found = to_c.get("/api/tables/incident/records");
  ASSERT_EQ(found.status, 200);
  EXPECT_THAT(found.body, HasSubstr("INC1"));
}

// The first store write once armed is held until the test lets it go (the hook runs on
// the journal thread of whichever engine writes first; later writes pass).
struct OneHeldWrite {
  static inline std::mutex mu;
  static inline std::condition_variable cv;
  static inline bool armed = false;    // guarded by mu
  static inline bool held = false;     // guarded by mu: a write waits in the hook
  static inline bool holding = false;  // guarded by mu
  static void hook(PerturbPoint p) {
    if (p != PerturbPoint::kBeforeStoreWrite) return;
    std::unique_lock lock(mu);
    if (!armed) return;
    armed = false;
    held = true;
    cv.notify_all();
    cv.wait(lock, [] { return !holding; });
  }
  OneHeldWrite() {
    std::lock_guard lock(mu);
    armed = holding = true;
    held = false;
    set_perturb_hook(&hook);
  }
  bool wait_held() {
    std::unique_lock lock(mu);
    return cv.wait_for(lock, std::chrono::seconds(20), [] { return held; });
  }
  void let_go() {
    {
      std::lock_guard lock(mu);
      holding = false;
    }
    cv.notify_all();
  }
  ~OneHeldWrite() {
    let_go();
    set_perturb_hook(nullptr);
  }
};

// A leader stopped cleanly (SIGTERM) renews its lease until its service has drained and
// stopped, however long that takes: no other node takes the lead while its engine still
// runs, and its last writes are not fenced. Here its drain waits for a store write held
// for three leases. Until 2026-12-06 the heartbeat stopped first: the follower took the
// lead a lease into the drain, and the leader's held write was then fenced.
TEST_F(ClusterPostgresTest, ALeaderThatDrainsLongerThanItsLease_KeepsTheLead_UntilItLeft) {
  // Leases of 1.5 s: a renewal every 0.5 s keeps a's even on a loaded machine.
  server::ClusterNode& a = join("a", 1500);
  server::ClusterNode& b = join("b", 1500);
  ASSERT_TRUE(a.leads());
  const std::string a_incarnation = std::to_string(a.incarnation());
  std::future<std::string> a_lost = lost_lead_of("a");
  std::future<HttpReply> inserted;
  std::future<void> stopped;
  bool b_took_the_lead_during_the_drain = false;
  {
    OneHeldWrite writer;
    inserted = std::async(std::launch::async, [port = a.port()] {
      return HttpClient(port).post("/api/tables/incident/records", R"({"number": "INC1"})");
    });
    ASSERT_TRUE(writer.wait_held()) << "the insert's store write";
    stopped = std::async(std::launch::async, [&a] { a.stop(); });
    // Three leases: without renewals b's control thread takes the lead after about one.
    b_took_the_lead_during_the_drain = WaitFor(
        [&] {
          const std::string leader = sql_value("SELECT incarnation FROM cluster_lead");
          return !leader.empty() && leader != a_incarnation;
        },
        std::chrono::milliseconds(4500));
    EXPECT_EQ(stopped.wait_for(std::chrono::seconds(0)), std::future_status::timeout)
        << "a's drain waits for its held write";
  }
  stopped.get();
  EXPECT_FALSE(b_took_the_lead_during_the_drain) << "the lead row changed while a drained";
  EXPECT_EQ(a_lost.wait_for(std::chrono::seconds(0)), std::future_status::timeout) << a_lost.get();
  HttpReply insert = inserted.get();
  EXPECT_EQ(insert.status, 201) << "written once let go, within the drain: " << insert.body;
  ASSERT_TRUE(WaitFor([&] { return b.leads(); })) << "a left: b takes the lead";
  HttpReply found = HttpClient(b.port()).get("/api/tables/incident/records");
  ASSERT_EQ(found.status, 200);
  EXPECT_THAT(found.body, HasSubstr("INC1"));
}

// A leader stopped cleanly records the answers of the entries it applied before it
// leaves: a call waiting (?wait=) for its context is answered 202 with the context's
// status, as a draining server answers it, not "applied by the node that led before" by
// the next leader (until 2026-12-06 the stop dropped answers not recorded yet).
TEST_F(ClusterPostgresTest, ALeaderStoppedCleanly_AnswersTheEntriesItApplied_AWaitingCallWith202) {
  std::ofstream(dir_ / "flows" / "parked.json") << kParked;
  server::ClusterNode& a = join("a");
  ASSERT_TRUE(a.leads());
  std::unique_ptr<PostgresCluster> c = link();
  ASSERT_TRUE(c->listen("flowrt_answers").is_ok());
  const int64_t client = *c->join("client", "", 60000);
  const InboxRequest call{"POST", "/api/flows/parked/call?wait=60s", "t", "operator", true, "application/json",
                          "{}", ""};
  const uint64_t seq = (*c->append(client, {call}, "test.1"))[0].seq;
  ASSERT_TRUE(WaitFor([&] { return sql_value("SELECT applied_op >= " + std::to_string(seq) + " FROM cluster_lead") == "t"; }))
      << "the call's context is durable";
  EXPECT_EQ(sql_value("SELECT count(*) FROM cluster_inbox WHERE answered IS NULL"), "1") << "its wait goes on";
  nodes_.front()->stop();
  Result<std::optional<InboxStatus>> e = c->entry(seq);
  ASSERT_TRUE(e.is_ok());
  ASSERT_TRUE(e->has_value());
  ASSERT_TRUE((*e)->reply.has_value()) << "answered by the stop";
  EXPECT_EQ((*e)->reply->status, 202) << (*e)->reply->body;
  EXPECT_THAT((*e)->reply->body, HasSubstr("waiting"));
}

}  // namespace
}  // namespace flowrt::testing_http
