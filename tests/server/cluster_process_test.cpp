// `flowrt serve --node` as processes: a cluster of nodes on one PostgreSQL schema
// (server/cluster_node.h), under seeded faults.
//
// The project's first flow runs on each insert into `job`: it takes the lock "counter",
// reads the counter record, waits a moment, writes an `entered` record holding the
// counter's value and its lock token, moves the counter on and unlocks. So:
//  - every job record has exactly one context and one `entered` record (a start lost or
//    made twice shows);
//  - the `entered` values are 0, 1, 2, ... each once, and the counter ends at their count:
//    two contexts holding the lock at once would both read one value and write it twice.
// Its second flow waits 1.5 s (longer than a lease) and writes a `later` record: every job
// has exactly one, written by one completed context, though most waits span a fault.
// A third flow runs once, on the `gate` record made before the faults, and waits for the
// gate to be opened, which happens after the last fault: one context waiting through every
// kill, stop, cut and restart of the run, resumed by each new leader, ending once.
// A fourth, on_call, is an API flow that writes a `called` record naming its context: each
// call acknowledged ran once, and was told that context, also when the leader that applied
// it stopped before answering and the next one answered.
//
// Clients insert jobs, each with a key of its own, through any node that is up, and note
// what each insert was answered: acknowledged (2xx), accepted (an "operation" number: it
// will be applied, GET /api/cluster/operations/N says how it went) or neither (no answer,
// or "not accepted"). Half the clients send each insert once, without an
// Idempotency-Key, so the key of an insert applied twice shows; the others send it with
// its key and send it again, to any node, until the answer is definite: each must end
// definite, and none may be applied twice.
// The cluster and its clients: cluster_driver.h; the final checks: cluster_checks.h.

#include <gtest/gtest.h>

#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <filesystem>
#include <map>
#include <sstream>
#include <thread>
#include <fstream>
#include <random>
#include <string>
#include <vector>

#include "plans/value.h"
#include "tests/server/cluster_checks.h"
#include "tests/server/cluster_driver.h"
#include "tests/support/postgres_support.h"

namespace flowrt::cluster_process_test {
namespace {

// The statement timeout of the nodes' connections in the database-faults test.
constexpr int kStatementTimeoutMs = 1500;

// The flow. The wait inside the lock leaves time for a second holder to read the same
// counter value, were there one; the lock's attempts outlast any test.
constexpr const char* kOnJob = R"({"id": "on_job", "trigger": {"type": "record", "table": "job", "when": "created"},
 "actions": [
  {"id": "take", "action": "lock", "inputs": {"key": "counter", "max_attempts": 100000, "delay": "100ms"}},
  {"id": "c", "action": "look_up_record",
   "inputs": {"table": "counter", "condition": {"field": "name", "op": "eq", "value": "main"}}},
  {"action": "wait", "inputs": {"duration": "15ms"}},
  {"action": "create_record", "inputs": {"table": "entered", "while_holding": "counter",
   "values": {"key": "{{trigger.record.key}}", "n": "{{steps.c.record.n}}", "token": "{{steps.take.token}}",
              "context": "{{context.id}}"}}},
  {"action": "update_record", "inputs": {"table": "counter", "sys_id": "{{steps.c.record.sys_id}}",
   "while_holding": "counter", "values": {"n": "{{steps.c.record.n | add: 1}}"}}},
  {"action": "unlock", "inputs": {"key": "counter"}}
 ]})";

// The second flow: each job also starts a context that waits longer than a lease (kLeaseMs)
// and then writes a `later` record, so that many contexts are waiting when a leader is
// killed or stopped and must be resumed by the next one, and finish once.
constexpr const char* kOnJobLater = R"({"id": "on_job_later", "trigger": {"type": "record", "table": "job", "when": "created"},
 "actions": [
  {"action": "wait", "inputs": {"duration": "1500ms"}},
  {"action": "create_record", "inputs": {"table": "later",
   "values": {"key": "{{trigger.record.key}}", "context": "{{context.id}}"}}}
 ]})";

// The third flow: one context that waits through the whole run (see the top).
constexpr const char* kOnGate = R"({"id": "on_gate", "trigger": {"type": "record", "table": "gate", "when": "created"},
 "actions": [
  {"action": "wait_for_condition", "inputs": {"table": "gate", "sys_id": "{{trigger.sys_id}}",
   "condition": {"field": "open", "op": "eq", "value": true}, "timeout": "1h"}},
  {"action": "create_record", "inputs": {"table": "through", "values": {"context": "{{context.id}}"}}}
 ]})";

// The fourth flow: called by the keyed clients (see the top).
constexpr const char* kOnCall = R"({"id": "on_call", "trigger": {"type": "api"},
 "inputs": [{"name": "key", "type": "string", "required": true}],
 "actions": [
  {"action": "create_record", "inputs": {"table": "called", "values": {"key": "{{inputs.key}}", "context": "{{context.id}}"}}}
 ]})";

fs::path write_project(const std::string& test) {
  const fs::path dir = fs::temp_directory_path() / ("flowrt-cluster-" + std::to_string(::getpid()) + "-" + test);
  fs::remove_all(dir);
  fs::create_directories(dir / "flows");
  std::ofstream(dir / "flows" / "on_job.json") << kOnJob;
  std::ofstream(dir / "flows" / "on_job_later.json") << kOnJobLater;
  std::ofstream(dir / "flows" / "on_gate.json") << kOnGate;
  std::ofstream(dir / "flows" / "on_call.json") << kOnCall;
  return dir;
}


// Drops the schema of a URL of fresh_postgres_schema, without the server's notices.
void drop_schema(const std::string& url) {
  const std::string marker = "search_path%3D";
  const size_t at = url.find(marker);
  if (at == std::string::npos) return;
  const size_t end = url.find('&', at);  // the schema's name ends where the next parameter begins
  const std::string schema = url.substr(at + marker.size(), end == std::string::npos ? end : end - at - marker.size());
  EXPECT_EQ(test_support::postgres_exec(test_support::postgres_server_url(),
                                        "SET client_min_messages = warning; DROP SCHEMA IF EXISTS " + schema + " CASCADE"),
            "");
}

// How many of `n` faults of a kind a run makes: all in the release suite, a share
// (n / FLOWRT_CLUSTER_FAULT_DIVISOR, at least one) in a sanitizer build, whose suite has
// a budget of its own; the faults' real-time waits, not the checks, make a run long.
int share(int n) { return std::max(1, n / FLOWRT_CLUSTER_FAULT_DIVISOR); }

uint32_t seed_of(uint32_t fallback) {
  if (const char* s = std::getenv("FLOWRT_CLUSTER_SEED")) return static_cast<uint32_t>(std::strtoul(s, nullptr, 10));
  return fallback;
}

// ---- a run of seeded faults against three nodes

enum class Fault {
  kKill,          // kill -9 of a node (mostly the leader), started again after a moment
  kStop,          // SIGSTOP of the leader for longer than its lease: once resumed it exits 3
  kCut,           // every connection of the cluster's nodes ended by the database
  kRestart,       // the database restarted (sessions end cleanly)
  kCrashRestart,  // the database restarted as after a crash (it recovers from its WAL)
  kTimeouts,      // the lead and inbox tables locked past the nodes' statement timeout
};

const char* name_of(Fault f) {
  switch (f) {
    case Fault::kKill: return "kill -9";
    case Fault::kStop: return "SIGSTOP";
    case Fault::kCut: return "connections cut";
    case Fault::kRestart: return "database restart";
    case Fault::kCrashRestart: return "database crash and restart";
    case Fault::kTimeouts: return "statement timeouts";
  }
  return "?";
}

struct FaultRun {
  std::string name;        // of the project's directory
  uint32_t seed = 0;
  std::vector<Fault> faults;  // shuffled by the seed
  std::string server;      // the server's URL: cuts and locks go through it
  std::string data;        // the nodes' --data, before this run's application_name
  test_support::PrivatePostgresServer* restartable = nullptr;  // for the restarts
  int min_kills = 0;
};

// Three nodes and three clients inserting through any node that is up, the faults in the
// seeded order, then the checks: nothing acknowledged lost, nothing applied twice, each
// insert's flow started once, its lock never held twice, nothing left held or waiting.
void run_faults(FaultRun run) {
  const uint32_t seed = run.seed;
  SCOPED_TRACE("seed " + std::to_string(seed) + " (FLOWRT_CLUSTER_SEED=N runs another)");
  std::cout << "[ cluster  ] seed " << seed << std::endl;
  ::testing::Test::RecordProperty("seed", std::to_string(seed));
  const Clock::time_point began = Clock::now();
  std::mt19937 rng(seed);
  auto between = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1)); };

  ClusterSetup setup;
  setup.lease_ms = kLeaseMs;
  setup.forward_timeout_ms = kForwardTimeoutMs;
  setup.dir = write_project(run.name);
  ASSERT_FALSE(run.data.empty());
  // The nodes' connections under a name of this run's own (the URL's wins over flowrt's
  // "flowrt"): the cuts below end those and no other test's on the shared server.
  const std::string app = "flowrt_cluster_test_" + std::to_string(::getpid());
  setup.url = run.data + (run.data.find('?') == std::string::npos ? "?" : "&") + "application_name=" + app;
  Cluster c(setup, {"a", "b", "c"});
  struct TimelineOnFailure {
    Cluster& c;
    ~TimelineOnFailure() {
      if (::testing::Test::HasFailure() || std::getenv("FLOWRT_CLUSTER_VERBOSE")) {
        std::cout << "[ cluster  ] what happened:\n" << c.timeline() << "[ cluster  ] the nodes' logs are in "
                  << c.setup().dir << std::endl;
      }
    }
  } timeline{c};
  for (size_t i = 0; i < 3; ++i) ASSERT_TRUE(c.start(i));
  ASSERT_TRUE(c.node(0).led_at_start) << "the first node leads";
  {
    // The counter, through a follower. With 800 ms leases the lead may move while three
    // nodes start on a loaded machine, and a follower that took the lead answers what it
    // had forwarded "accepted" (503 with its operation): sent with a key, the insert is
    // sent again until its answer is definite, and is applied once.
    Answer counter;
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(30);
    do {
      counter = call(c.node(1).port, "POST", "/api/tables/counter/records", R"({"name": "main", "n": 0})",
                     kClientTimeoutMs, "the-counter");
    } while (counter.status != 201 && Clock::now() < give_up);
    ASSERT_EQ(counter.status, 201) << counter.describe();
  }
  // The gate, and with it the context that waits through the whole run; sent with a key
  // until definite, as the counter is.
  auto until_definite = [&](const char* method, const std::string& target, const std::string& body,
                            const std::string& key, int want) {
    Answer a;
    const Clock::time_point give_up = Clock::now() + std::chrono::seconds(30);
    do {
      a = call(c.node(1).port, method, target, body, kClientTimeoutMs, key);
    } while (a.status != want && Clock::now() < give_up);
    return a;
  };
  {
    const Answer gate = until_definite("POST", "/api/tables/gate/records", R"({"sys_id": "the-gate", "open": false})",
                                       "the-gate", 201);
    ASSERT_EQ(gate.status, 201) << gate.describe();
  }

  std::vector<Fault>& faults = run.faults;
  std::shuffle(faults.begin(), faults.end(), rng);
  std::map<Fault, int> done;
  int leader_kills = 0;
  int64_t slowest_recovery_ms = 0;
  c.start_clients(3, seed, 40, 160);
  for (size_t k = 0; k < faults.size(); ++k) {
    const Fault f = faults[k];
    c.watch(between(800, 1800));
    std::optional<size_t> leader = c.leader();
    const std::string fault = "fault " + std::to_string(k) + ": ";
    if (f == Fault::kKill) {
      size_t target = leader ? *leader : rng() % c.size();
      if (leader && rng() % 4 == 0) target = (*leader + 1 + rng() % (c.size() - 1)) % c.size();  // a follower
      if (leader && target == *leader) ++leader_kills;
      c.note(fault + "kill -9 " + c.node(target).name + (leader && target == *leader ? " (the leader)" : ""));
      c.kill(target);
      pause_ms(between(100, 1500));
      c.watch(0);  // starts it again
    } else if (f == Fault::kStop) {
      ASSERT_TRUE(leader) << fault << "no leader to stop";
      Node& n = c.node(*leader);
      c.note(fault + "SIGSTOP " + n.name + " (the leader)");
      ::kill(n.pid, SIGSTOP);
      n.stopped = true;
      pause_ms(setup.lease_ms * 5 / 2 + between(0, 500));
      c.note("SIGCONT " + n.name);
      ::kill(n.pid, SIGCONT);
      // Another node took the lead meanwhile: the resumed one finds it lost it and exits 3.
      const std::optional<int> s = wait_exit(n, 10000);
      n.stopped = false;
      c.down(*leader);
      c.note("node " + n.name + " exited with " + (s ? std::to_string(*s) : std::string("nothing yet")));
      if (!s) {
        ADD_FAILURE() << "node " << n.name << " resumed after a stop longer than its lease and did not exit: "
                      << tail_of(n.log);
        c.kill(*leader);
      } else {
        EXPECT_EQ(*s, 3) << "node " << n.name << " resumed after a stop longer than its lease: " << tail_of(n.log);
      }
      c.watch(0);  // starts it again
    } else if (f == Fault::kCut) {
      const std::string error = test_support::postgres_exec(
          run.server,
          "SET client_min_messages = error; SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
          "application_name = '" + app + "' AND pid <> pg_backend_pid()");
      EXPECT_EQ(error, "");
      c.note(fault + "every connection of the cluster's nodes cut");
    } else if (f == Fault::kRestart || f == Fault::kCrashRestart) {
      ASSERT_NE(run.restartable, nullptr) << "a restart needs a server of the test's own";
      const std::string mode = f == Fault::kRestart ? "fast" : "immediate";
      c.note(fault + "the database restarts (" + mode + ")");
      EXPECT_TRUE(run.restartable->restart(mode)) << fault << "the database did not restart";
      c.note("the database is up again");
    } else {
      // Statements that touch the lead row or the inbox's head wait for these locks and
      // time out: heartbeats go on (their table is not locked), appends, the leader's
      // fenced batches and takeovers fail until the locks go.
      c.note(fault + "the lead and inbox head tables locked for 4 s (statement timeout " +
             std::to_string(kStatementTimeoutMs) + " ms)");
      std::atomic<bool> released{false};
      std::string error;
      std::thread locker([&] {
        error = test_support::postgres_exec(run.server,
                                            "BEGIN; LOCK TABLE cluster_lead, cluster_inbox_head IN ACCESS EXCLUSIVE "
                                            "MODE; SELECT pg_sleep(4); COMMIT");
        released = true;
      });
      while (!released.load()) c.watch(50);
      locker.join();
      EXPECT_EQ(error, "");
      c.note("the locks are released");
    }
    ++done[f];
    // Nothing wedges: inserts are acknowledged again soon after each fault (a node that
    // exits, as a leader that lost the lead does, is started again meanwhile).
    const int64_t after = c.now_ms();
    while (c.last_ack_ms() <= after && c.now_ms() - after < kRecoveryMs) c.watch(50);
    slowest_recovery_ms = std::max(slowest_recovery_ms, c.now_ms() - after);
    ASSERT_GT(c.last_ack_ms(), after) << "no insert was acknowledged within " << kRecoveryMs << " ms after fault " << k
                                      << " (" << name_of(f) << "): the cluster is wedged";
  }
  c.watch(1000);
  c.stop_clients();
  const int64_t fault_ms = ms_since(began);

  // Settles: one leader, no context left to run, every accepted operation answered.
  std::string last;
  ASSERT_TRUE(c.settled_leader(30000, &last)) << "no single leader that every node agrees on within 30 s: " << last;
  {
    // The gate opens: the context that waited through every fault goes on.
    const Answer opened = until_definite("PATCH", "/api/tables/gate/records/the-gate", R"({"open": true})",
                                         "open-the-gate", 200);
    ASSERT_EQ(opened.status, 200) << opened.describe();
  }
  ASSERT_TRUE(quiet(c, 60000, &last)) << "contexts still queued, running or waiting after 60 s: " << last;
  std::vector<Attempt> attempts = c.attempts();
  const Tally t = check_outcome(c, attempts, 60000);
  // Still settled after the checks (no context was left waiting to resume).
  EXPECT_TRUE(quiet(c, 5000, &last)) << last;
  // The context that waited through the run: one, completed, and one record written.
  if (std::optional<std::vector<Value>> gated = all_contexts(c, "&flow=on_gate")) {
    ASSERT_EQ(gated->size(), 1u) << "the gate's flow started once";
    EXPECT_EQ(gated->front()["status"], Value("completed")) << gated->front().to_json();
  }
  if (std::optional<std::vector<Value>> through = all_records(c, "through")) {
    ASSERT_EQ(through->size(), 1u) << "the waiting context wrote once";
  }

  int64_t refused_ms = 0;
  std::ostringstream summary;
  summary << "seed " << seed << ":";
  for (const auto& [f, n] : done) summary << " " << n << " " << name_of(f) << (f == Fault::kKill ? " (" + std::to_string(leader_kills) + " of the leader)" : "") << ",";
  summary << " other nodes that lost the lead and exited 3: " << c.lost_lead_summary()
          << "; writable again within " << slowest_recovery_ms << " ms of each fault; " << attempts.size()
          << " requests (" << t.calls << " calls, the rest inserts): " << t.acknowledged << " acknowledged, " << t.accepted << " accepted (" << t.accepted_applied
          << " applied), " << t.refused << " refused and " << t.unanswered << " unanswered (" << t.unanswered_kinds()
          << "); " << t.keyed << " sent with an Idempotency-Key, " << t.resent
          << " of them sent again; the longest a node refused connections: " << longest_refusal(attempts, &refused_ms) << "; faults "
          << fault_ms / 1000.0 << " s, all " << ms_since(began) / 1000.0 << " s";
  std::cout << "[ cluster  ] " << summary.str() << std::endl;
  ::testing::Test::RecordProperty("summary", summary.str());
  EXPECT_GE(done[Fault::kKill], run.min_kills);
  // A node that runs listens, but for the moment a follower that takes the lead loads
  // the state.
  EXPECT_LT(refused_ms, 10000) << "a node refused connections for " << refused_ms << " ms: " << summary.str();
  EXPECT_GT(t.acknowledged, 100u) << summary.str();

  // A clean stop of each: followers first, then the leader; each exits 0.
  c.stop_all(c.settled_leader(10000, &last));
  if (!::testing::Test::HasFailure() && !std::getenv("FLOWRT_CLUSTER_VERBOSE")) fs::remove_all(setup.dir);
}

// ---- the tests

TEST(ClusterPostgresProcessTest, ThreeNodes_SeededKillsAndFaults_LoseNothingAndWedgeNothing) {
  FaultRun run;
  run.name = "three";
  run.seed = seed_of(20261202);
  run.faults.assign(share(22), Fault::kKill);
  run.faults.insert(run.faults.end(), share(3), Fault::kStop);
  run.faults.insert(run.faults.end(), share(3), Fault::kCut);
  run.min_kills = share(20);  // at least 20 kills per CI run: the release suite's
  run.server = test_support::postgres_server_url();
  run.data = test_support::fresh_postgres_schema("cluster_three");
  run_faults(run);
  if (!HasFailure() && !std::getenv("FLOWRT_CLUSTER_VERBOSE")) drop_schema(run.data);
}

// The faults between the nodes and the database: on a server of the test's own, restarted
// cleanly and as after a crash, and statements timing out (every node's connections carry
// a statement timeout), with some kills and cuts among them.
TEST(ClusterPostgresProcessTest, ThreeNodes_DatabaseRestartsAndStatementTimeouts_LoseNothingAndWedgeNothing) {
  test_support::PrivatePostgresServer database("cluster-db-faults");
  ASSERT_FALSE(database.url().empty());
  FaultRun run;
  run.name = "db-faults";
  run.seed = seed_of(20261204);
  run.faults.assign(share(3), Fault::kRestart);
  run.faults.insert(run.faults.end(), share(3), Fault::kCrashRestart);
  run.faults.insert(run.faults.end(), share(3), Fault::kTimeouts);
  run.faults.insert(run.faults.end(), share(4), Fault::kKill);
  run.faults.insert(run.faults.end(), share(1), Fault::kCut);
  run.min_kills = share(4);
  run.server = database.url();
  run.restartable = &database;
  run.data = database.url() + "?options=-cstatement_timeout%3D" + std::to_string(kStatementTimeoutMs);
  run_faults(run);
}

// The setup of the tests that start nodes at the same moment, on a fresh schema. No node
// is killed while they start, so the lease only decides when a node starved of the CPU
// counts as dead: the default lease, not the fault tests' short one, keeps their checks
// about nodes starting at once, not about the machine's load.
ClusterSetup start_setup(const fs::path& dir, const std::string& schema) {
  ClusterSetup setup;
  setup.lease_ms = kStartLeaseMs;
  setup.forward_timeout_ms = kForwardTimeoutMs;
  setup.dir = dir;
  setup.url = test_support::fresh_postgres_schema(schema);
  return setup;
}

// Starts nodes `from` to the last of `c` at the same moment (each forked before any is
// waited for); how many of them lead once listening, or nullopt when one did not listen.
std::optional<int> start_at_once(const ClusterSetup& setup, Cluster& c, size_t from) {
  for (size_t i = from; i < c.size(); ++i) spawn(setup, c.node(i), 0);
  int leaders = 0;
  for (size_t i = from; i < c.size(); ++i) {
    std::string why;
    if (!await_listening(c.node(i), &why)) {
      ADD_FAILURE() << "node " << c.node(i).name << ": " << why;
      return std::nullopt;
    }
    leaders += c.node(i).led_at_start ? 1 : 0;
  }
  return leaders;
}

TEST(ClusterPostgresProcessTest, TwoNodesStartingAtOnce_NeverApplyAnOperationTwice) {
  const uint32_t seed = seed_of(20261203);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const fs::path dir = write_project("two");
  size_t acknowledged = 0, sent = 0;
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const ClusterSetup setup = start_setup(dir, "cluster_two");
    ASSERT_FALSE(setup.url.empty());
    Cluster c(setup, {"x" + std::to_string(round), "y" + std::to_string(round)});
    const std::optional<int> leaders = start_at_once(setup, c, 0);
    ASSERT_TRUE(leaders);
    EXPECT_EQ(*leaders, 1) << "each node says it " << (*leaders ? "leads" : "follows");
    const Answer counter = call(c.node(rng() % 2).port, "POST", "/api/tables/counter/records",
                                R"({"name": "main", "n": 0})", kClientTimeoutMs);
    ASSERT_EQ(counter.status, 201) << counter.describe();

    // Inserts through both at once.
    constexpr int kPerClient = 15;
    std::vector<std::thread> clients;
    for (int t = 0; t < 4; ++t) {
      clients.emplace_back([&c, t] {
        for (int k = 0; k < kPerClient; ++k) {
          Attempt a;
          a.key = "r" + std::to_string(t) + "-" + std::to_string(k);
          a.node = c.node(t % 2).name;
          a.answer = call(c.node(t % 2).port, "POST", "/api/tables/job/records", "{\"key\": \"" + a.key + "\"}",
                          kClientTimeoutMs);
          c.record(std::move(a));
        }
      });
    }
    for (std::thread& t : clients) t.join();
    std::vector<Attempt> attempts = c.attempts();
    for (const Attempt& a : attempts) {
      EXPECT_EQ(a.answer.status, 201) << "insert " << a.key << " through " << a.node << ": " << a.answer.describe();
    }
    std::string last;
    const std::optional<size_t> leader = c.settled_leader(10000, &last);
    ASSERT_TRUE(leader) << last;
    ASSERT_TRUE(quiet(c, 30000, &last)) << last;
    const Tally t = check_outcome(c, attempts, 10000);
    acknowledged += t.acknowledged;
    sent += attempts.size();
    for (size_t i = 0; i < 2; ++i) {
      const View v = view_of(c.node(i).port);
      EXPECT_TRUE(v.ok);
      EXPECT_EQ(v.leaders, 1) << c.node(i).name;
      EXPECT_EQ(v.lead_incarnation, c.node(*leader).incarnation) << c.node(i).name;
    }
    EXPECT_EQ(c.lost_lead_summary(), "0");
    c.stop_all(leader);
    if (!HasFailure()) drop_schema(setup.url);
  }
  std::cout << "[ cluster  ] 5 rounds of two nodes starting at once: " << acknowledged << " of " << sent
            << " inserts acknowledged" << std::endl;
  if (!HasFailure()) fs::remove_all(dir);
}

// A dead leader's contexts are claimed by the node that takes the lead, and two nodes
// that try at once cannot both take it (each epoch is taken once, and a stale leader's
// writes are fenced: SCALING.md, "Several nodes"). So contexts that a killed leader left
// waiting (each job's on_job_later waits 1.5 s) and perhaps queued or running (on_job),
// with two nodes started at the same moment, each run once and end once, wherever they
// had got to: the claim the issue asks two nodes never to make twice, as this design
// makes it (for the whole engine, by the lead).
TEST(ClusterPostgresProcessTest, ContextsADeadLeaderLeft_TwoNodesStartingAtOnce_RunEachOnce) {
  const uint32_t seed = seed_of(20261205);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const fs::path dir = write_project("claim");
  size_t waiting_at_kill = 0, jobs = 0;
  for (int round = 0; round < 3; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    const ClusterSetup setup = start_setup(dir, "cluster_claim");
    ASSERT_FALSE(setup.url.empty());
    const std::string r = std::to_string(round);
    Cluster c(setup, {"p" + r, "x" + r, "y" + r});
    ASSERT_TRUE(c.start(0));
    Node& dead = c.node(0);
    const Answer counter =
        call(dead.port, "POST", "/api/tables/counter/records", R"({"name": "main", "n": 0})", kClientTimeoutMs);
    ASSERT_EQ(counter.status, 201) << counter.describe();
    const int n = 10 + static_cast<int>(rng() % 10);
    for (int k = 0; k < n; ++k) {
      Attempt a;
      a.key = "j" + r + "-" + std::to_string(k);
      a.node = dead.name;
      a.answer = call(dead.port, "POST", "/api/tables/job/records", "{\"key\": \"" + a.key + "\"}", kClientTimeoutMs);
      ASSERT_EQ(a.answer.status, 201) << a.answer.describe();
      c.record(std::move(a));
    }
    const Answer stats = call(dead.port, "GET", "/api/stats", "", kClientTimeoutMs);
    ASSERT_EQ(stats.status, 200) << stats.describe();
    const int64_t waiting = stats.json()["waiting_contexts"].as_int();
    EXPECT_GT(waiting, 0) << "the leader is killed while contexts wait: " << stats.body;
    waiting_at_kill += static_cast<size_t>(waiting);
    jobs += static_cast<size_t>(n);
    c.kill(0);
    dead.stopped = true;  // stays dead: watch() does not start it again
    pause_ms(static_cast<int>(rng() % static_cast<uint32_t>(setup.lease_ms)));  // its lease may or may not have run out
    const std::optional<int> leaders = start_at_once(setup, c, 1);
    ASSERT_TRUE(leaders);
    EXPECT_LE(*leaders, 1) << "two nodes say they lead";
    std::string last;
    const std::optional<size_t> leader = c.settled_leader(20000, &last);
    ASSERT_TRUE(leader) << last;
    ASSERT_TRUE(quiet(c, 30000, &last)) << last;
    std::vector<Attempt> attempts = c.attempts();
    const Tally t = check_outcome(c, attempts, 10000);
    EXPECT_EQ(t.acknowledged, static_cast<size_t>(n));
    EXPECT_EQ(c.lost_lead_summary(), "0");
    c.stop_all(leader);
    if (!HasFailure()) drop_schema(setup.url);
  }
  std::cout << "[ cluster  ] 3 rounds of a leader killed while " << waiting_at_kill << " contexts of " << jobs
            << " jobs waited, then two nodes started at once" << std::endl;
  if (!HasFailure()) fs::remove_all(dir);
}

}  // namespace
}  // namespace flowrt::cluster_process_test
