// The final checks of cluster_process_test.cpp: what the leader shows once the faults
// end (every record and context, through the pages; a cluster gone quiet) against what the
// clients were told, and the longest stretch in which a node refused every insert. Each
// check is bounded in time and reports through gtest. For the test's thread only.
#pragma once

#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "plans/value.h"
#include "tests/server/cluster_driver.h"

namespace flowrt::cluster_process_test {

// Every record of a table, through the pages (bounded), or nullopt (and a failure).
inline std::optional<std::vector<Value>> all_records(Cluster& c, const std::string& table) {
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

inline std::optional<std::vector<Value>> all_contexts(Cluster& c, const std::string& query) {
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
inline bool quiet(Cluster& c, int timeout_ms, std::string* last) {
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
  size_t keyed = 0;         // sent with an Idempotency-Key
  size_t resent = 0;        // of those, sent again (their first answer was not definite)
  size_t calls = 0;         // of those, calls of on_call (the rest are inserts)
  std::map<std::string, int> kinds;  // the answers that were neither acknowledged nor accepted, by kind
  std::string unanswered_kinds() const {
    std::string out;
    for (const auto& [kind, count] : kinds) out += (out.empty() ? "" : "; ") + std::to_string(count) + "x " + kind;
    return out;
  }
};

// What kind of answer it was: its status and the start of its error, without numbers.
inline std::string kind_of(const Answer& a) {
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

// The calls of on_call: each acknowledged one (at once, or as an operation answered later,
// also by a leader that did not apply it) named its context, which ran once and wrote the
// call's one `called` record; a refused one wrote none; nothing was called that was not sent.
inline void check_calls(Cluster& c, const std::vector<Attempt>& attempts) {
  std::optional<std::vector<Value>> called = all_records(c, "called");
  std::optional<std::vector<Value>> contexts = all_contexts(c, "&flow=on_call");
  if (!called || !contexts) return;
  std::map<std::string, std::vector<std::string>> contexts_of;  // key -> the contexts its records name
  for (const Value& r : *called) {
    contexts_of[std::string(r["key"].as_string())].emplace_back(r["context"].as_string());
  }
  std::set<std::string> sent;
  for (const Attempt& a : attempts) {
    if (!a.call) continue;
    sent.insert(a.key);
    const auto found = contexts_of.find(a.key);
    const size_t copies = found == contexts_of.end() ? 0 : found->second.size();
    if (is_2xx(a.final_status)) {
      EXPECT_EQ(copies, 1u) << "acknowledged call " << a.key << " (through " << a.node << ", answered "
                            << a.answer.describe() << ", operation " << a.operation << ")";
      if (copies == 1) {
        EXPECT_EQ(found->second.front(), a.context_id) << "call " << a.key << " was told another context";
      }
    } else if (a.final_status != 0 || nothing_written(a.answer)) {
      EXPECT_EQ(copies, 0u) << "call " << a.key << " was refused (" << a.answer.describe() << ") but ran";
    }
  }
  for (const auto& [key, ids] : contexts_of) {
    EXPECT_TRUE(sent.count(key)) << "call " << key << " was never sent";
    EXPECT_EQ(ids.size(), 1u) << "call " << key << " ran " << ids.size() << " times";
  }
  for (const Value& x : *contexts) EXPECT_EQ(x["status"], Value("completed")) << x.to_json();
  EXPECT_EQ(contexts->size(), called->size()) << "an on_call context that wrote no record, or one that wrote two";
}

// Resolves the accepted requests (inserts and calls) through GET /api/cluster/operations/N
// (bounded), then checks the state the leader shows against what the clients were told.
inline Tally check_outcome(Cluster& c, std::vector<Attempt>& attempts, int timeout_ms) {
  Tally t;
  const Clock::time_point start = Clock::now();
  for (Attempt& a : attempts) {
    if (a.keyed) {
      ++t.keyed;
      if (a.resends > 0) ++t.resent;
      if (a.call) ++t.calls;
      // Sent again with its key until the answer said what became of it (kMaxResends).
      EXPECT_TRUE(definite(a.answer)) << "keyed " << (a.call ? "call " : "insert ") << a.key << " sent "
                                      << a.resends + 1 << " times has no definite answer: " << a.answer.describe();
    }
    if (is_2xx(a.answer.status)) {
      ++t.acknowledged;
      a.final_status = a.answer.status;
      // The record, or the note of an operation the last leader applied and could not answer;
      // a call's context either way.
      const Value j = a.answer.json();
      if (a.call) {
        a.context_id = std::string(j["context_id"].as_string());
        EXPECT_FALSE(a.context_id.empty()) << "call " << a.key << ": " << a.answer.describe();
      } else if (!(j["applied"] == Value(true))) {
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
      if (a.call && is_2xx(a.final_status)) {
        a.context_id = std::string(op.json()["context_id"].as_string());
        EXPECT_FALSE(a.context_id.empty()) << "call " << a.key << ", operation " << a.operation << ": " << op.describe();
      }
    }
  }
  check_calls(c, attempts);

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
    if (a.call) continue;  // check_calls
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

  // Each job's waiting flow (on_job_later: its wait outlasts a lease, so many wait through a
  // kill or a takeover and are resumed by another leader) ended once, completed, and wrote
  // its record once.
  std::optional<std::vector<Value>> later = all_records(c, "later");
  std::optional<std::vector<Value>> waited = all_contexts(c, "&flow=on_job_later");
  if (later && waited) {
    std::map<std::string, int> waited_starts;
    for (const Value& x : *waited) {
      ++waited_starts[std::string(x["trigger"]["sys_id"].as_string())];
      EXPECT_EQ(x["status"], Value("completed")) << x.to_json();
    }
    std::map<std::string, int> later_keys;
    for (const Value& r : *later) ++later_keys[std::string(r["key"].as_string())];
    for (const auto& [sys_id, key] : job_key_of) {
      EXPECT_EQ(waited_starts[sys_id], 1) << "job " << key << " started on_job_later " << waited_starts[sys_id]
                                          << " times";
      EXPECT_EQ(later_keys[key], 1) << "job " << key << "'s waiting flow wrote its record " << later_keys[key]
                                    << " times";
    }
    EXPECT_EQ(waited->size(), jobs->size());
    EXPECT_EQ(later->size(), jobs->size());
  }

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
inline std::string longest_refusal(const std::vector<Attempt>& attempts, int64_t* ms) {
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

}  // namespace flowrt::cluster_process_test
