// `flowrt serve --node` as processes: a cluster of nodes on one PostgreSQL schema
// (server/cluster_node.h), under seeded faults.
//
// The project's one flow runs on each insert into `job`: it takes the lock "counter",
// reads the counter record, waits a moment, writes an `entered` record holding the
// counter's value and its lock token, moves the counter on and unlocks. So:
//  - every job record has exactly one context and one `entered` record (a start lost or
//    made twice shows);
//  - the `entered` values are 0, 1, 2, ... each once, and the counter ends at their count:
//    two contexts holding the lock at once would both read one value and write it twice.
//
// Clients insert jobs, each with a key of its own, through any node that is up, and note
// what each insert was answered: acknowledged (2xx), accepted (an "operation" number: it
// will be applied, GET /api/cluster/operations/N says how it went) or neither (no answer,
// or "not accepted"; never sent again, so the key of an insert applied twice shows).
#include <gtest/gtest.h>

#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cctype>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <map>
#include <mutex>
#include <optional>
#include <random>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "plans/value.h"
#include "plans/value_json.h"
#include "tests/server/cluster_nodes.h"
#include "tests/support/postgres_support.h"

namespace flowrt::cluster_process_test {
namespace {

constexpr int kLeaseMs = 800;
constexpr int kForwardTimeoutMs = 3000;
constexpr int kClientTimeoutMs = kForwardTimeoutMs + 3000;
// How soon after a fault the cluster must acknowledge inserts again.
constexpr int kRecoveryMs = 20000;

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

// ---- the client's inserts

struct Attempt {
  std::string key;
  std::string node;
  int64_t at_ms = 0;  // when it was answered, ms into the run
  Answer answer;
  int64_t operation = 0;  // accepted, without an answer: its number
  int final_status = 0;   // the status it was applied with (the answer's, or the operation's)
};

bool is_2xx(int status) { return status >= 200 && status < 300; }

// A refusal that says nothing was written.
bool nothing_written(const Answer& a) {
  return a.status >= 400 && a.body.find("nothing was written") != std::string::npos && !a.json().contains("operation");
}

// ---- the whole cluster, owned by the test: every process is killed at the end

class Cluster {
 public:
  Cluster(ClusterSetup setup, std::vector<std::string> names) : setup_(std::move(setup)) {
    for (std::string& name : names) {
      Node n;
      n.name = name;
      n.log = setup_.dir / ("node-" + name + ".log");
      fs::remove(n.log);
      nodes_.push_back(std::move(n));
    }
    for (auto& p : ports_) p.store(0);
  }
  ~Cluster() {
    stop_clients();
    for (Node& n : nodes_) kill9(n);
  }

  const ClusterSetup& setup() const { return setup_; }
  Node& node(size_t i) { return nodes_[i]; }
  size_t size() const { return nodes_.size(); }

  bool start(size_t i) {
    ports_[i].store(0);
    std::string why;
    if (!start_node(setup_, nodes_[i], &why)) {
      ADD_FAILURE() << "node " << nodes_[i].name << " did not start: " << why;
      return false;
    }
    ports_[i].store(nodes_[i].port);
    note("node " + nodes_[i].name + " listens on " + std::to_string(nodes_[i].port) + " (incarnation " +
         std::to_string(nodes_[i].incarnation) + (nodes_[i].led_at_start ? ", leader)" : ", follower)"));
    return true;
  }
  void kill(size_t i) {
    ports_[i].store(0);
    kill9(nodes_[i]);
  }
  // Marks a node down before it is stopped or exits by itself.
  void down(size_t i) { ports_[i].store(0); }

  // Starts again every node that exited by itself (a leader that lost the lead exits 3:
  // noted, with the reason its log gives; any other exit is a failure) or is not running,
  // for `ms` at least.
  void watch(int ms) {
    const Clock::time_point from = Clock::now();
    while (true) {
      for (size_t i = 0; i < nodes_.size(); ++i) {
        Node& n = nodes_[i];
        if (n.stopped) continue;
        if (n.up()) {
          const std::optional<int> s = exited(n);
          if (!s) continue;
          down(i);
          note("node " + n.name + " exited with " + std::to_string(*s));
          if (*s == 3) {
            note_lost_lead(n);
          } else {
            ADD_FAILURE() << "node " << n.name << " exited with " << *s << ": " << tail_of(n.log);
          }
        }
        start(i);
      }
      if (ms_since(from) >= ms) return;
      pause_ms(20);
    }
  }
  // Why a node that exited 3 lost the lead, from the last such line of its log.
  void note_lost_lead(const Node& n) {
    const std::string log = tail_of(n.log, 4000);
    const size_t at = log.rfind("lost the lead: ");
    std::string why = at == std::string::npos ? "?" : log.substr(at + 15, log.find_first_of(";(\n", at + 15) - at - 15);
    while (!why.empty() && why.back() == ' ') why.pop_back();
    ++lost_lead_[why];
    if (!why.starts_with("its store could not be written")) {
      std::cout << "[ cluster  ] at " << now_ms() << " ms node " << n.name << " exited 3 (" << why
                << "); its log ends:\n"
                << tail_of(n.log, 1500) << std::endl;
    }
  }
  std::string lost_lead_summary() const {
    std::string out;
    int all = 0;
    for (const auto& [why, count] : lost_lead_) {
      all += count;
      out += (out.empty() ? "" : "; ") + std::to_string(count) + "x " + why;
    }
    return std::to_string(all) + (out.empty() ? "" : " (" + out + ")");
  }

  // One look at every running node: the leader they all agree on (exactly one node leads,
  // alive, and says so itself), or nullopt and why not in *last.
  std::optional<size_t> one_leader(std::string* last) {
    std::optional<size_t> leader;
    for (size_t i = 0; i < nodes_.size(); ++i) {
      Node& n = nodes_[i];
      if (!n.up() || n.stopped) continue;
      const View v = view_of(n.port);
      if (!v.ok) {
        *last = n.name + " does not answer GET /api/cluster";
        return std::nullopt;
      }
      if (v.leaders != 1 || !v.lead_alive) {
        *last = n.name + " sees " + std::to_string(v.leaders) + " leaders (lead incarnation " +
                std::to_string(v.lead_incarnation) + (v.lead_alive ? ", alive)" : ", not alive)");
        return std::nullopt;
      }
      std::optional<size_t> named;
      for (size_t j = 0; j < nodes_.size(); ++j) {
        if (nodes_[j].up() && nodes_[j].incarnation == v.lead_incarnation) named = j;
      }
      if (!named || (leader && *leader != *named)) {
        *last = n.name + " names incarnation " + std::to_string(v.lead_incarnation) +
                " as the leader, which is not the one the others name, or not running";
        return std::nullopt;
      }
      if ((v.role == "leader") != (*named == i)) {
        *last = n.name + " says it is the " + v.role;
        return std::nullopt;
      }
      leader = named;
    }
    if (!leader) *last = "no node runs";
    return leader;
  }
  // Waits (bounded) for one_leader, starting again nodes that exit meanwhile.
  std::optional<size_t> settled_leader(int timeout_ms, std::string* last) {
    const Clock::time_point start = Clock::now();
    while (ms_since(start) < timeout_ms) {
      watch(0);
      if (std::optional<size_t> l = one_leader(last)) return l;
      pause_ms(100);
    }
    return std::nullopt;
  }
  // The node that leads now by the lead row (through any node that answers; bounded), to
  // aim a fault at.
  std::optional<size_t> leader(int timeout_ms = 15000) {
    const Clock::time_point start = Clock::now();
    while (ms_since(start) < timeout_ms) {
      for (Node& asked : nodes_) {
        if (!asked.up() || asked.stopped) continue;
        const View v = view_of(asked.port);
        if (!v.ok || !v.lead_alive) continue;
        for (size_t i = 0; i < nodes_.size(); ++i) {
          if (nodes_[i].up() && nodes_[i].incarnation == v.lead_incarnation) return i;
        }
      }
      watch(50);
    }
    return std::nullopt;
  }
  // A read from the leader, retried (bounded) while no node leads or the leader does not
  // answer 200 or 404.
  Answer read(const std::string& target, int timeout_ms = 30000) {
    const Clock::time_point start = Clock::now();
    Answer a;
    std::string last;
    while (true) {
      if (std::optional<size_t> l = settled_leader(std::max<int>(1, timeout_ms - static_cast<int>(ms_since(start))),
                                                   &last)) {
        a = call(nodes_[*l].port, "GET", target, "", 30000);
        if (a.status == 200 || a.status == 404) return a;
      } else {
        a.error = "no leader: " + last;
      }
      if (ms_since(start) > timeout_ms) return a;
      pause_ms(100);
    }
  }

  // Client threads: each inserts jobs through a random node that is up, until stopped.
  void start_clients(int count, uint32_t seed, int min_gap_ms, int max_gap_ms) {
    done_.store(false);
    for (int t = 0; t < count; ++t) {
      clients_.emplace_back([this, t, seed, min_gap_ms, max_gap_ms] {
        std::mt19937 rng(seed * 7919u + static_cast<uint32_t>(t) + 1);
        for (int k = 0; !done_.load(); ++k) {
          std::vector<size_t> up;
          for (size_t i = 0; i < nodes_.size(); ++i) {
            if (ports_[i].load() != 0) up.push_back(i);
          }
          if (up.empty()) {
            pause_ms(20);
            continue;
          }
          const size_t i = up[rng() % up.size()];
          const uint16_t port = ports_[i].load();
          if (port == 0) continue;
          Attempt a;
          a.key = "c" + std::to_string(t) + "-" + std::to_string(k);
          a.node = nodes_[i].name;
          a.answer = call(port, "POST", "/api/tables/job/records", "{\"key\": \"" + a.key + "\"}", kClientTimeoutMs);
          a.at_ms = ms_since(epoch_);
          if (is_2xx(a.answer.status)) last_ack_ms_.store(a.at_ms);
          record(std::move(a));
          pause_ms(min_gap_ms + static_cast<int>(rng() % static_cast<uint32_t>(max_gap_ms - min_gap_ms + 1)));
        }
      });
    }
  }
  void stop_clients() {
    done_.store(true);
    for (std::thread& t : clients_) t.join();
    clients_.clear();
  }
  void record(Attempt a) {
    std::lock_guard lock(mu_);
    attempts_.push_back(std::move(a));
  }
  std::vector<Attempt> attempts() {
    std::lock_guard lock(mu_);
    return attempts_;
  }
  // What happened when, for a failure's message (or FLOWRT_CLUSTER_VERBOSE=1).
  void note(const std::string& what) {
    std::lock_guard lock(mu_);
    timeline_ += std::to_string(now_ms()) + " ms: " + what + "\n";
  }
  std::string timeline() {
    std::lock_guard lock(mu_);
    return timeline_;
  }
  // Milliseconds since the cluster object was made: now, and when an insert was last
  // acknowledged.
  int64_t now_ms() const { return ms_since(epoch_); }
  int64_t last_ack_ms() const { return last_ack_ms_.load(); }

  // Stops every node with SIGTERM, the followers first: each must exit 0.
  void stop_all(std::optional<size_t> leader) {
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const size_t i = ((leader ? *leader : 0) + 1 + k) % nodes_.size();
      Node& n = nodes_[i];
      if (!n.up()) continue;
      down(i);
      ::kill(n.pid, SIGTERM);
      const std::optional<int> s = wait_exit(n, 20000);
      EXPECT_EQ(s, std::optional<int>(0)) << "node " << n.name << " after SIGTERM: " << tail_of(n.log);
      if (!s) kill(i);
    }
  }

 private:
  ClusterSetup setup_;
  std::vector<Node> nodes_;
  std::array<std::atomic<uint16_t>, 8> ports_;
  std::map<std::string, int> lost_lead_;
  std::atomic<bool> done_{false};
  const Clock::time_point epoch_ = Clock::now();
  std::atomic<int64_t> last_ack_ms_{-1};
  std::vector<std::thread> clients_;
  std::mutex mu_;
  std::vector<Attempt> attempts_;
  std::string timeline_;
};

fs::path write_project(const std::string& test) {
  const fs::path dir = fs::temp_directory_path() / ("flowrt-cluster-" + std::to_string(::getpid()) + "-" + test);
  fs::remove_all(dir);
  fs::create_directories(dir / "flows");
  std::ofstream(dir / "flows" / "on_job.json") << kOnJob;
  return dir;
}

// Every record of a table, through the pages (bounded), or nullopt (and a failure).
std::optional<std::vector<Value>> all_records(Cluster& c, const std::string& table) {
  std::vector<Value> out;
  std::string cursor = "0";
  for (int page = 0; page < 1000; ++page) {
    const Answer a = c.read("/api/tables/" + table + "/records?limit=10000&cursor=" + cursor);
    if (a.status != 200) {
      ADD_FAILURE() << "GET the records of " << table << ": " << a.describe();
      return std::nullopt;
    }
    const Value j = a.json();
    for (const Value& r : j["records"].items()) out.push_back(r);
    cursor = next_cursor(j["next"]);
    if (cursor.empty()) return out;
  }
  ADD_FAILURE() << "too many pages of " << table;
  return std::nullopt;
}

std::optional<std::vector<Value>> all_contexts(Cluster& c, const std::string& query) {
  std::vector<Value> out;
  std::string cursor;
  for (int page = 0; page < 1000; ++page) {
    const std::string target = "/api/contexts?limit=1000" + query + (cursor.empty() ? "" : "&cursor=" + cursor);
    const Answer a = c.read(target);
    if (a.status != 200) {
      ADD_FAILURE() << "GET " << target << ": " << a.describe();
      return std::nullopt;
    }
    const Value j = a.json();
    for (const Value& x : j["contexts"].items()) out.push_back(x);
    cursor = next_cursor(j["next"]);
    if (cursor.empty()) return out;
  }
  ADD_FAILURE() << "too many pages of contexts";
  return std::nullopt;
}

// Waits (bounded) until the leader has no context queued, running or waiting.
bool quiet(Cluster& c, int timeout_ms, std::string* last) {
  const Clock::time_point start = Clock::now();
  while (ms_since(start) < timeout_ms) {
    const Answer s = c.read("/api/stats", 5000);
    if (s.status == 200) {
      const Value j = s.json();
      const int64_t queued = j["queue_depth"].as_int();
      const int64_t runnable = j["runnable_contexts"].as_int();
      const int64_t waiting = j["waiting_contexts"].as_int();
      *last = "queued " + std::to_string(queued) + ", runnable " + std::to_string(runnable) + ", waiting " +
              std::to_string(waiting);
      if (queued == 0 && runnable == 0 && waiting == 0) {
        const Answer p = c.read("/api/contexts?status=in_progress&limit=5", 5000);
        const Answer w = c.read("/api/contexts?status=waiting&limit=5", 5000);
        if (p.status == 200 && w.status == 200 && p.json()["contexts"].size() == 0 &&
            w.json()["contexts"].size() == 0) {
          return true;
        }
        *last += "; listed in progress: " + p.describe() + "; waiting: " + w.describe();
      }
    } else {
      *last = "GET /api/stats: " + s.describe();
    }
    pause_ms(100);
  }
  return false;
}

struct Tally {
  size_t acknowledged = 0;  // 2xx at once
  size_t accepted = 0;      // an operation number, answered later
  size_t accepted_applied = 0;
  size_t unanswered = 0;    // neither
  size_t refused = 0;       // a refusal that wrote nothing
  std::map<std::string, int> kinds;  // the answers that were neither acknowledged nor accepted, by kind
  std::string unanswered_kinds() const {
    std::string out;
    for (const auto& [kind, count] : kinds) out += (out.empty() ? "" : "; ") + std::to_string(count) + "x " + kind;
    return out;
  }
};

// What kind of answer it was: its status and the start of its error, without numbers.
std::string kind_of(const Answer& a) {
  std::string text =
      a.status == 0 ? a.error : std::to_string(a.status) + " " + std::string(a.json()["error"].as_string());
  text = text.substr(0, 70);
  std::string out;
  for (char ch : text) {
    if (std::isdigit(static_cast<unsigned char>(ch)) && !(out.size() < 3 && a.status != 0)) {
      if (out.empty() || out.back() != '#') out += '#';
    } else {
      out += ch;
    }
  }
  return out;
}

// Resolves the accepted inserts through GET /api/cluster/operations/N (bounded), then
// checks the state the leader shows against what the clients were told.
Tally check_outcome(Cluster& c, std::vector<Attempt>& attempts, int timeout_ms) {
  Tally t;
  const Clock::time_point start = Clock::now();
  for (Attempt& a : attempts) {
    if (is_2xx(a.answer.status)) {
      ++t.acknowledged;
      a.final_status = a.answer.status;
      // The record, or the note of an operation the last leader applied and could not answer.
      const Value j = a.answer.json();
      if (!(j["applied"] == Value(true))) {
        EXPECT_EQ(j["key"], Value(a.key)) << a.answer.describe();
      }
      continue;
    }
    const Value j = a.answer.json();
    if (!j.contains("operation")) {
      if (nothing_written(a.answer)) ++t.refused;
      else ++t.unanswered;
      ++t.kinds[kind_of(a.answer)];
      continue;
    }
    ++t.accepted;
    a.operation = j["operation"].as_int();
    EXPECT_EQ(a.answer.operation, std::to_string(a.operation)) << a.answer.describe();
    Answer op;
    while (true) {
      op = c.read("/api/cluster/operations/" + std::to_string(a.operation), 5000);
      if (op.status == 200 && op.json()["answered"] == Value(true)) break;
      if (ms_since(start) > timeout_ms) {
        ADD_FAILURE() << "accepted operation " << a.operation << " (insert " << a.key << " through " << a.node
                      << ") is not answered after " << timeout_ms << " ms: " << op.describe();
        break;
      }
      pause_ms(50);
    }
    if (op.status == 200 && op.json()["answered"] == Value(true)) {
      a.final_status = static_cast<int>(op.json()["status"].as_int());
      if (is_2xx(a.final_status)) ++t.accepted_applied;
    }
  }

  std::optional<std::vector<Value>> jobs = all_records(c, "job");
  std::optional<std::vector<Value>> entered = all_records(c, "entered");
  std::optional<std::vector<Value>> counter = all_records(c, "counter");
  std::optional<std::vector<Value>> contexts = all_contexts(c, "&flow=on_job");
  if (!jobs || !entered || !counter || !contexts) return t;

  std::map<std::string, int> job_keys;
  std::map<std::string, std::string> job_key_of;  // sys_id -> key
  for (const Value& r : *jobs) {
    const std::string key(r["key"].as_string());
    ++job_keys[key];
    job_key_of[std::string(r["sys_id"].as_string())] = key;
  }
  std::map<std::string, const Attempt*> sent;
  for (const Attempt& a : attempts) sent[a.key] = &a;

  // Nothing acknowledged is lost; nothing is applied twice; nothing refused is there.
  for (const Attempt& a : attempts) {
    const int copies = job_keys.count(a.key) ? job_keys[a.key] : 0;
    if (is_2xx(a.final_status)) {
      EXPECT_EQ(copies, 1) << "acknowledged insert " << a.key << " (through " << a.node << ", answered "
                           << a.answer.describe() << ")";
    } else if (a.final_status != 0 || nothing_written(a.answer)) {
      EXPECT_EQ(copies, 0) << "insert " << a.key << " was refused (" << a.answer.describe() << ", operation "
                           << a.operation << " answered " << a.final_status << ") but is there";
    }
  }
  for (const auto& [key, copies] : job_keys) {
    EXPECT_EQ(copies, 1) << "job " << key << " is there " << copies << " times";
    EXPECT_TRUE(sent.count(key)) << "job " << key << " was never sent";
  }

  // Each job started the flow exactly once, and each context completed.
  std::map<std::string, int> starts;
  for (const Value& x : *contexts) {
    const std::string sys_id(x["trigger"]["sys_id"].as_string());
    ++starts[sys_id];
    EXPECT_EQ(x["status"], Value("completed")) << x.to_json();
    EXPECT_TRUE(job_key_of.count(sys_id)) << "a context for no job: " << x.to_json();
  }
  for (const auto& [sys_id, key] : job_key_of) {
    EXPECT_EQ(starts[sys_id], 1) << "job " << key << " (" << sys_id << ") started on_job " << starts[sys_id]
                                 << " times";
  }
  EXPECT_EQ(contexts->size(), jobs->size());

  // One entered record per job; the counter's values each once, in lock-token order: no
  // two contexts held the lock at once.
  std::map<std::string, int> entered_keys;
  std::vector<std::pair<int64_t, int64_t>> values;  // n, token
  for (const Value& r : *entered) {
    ++entered_keys[std::string(r["key"].as_string())];
    values.emplace_back(r["n"].as_int(), r["token"].as_int());
  }
  for (const auto& [key, copies] : job_keys) {
    EXPECT_EQ(entered_keys[key], 1) << "job " << key << " entered the lock " << entered_keys[key] << " times";
  }
  EXPECT_EQ(entered->size(), jobs->size());
  std::sort(values.begin(), values.end());
  int reported = 0;
  for (size_t i = 0; i < values.size() && reported < 10; ++i) {
    if (values[i].first != static_cast<int64_t>(i)) {
      ADD_FAILURE() << "the counter value at place " << i << " is " << values[i].first
                    << ": two contexts read one value (held the lock together) or one was skipped";
      ++reported;
    }
    if (i > 0 && values[i].second <= values[i - 1].second) {
      ADD_FAILURE() << "lock token " << values[i].second << " (value " << values[i].first << ") after token "
                    << values[i - 1].second;
      ++reported;
    }
  }
  EXPECT_EQ(counter->size(), 1u);
  if (!counter->empty()) {
    EXPECT_EQ(counter->front()["n"].as_int(), static_cast<int64_t>(entered->size()));
  }

  // No lock is held or waited for.
  const Answer locks = c.read("/api/locks", 5000);
  EXPECT_EQ(locks.status, 200) << locks.describe();
  for (const Value& l : locks.json()["locks"].items()) {
    EXPECT_EQ(l["holders"].size(), 0u) << "lock still held: " << l.to_json();
    EXPECT_EQ(l["waiters"].size(), 0u) << "lock still waited for: " << l.to_json();
  }
  return t;
}

// The longest stretch of time in which every insert sent to one node found its port
// closed (a node that takes the lead listens again once it has loaded the state).
std::string longest_refusal(const std::vector<Attempt>& attempts, int64_t* ms) {
  std::map<std::string, std::vector<const Attempt*>> by_node;
  for (const Attempt& a : attempts) by_node[a.node].push_back(&a);
  int64_t longest = 0, from = 0;
  std::string node;
  for (auto& [name, list] : by_node) {
    std::sort(list.begin(), list.end(), [](const Attempt* x, const Attempt* y) { return x->at_ms < y->at_ms; });
    int64_t start = -1;
    for (const Attempt* a : list) {
      if (a->answer.status != 0 || !a->answer.error.starts_with("connect:")) {
        start = -1;
        continue;
      }
      if (start < 0) start = a->at_ms;
      if (a->at_ms - start > longest) {
        longest = a->at_ms - start;
        from = start;
        node = name;
      }
    }
  }
  *ms = longest;
  if (node.empty()) return "none";
  return std::to_string(longest) + " ms (" + node + ", from " + std::to_string(from) + " ms)";
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

uint32_t seed_of(uint32_t fallback) {
  if (const char* s = std::getenv("FLOWRT_CLUSTER_SEED")) return static_cast<uint32_t>(std::strtoul(s, nullptr, 10));
  return fallback;
}

// ---- the tests

TEST(ClusterPostgresProcessTest, ThreeNodes_SeededKillsAndFaults_LoseNothingAndWedgeNothing) {
  const uint32_t seed = seed_of(20261202);
  SCOPED_TRACE("seed " + std::to_string(seed) + " (FLOWRT_CLUSTER_SEED=N runs another)");
  std::cout << "[ cluster  ] seed " << seed << std::endl;
  RecordProperty("seed", std::to_string(seed));
  const Clock::time_point began = Clock::now();
  std::mt19937 rng(seed);
  auto between = [&](int lo, int hi) { return lo + static_cast<int>(rng() % static_cast<uint32_t>(hi - lo + 1)); };

  ClusterSetup setup;
  setup.lease_ms = kLeaseMs;
  setup.forward_timeout_ms = kForwardTimeoutMs;
  setup.dir = write_project("three");
  setup.url = test_support::fresh_postgres_schema("cluster_three");
  ASSERT_FALSE(setup.url.empty());
  // The nodes' connections under a name of this run's own (the URL's wins over flowrt's
  // "flowrt"): the cuts below end those and no other test's on the shared server.
  const std::string app = "flowrt_cluster_test_" + std::to_string(::getpid());
  setup.url += "&application_name=" + app;
  const std::string server = test_support::postgres_server_url();
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
    const Answer counter = call(c.node(1).port, "POST", "/api/tables/counter/records", R"({"name": "main", "n": 0})",
                                kClientTimeoutMs);
    ASSERT_EQ(counter.status, 201) << counter.describe();
  }

  // Faults in a seeded order: kill -9 (mostly of the leader), SIGSTOP of the leader past
  // its lease, every connection of the cluster's nodes cut by the database.
  enum class Fault { kKill, kStop, kCut };
  std::vector<Fault> faults(22, Fault::kKill);
  faults.insert(faults.end(), 3, Fault::kStop);
  faults.insert(faults.end(), 3, Fault::kCut);
  std::shuffle(faults.begin(), faults.end(), rng);

  int kills = 0, leader_kills = 0, stops = 0, cuts = 0;
  int64_t slowest_recovery_ms = 0;
  c.start_clients(3, seed, 40, 160);
  for (size_t k = 0; k < faults.size(); ++k) {
    const Fault f = faults[k];
    c.watch(between(800, 1800));
    std::optional<size_t> leader = c.leader();
    if (f == Fault::kKill) {
      size_t target = leader ? *leader : rng() % c.size();
      if (leader && rng() % 4 == 0) target = (*leader + 1 + rng() % (c.size() - 1)) % c.size();  // a follower
      if (leader && target == *leader) ++leader_kills;
      c.note("fault " + std::to_string(k) + ": kill -9 " + c.node(target).name +
             (leader && target == *leader ? " (the leader)" : ""));
      c.kill(target);
      ++kills;
      pause_ms(between(100, 1500));
      c.watch(0);  // starts it again
    } else if (f == Fault::kStop) {
      ASSERT_TRUE(leader) << "fault " << k << ": no leader to stop";
      Node& n = c.node(*leader);
      c.note("fault " + std::to_string(k) + ": SIGSTOP " + n.name + " (the leader)");
      ::kill(n.pid, SIGSTOP);
      n.stopped = true;
      ++stops;
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
    } else {
      const std::string error = test_support::postgres_exec(
          server,
          "SET client_min_messages = error; SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
          "application_name = '" + app + "' AND pid <> pg_backend_pid()");
      EXPECT_EQ(error, "");
      c.note("fault " + std::to_string(k) + ": every connection of the cluster's nodes cut");
      ++cuts;
    }
    // Nothing wedges: inserts are acknowledged again soon after each fault (a node that
    // exits, as a leader that lost the lead does, is started again meanwhile).
    const int64_t after = c.now_ms();
    while (c.last_ack_ms() <= after && c.now_ms() - after < kRecoveryMs) c.watch(50);
    slowest_recovery_ms = std::max(slowest_recovery_ms, c.now_ms() - after);
    ASSERT_GT(c.last_ack_ms(), after) << "no insert was acknowledged within " << kRecoveryMs << " ms after fault " << k
                                      << " ("
                                      << (f == Fault::kKill   ? "kill -9"
                                          : f == Fault::kStop ? "SIGSTOP"
                                                              : "connections cut")
                                      << "): the cluster is wedged";
  }
  c.watch(1000);
  c.stop_clients();
  const int64_t fault_ms = ms_since(began);

  // Settles: one leader, no context left to run, every accepted operation answered.
  std::string last;
  ASSERT_TRUE(c.settled_leader(30000, &last)) << "no single leader that every node agrees on within 30 s: " << last;
  ASSERT_TRUE(quiet(c, 60000, &last)) << "contexts still queued, running or waiting after 60 s: " << last;
  std::vector<Attempt> attempts = c.attempts();
  const Tally t = check_outcome(c, attempts, 60000);
  // Still settled after the checks (no context was left waiting to resume).
  EXPECT_TRUE(quiet(c, 5000, &last)) << last;

  int64_t refused_ms = 0;
  std::ostringstream summary;
  summary << "seed " << seed << ": " << kills << " kills (" << leader_kills << " of the leader), " << stops
          << " stops past the lease, " << cuts << " connection cuts; other nodes that lost the lead and exited 3: "
          << c.lost_lead_summary() << "; writable again within " << slowest_recovery_ms << " ms of each fault; "
          << attempts.size() << " inserts: " << t.acknowledged << " acknowledged, " << t.accepted << " accepted ("
          << t.accepted_applied << " applied), " << t.refused << " refused and " << t.unanswered
          << " unanswered (" << t.unanswered_kinds() << "); the longest a node refused connections: "
          << longest_refusal(attempts, &refused_ms) << "; faults " << fault_ms / 1000.0 << " s, all "
          << ms_since(began) / 1000.0 << " s";
  std::cout << "[ cluster  ] " << summary.str() << std::endl;
  RecordProperty("summary", summary.str());
  EXPECT_GE(kills, 20);
  // A node that runs listens, but for the moment a follower that takes the lead loads
  // the state.
  EXPECT_LT(refused_ms, 10000) << "a node refused connections for " << refused_ms << " ms: " << summary.str();
  EXPECT_GT(t.acknowledged, 100u) << summary.str();

  // A clean stop of each: followers first, then the leader; each exits 0.
  c.stop_all(c.settled_leader(10000, &last));
  if (!HasFailure() && !std::getenv("FLOWRT_CLUSTER_VERBOSE")) {
    drop_schema(setup.url);
    fs::remove_all(setup.dir);
  }
}

TEST(ClusterPostgresProcessTest, TwoNodesStartingAtOnce_NeverApplyAnOperationTwice) {
  const uint32_t seed = seed_of(20261203);
  SCOPED_TRACE("seed " + std::to_string(seed));
  std::mt19937 rng(seed);
  const fs::path dir = write_project("two");
  size_t acknowledged = 0, sent = 0;
  for (int round = 0; round < 5; ++round) {
    SCOPED_TRACE("round " + std::to_string(round));
    ClusterSetup setup;
    setup.lease_ms = kLeaseMs;
    setup.forward_timeout_ms = kForwardTimeoutMs;
    setup.dir = dir;
    setup.url = test_support::fresh_postgres_schema("cluster_two");
    ASSERT_FALSE(setup.url.empty());
    Cluster c(setup, {"x" + std::to_string(round), "y" + std::to_string(round)});
    // Both at the same moment: forked before either is waited for.
    for (size_t i = 0; i < 2; ++i) spawn(setup, c.node(i), 0);
    int leaders = 0;
    for (size_t i = 0; i < 2; ++i) {
      std::string why;
      ASSERT_TRUE(await_listening(c.node(i), &why)) << why;
      leaders += c.node(i).led_at_start ? 1 : 0;
    }
    EXPECT_EQ(leaders, 1) << "each node says it " << (leaders ? "leads" : "follows");
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

}  // namespace
}  // namespace flowrt::cluster_process_test
