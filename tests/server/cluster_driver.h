// The cluster that cluster_process_test.cpp drives: its nodes' processes (started, killed,
// restarted: tests/server/cluster_nodes.h), the clients inserting jobs through any node
// that is up, and the timeline of what happened, for the failure messages. Owned by one
// test; every process is killed when it ends. Thread-safe where the clients need it (the
// attempts and the timeline under mu_, the ports atomic); the rest from the test's thread.
#pragma once

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

namespace flowrt::cluster_process_test {

constexpr int kLeaseMs = 800;
// The two-node start test's lease: `flowrt serve --lease-ms`'s default.
constexpr int kStartLeaseMs = 3000;
constexpr int kForwardTimeoutMs = 3000;
constexpr int kClientTimeoutMs = kForwardTimeoutMs + 3000;
// How soon after a fault the cluster must acknowledge inserts again.
constexpr int kRecoveryMs = 20000;

// ---- the client's inserts

struct Attempt {
  std::string key;
  std::string node;
  int64_t at_ms = 0;  // when it was answered, ms into the run
  Answer answer;
  int64_t operation = 0;  // accepted, without an answer: its number
  int final_status = 0;   // the status it was applied with (the answer's, or the operation's)
  bool keyed = false;     // sent with an Idempotency-Key (its key), and sent again until definite
  int resends = 0;        // how often (the answer is the last one's)
  bool call = false;      // a call of the flow on_call (keyed clients only), not an insert
  std::string context_id;  // a call's context, as its answer or its operation named it
};

inline bool is_2xx(int status) { return status >= 200 && status < 300; }

// A refusal that says nothing was written: the leader's ("nothing was written") or a
// follower's ("not accepted": never appended to the inbox, or read back and not there).
inline bool nothing_written(const Answer& a) {
  return a.status >= 400 && !a.json().contains("operation") &&
         (a.body.find("nothing was written") != std::string::npos || a.body.find("not accepted") != std::string::npos);
}

// An answer that says what became of the insert: acknowledged, refused with nothing
// written, or accepted as an operation (to look up). Anything else (no answer, "not
// known") leaves the client unsure.
inline bool definite(const Answer& a) {
  return is_2xx(a.status) || nothing_written(a) || a.json().contains("operation");
}
// How often a keyed client sends an insert again whose answer was not definite.
constexpr int kMaxResends = 20;

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

  // Client threads: each inserts jobs (and, keyed, calls on_call) through a random node that
  // is up, until stopped.
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
          // Odd clients name each insert with its key, and send it again (to any node that
          // is up) while the answer is not definite; even ones send each once, unnamed.
          // One request in four of an odd client calls the API flow on_call instead, in the
          // same way.
          a.keyed = t % 2 == 1;
          a.call = a.keyed && k % 4 == 3;
          const std::string target = a.call ? "/api/flows/on_call/call" : "/api/tables/job/records";
          const std::string body = "{\"key\": \"" + a.key + "\"}";
          a.answer = call(port, "POST", target, body, kClientTimeoutMs, a.keyed ? a.key : "");
          while (a.keyed && !definite(a.answer) && a.resends < kMaxResends) {
            pause_ms(100);
            std::vector<size_t> now_up;
            for (size_t j = 0; j < nodes_.size(); ++j) {
              if (ports_[j].load() != 0) now_up.push_back(j);
            }
            if (now_up.empty()) continue;
            const size_t j = now_up[rng() % now_up.size()];
            const uint16_t again = ports_[j].load();
            if (again == 0) continue;
            ++a.resends;
            a.node = nodes_[j].name;
            a.answer = call(again, "POST", target, body, kClientTimeoutMs, a.key);
          }
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

  // Stops every node with SIGTERM, the followers first: each must exit 0. A node that
  // exited by itself before its SIGTERM is judged as watch() judges it: a leader starved
  // of the CPU for a whole lease while the others stop (sanitizer builds, a busy machine)
  // loses the lead and exits 3, as it must; any other exit is a failure.
  void stop_all(std::optional<size_t> leader) {
    for (size_t k = 0; k < nodes_.size(); ++k) {
      const size_t i = ((leader ? *leader : 0) + 1 + k) % nodes_.size();
      Node& n = nodes_[i];
      if (!n.up()) continue;
      down(i);
      if (const std::optional<int> before = exited(n)) {
        note("node " + n.name + " exited with " + std::to_string(*before) + " before its SIGTERM");
        if (*before == 3) {
          note_lost_lead(n);
        } else {
          ADD_FAILURE() << "node " << n.name << " exited with " << *before << " before its SIGTERM: " << tail_of(n.log);
        }
        continue;
      }
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

}  // namespace flowrt::cluster_process_test
