// PostgresCluster's inbox (store/postgres_cluster.h): appends numbered in commit order,
// idempotency keys, the leader's reads and answers, and pruning. Membership, leases and the
// lead are in postgres_cluster.cpp.
#include <libpq-fe.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <thread>
#include <utility>

#include "store/postgres_cluster.h"
#include "store/postgres_cluster_sql.h"
#include "store/postgres_rows.h"

namespace flowrt {

using namespace postgres_rows;        // NOLINT: the store's libpq handles
using namespace postgres_cluster_sql;  // NOLINT: the cluster's statements

namespace {

// Whether a request with this method, target and body is the same as `q`: what a key names
// (the content type and the caller's role are not part of it).
bool same_request(std::string_view method, std::string_view target, std::string_view body, const InboxRequest& q) {
  return method == q.method && target == q.target && body == q.body;
}

}  // namespace

Result<std::vector<std::optional<PostgresCluster::KeyedEntry>>> PostgresCluster::keyed_entries(
    const std::vector<InboxRequest>& requests) {
  std::vector<std::optional<KeyedEntry>> out(requests.size());
  std::vector<Value> wanted;  // {n, caller, key} of each keyed request: one statement for all
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].idempotency_key.empty()) continue;
    wanted.push_back(Value::object({{"n", Value(static_cast<int64_t>(i))},
                                    {"caller", Value(requests[i].caller)},
                                    {"key", Value(requests[i].idempotency_key)}}));
  }
  if (wanted.empty()) return out;
  Params p;
  p.json(Value::array(std::move(wanted)));
  ResultPtr r(exec_params(conn_,
                          "SELECT w.n, c.seq, c.method, c.target, c.body FROM jsonb_to_recordset($1::text::jsonb) AS "
                          "w(n integer, caller text, key text) JOIN cluster_inbox c ON c.caller = w.caller AND "
                          "c.idem_key = w.key",
                          p));
  if (!result_ok(r.get())) return error("cannot read the inbox's idempotency keys");
  for (int row = 0; row < PQntuples(r.get()); ++row) {
    const size_t i = static_cast<size_t>(cell_int(r.get(), row, 0));  // one of ours
    const InboxRequest& q = requests[i];
    const bool same = same_request(cell_view(r.get(), row, 2), cell_view(r.get(), row, 3), bytes_of(r.get(), row, 4), q);
    out[i] = KeyedEntry{static_cast<uint64_t>(cell_int(r.get(), row, 1)), same};
  }
  return out;
}

namespace {

// The earlier request of `requests` (before `i`) with i's caller and key, or npos.
size_t earlier_with_key(const std::vector<InboxRequest>& requests, size_t i) {
  for (size_t j = 0; j < i; ++j) {
    if (requests[j].idempotency_key == requests[i].idempotency_key && requests[j].caller == requests[i].caller) return j;
  }
  return std::string::npos;
}

}  // namespace

Result<uint64_t> PostgresCluster::append_rows(int64_t incarnation, const std::vector<InboxRequest>& requests,
                                              const std::vector<size_t>& rows, size_t from, size_t to,
                                              std::string_view batch) {
  const std::initializer_list<const char*> kRow = {"::bigint", "::text",    "::text", "::text",  "::text",
                                                       "::boolean", "::text", "::bytea", "::text"};
  Params p;
  p.integer(static_cast<int64_t>(to - from));
  p.integer(incarnation);
  p.text(batch);
  p.text(channel("flowrt_inbox"));
  for (size_t k = from; k < to; ++k) {
    const InboxRequest& q = requests[rows[k]];
    p.integer(static_cast<int64_t>(k - from + 1));
    p.text(q.method);
    p.text(q.target);
    p.text(q.caller);
    p.text(q.role);
    p.boolean(q.authenticated);
    p.text(q.content_type);
    p.text(q.body);  // raw bytes (binary format) into bytea
    if (q.idempotency_key.empty()) p.null();
    else p.text(q.idempotency_key);
  }
  // One statement for each count of rows, as its placeholders depend on it.
  auto sql = [&] {
    std::string values;
    for (size_t k = 0; k < to - from; ++k) {
      values += (k == 0 ? "" : ", ") + placeholders(static_cast<int>(4 + k * kRow.size()), kRow);
    }
    return "WITH head AS (UPDATE cluster_inbox_head SET seq = seq + $1::bigint WHERE id = 1 RETURNING seq - $1::bigint AS "
           "base), appended AS (INSERT INTO cluster_inbox(seq, incarnation, method, target, caller, role, authenticated, "
           "content_type, body, batch, idem_key) SELECT head.base + v.ord, $2::bigint, v.method, v.target, v.caller, "
           "v.role, v.authenticated, v.content_type, v.body, $3::text, v.idem_key FROM head, (VALUES " +
           values +
           ") AS v(ord, method, target, caller, role, authenticated, content_type, body, idem_key)) "
           "SELECT base + 1, pg_notify($4::text, '') FROM head";
  };
  ResultPtr r(exec_prepared(conn_, &prepared_, "append_" + std::to_string(to - from), sql, p));
  if (!result_ok(r.get()) || PQntuples(r.get()) != 1) return error("cannot append to the inbox");
  return static_cast<uint64_t>(cell_int(r.get(), 0, 0));
}

Result<std::vector<InboxAppended>> PostgresCluster::append(int64_t incarnation, const std::vector<InboxRequest>& requests,
                                                           std::string_view batch) {
  using Kind = InboxAppended::Kind;
  using Outcome = Result<std::vector<InboxAppended>>;
  if (requests.empty()) return std::vector<InboxAppended>{};
  const bool keyed = std::any_of(requests.begin(), requests.end(),
                                 [](const InboxRequest& q) { return !q.idempotency_key.empty(); });
  if (!keyed && requests.size() <= kRowsPerStatement) {
    // Every request is new, and one statement takes them all: its own transaction.
    std::vector<size_t> all(requests.size());
    for (size_t i = 0; i < all.size(); ++i) all[i] = i;
    Result<uint64_t> first = append_rows(incarnation, requests, all, 0, all.size(), batch);
    if (!first) return first.error();
    std::vector<InboxAppended> out(requests.size());
    for (size_t i = 0; i < out.size(); ++i) out[i] = {*first + i, Kind::kNew};
    return out;
  }
  return in_transaction(
      conn_, "BEGIN",
      [&]() -> Outcome {
        std::vector<InboxAppended> out(requests.size());
        // Which requests are new. A keyed one is not when its key names an entry, or an
        // earlier request here: read under the head row's lock, which every append takes,
        // so no other append adds that key meanwhile.
        std::vector<bool> fresh(requests.size(), true);
        std::vector<size_t> same_as(requests.size(), std::string::npos);
        if (keyed) {
          ResultPtr lock(PQexec(conn_, "SELECT seq FROM cluster_inbox_head WHERE id = 1 FOR UPDATE"));
          if (!result_ok(lock.get())) return error("cannot lock the inbox's head");
        }
        Result<std::vector<std::optional<KeyedEntry>>> known = keyed_entries(requests);
        if (!known) return known.error();
        for (size_t i = 0; i < requests.size(); ++i) {
          if (requests[i].idempotency_key.empty()) continue;
          if (const std::optional<KeyedEntry>& e = (*known)[i]) {
            fresh[i] = false;
            out[i] = {e->seq, e->same ? Kind::kAgain : Kind::kKeyReused};
          } else if (const size_t j = earlier_with_key(requests, i); j != std::string::npos) {
            fresh[i] = false;
            same_as[i] = j;
          }
        }
        // The new entries, kRowsPerStatement to a statement, numbered on from the head row
        // (locked until COMMIT: appends are numbered in commit order).
        std::vector<size_t> rows;
        for (size_t i = 0; i < requests.size(); ++i) {
          if (fresh[i]) rows.push_back(i);
        }
        for (size_t from = 0; from < rows.size(); from += kRowsPerStatement) {
          const size_t to = std::min(rows.size(), from + kRowsPerStatement);
          Result<uint64_t> first = append_rows(incarnation, requests, rows, from, to, batch);
          if (!first) return first.error();
          for (size_t k = from; k < to; ++k) out[rows[k]] = {*first + (k - from), Kind::kNew};
        }
        for (size_t i = 0; i < requests.size(); ++i) {
          if (const size_t j = same_as[i]; j != std::string::npos) {
            out[i] = {out[j].seq, same_request(requests[j].method, requests[j].target, requests[j].body, requests[i]) ? Kind::kAgain : Kind::kKeyReused};
          }
        }
        return out;
      },
      [&]() -> Outcome { return error("cannot append to the inbox"); });
}

Result<std::vector<InboxAppended>> PostgresCluster::appended_batch(std::string_view batch, int backend, int timeout_ms,
                                                                   const std::vector<InboxRequest>& requests) {
  using Kind = InboxAppended::Kind;
  Params pid;
  pid.integer(backend);
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (true) {
    ResultPtr r(exec_params(conn_,
                            "SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE pid = $1::integer AND pid "
                            "<> pg_backend_pid()",
                            pid));
    if (!result_ok(r.get())) return error("cannot end the connection whose append was cut");
    if (PQntuples(r.get()) == 0) break;  // gone: what it committed is all it ever will
    if (std::chrono::steady_clock::now() >= deadline) {
      return Error{"postgresql database " + where_ + ": cluster: server backend " + std::to_string(backend) +
                   " of an append that was cut has not ended within " + std::to_string(timeout_ms) + " ms"};
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  Params b;
  b.text(batch);
  ResultPtr r(exec_params(conn_, "SELECT seq FROM cluster_inbox WHERE batch = $1 ORDER BY seq", b));
  if (!result_ok(r.get())) return error("cannot read back an append that was cut");
  std::vector<uint64_t> rows;  // the entries it appended, in order: none when it did not commit
  for (int i = 0; i < PQntuples(r.get()); ++i) rows.push_back(static_cast<uint64_t>(cell_int(r.get(), i, 0)));
  // Matched to the requests as append() numbered them: in order, the new ones only.
  Result<std::vector<std::optional<KeyedEntry>>> known = keyed_entries(requests);
  if (!known) return known.error();
  std::vector<InboxAppended> out(requests.size());
  size_t next = 0;
  for (size_t i = 0; i < requests.size(); ++i) {
    if (requests[i].idempotency_key.empty()) {
      if (next < rows.size()) out[i] = {rows[next++], Kind::kNew};
      continue;
    }
    const std::optional<KeyedEntry>& e = (*known)[i];
    if (!e) continue;
    if (next < rows.size() && e->seq == rows[next]) {
      out[i] = {rows[next++], Kind::kNew};
    } else {
      out[i] = {e->seq, e->same ? Kind::kAgain : Kind::kKeyReused};
    }
  }
  return out;
}

Result<std::vector<InboxEntry>> PostgresCluster::unanswered(uint64_t after, size_t limit) {
  Params p;
  p.integer(static_cast<int64_t>(after));
  p.integer(static_cast<int64_t>(limit));
  ResultPtr r(exec_prepared(conn_, &prepared_, "unanswered", [] {
    return "SELECT seq, incarnation, method, target, caller, role, authenticated, content_type, body, "
           "COALESCE(started, '') FROM cluster_inbox WHERE answered IS NULL AND seq > $1::bigint ORDER BY seq "
           "LIMIT $2::bigint";
  }, p));
  if (!result_ok(r.get())) return error("cannot read the inbox");
  std::vector<InboxEntry> out;
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    InboxEntry e;
    e.seq = static_cast<uint64_t>(cell_int(r.get(), i, 0));
    e.incarnation = cell_int(r.get(), i, 1);
    e.request.method = cell_text(r.get(), i, 2);
    e.request.target = cell_text(r.get(), i, 3);
    e.request.caller = cell_text(r.get(), i, 4);
    e.request.role = cell_text(r.get(), i, 5);
    e.request.authenticated = cell_view(r.get(), i, 6) == "t";
    e.request.content_type = cell_text(r.get(), i, 7);
    e.request.body = bytes_of(r.get(), i, 8);
    e.started = cell_text(r.get(), i, 9);
    out.push_back(std::move(e));
  }
  return out;
}

Result<bool> PostgresCluster::answer(uint64_t seq, const InboxReply& reply, int64_t epoch) {
  return answer_all({{seq, reply}}, epoch);
}

Result<bool> PostgresCluster::answer_all(const std::vector<std::pair<uint64_t, InboxReply>>& answers, int64_t epoch) {
  // The first answer to each entry; an entry answered already keeps its answer.
  std::vector<const std::pair<uint64_t, InboxReply>*> rows;
  std::unordered_set<uint64_t> seen;
  for (const auto& a : answers) {
    if (seen.insert(a.first).second) rows.push_back(&a);
  }
  // kRowsPerStatement answers to a statement, each statement its own transaction: one
  // round trip. The fence (kAnswerFence's lock) holds the lead row until that transaction
  // commits, so a takeover waits for it; when the epoch no longer leads, nothing is
  // updated and nobody notified. The commit waits for the flush, as the session's
  // synchronous_commit says: an answer is read by a follower and passed on to its client,
  // and a refusal (an entry that changed nothing) lost with the database would leave its
  // entry unanswered and above the applied number, for the next leader to apply
  // (PostgresClusterCrashTest.AnAnswer_OutlivesADatabaseCrashRightAfterIt).
  for (size_t from = 0; from < rows.size(); from += kRowsPerStatement) {
    const size_t to = std::min(rows.size(), from + kRowsPerStatement);
    const std::initializer_list<const char*> kRow = {"::bigint", "::integer", "::text", "::bytea"};
    Params p;
    p.integer(epoch);
    p.text(channel("flowrt_answers"));
    for (size_t k = from; k < to; ++k) {
      const auto& [seq, reply] = *rows[k];
      p.integer(static_cast<int64_t>(seq));
      p.integer(reply.status);
      p.text(reply.content_type);
      p.text(reply.body);
    }
    // One statement for each count of answers, as its placeholders depend on it.
    auto sql = [&] {
      std::string values;
      for (size_t k = 0; k < to - from; ++k) {
        values += (k == 0 ? "" : ", ") + placeholders(static_cast<int>(2 + k * kRow.size()), kRow);
      }
      return std::string("WITH fence AS (") + kAnswerFence +
             "), recorded AS (UPDATE cluster_inbox AS i SET status = a.status, reply_type = a.reply_type, "
             "reply = a.reply, answered = clock_timestamp() FROM (VALUES " +
             values +
             ") AS a(seq, status, reply_type, reply) WHERE i.seq = a.seq AND i.answered IS NULL AND "
             "EXISTS (SELECT 1 FROM fence) RETURNING 1) "
             "SELECT EXISTS (SELECT 1 FROM fence), "
             "CASE WHEN EXISTS (SELECT 1 FROM fence) THEN pg_notify($2::text, '') END";
    };
    ResultPtr r(exec_prepared(conn_, &prepared_, "answer_" + std::to_string(to - from), sql, p));
    if (!result_ok(r.get()) || PQntuples(r.get()) != 1) {
      return error("cannot answer inbox entries " + std::to_string(rows[from]->first) + " to " +
                   std::to_string(rows[to - 1]->first));
    }
    if (cell_view(r.get(), 0, 0) != "t") return false;  // fenced: nothing written
  }
  return true;
}

Result<std::vector<std::pair<uint64_t, InboxReply>>> PostgresCluster::answers(const std::vector<uint64_t>& seqs) {
  std::vector<std::pair<uint64_t, InboxReply>> out;
  if (seqs.empty()) return out;
  std::string list;
  for (size_t i = 0; i < seqs.size(); ++i) list += (i ? "," : "") + std::to_string(seqs[i]);
  Params p;
  p.text(list);
  ResultPtr r(exec_prepared(conn_, &prepared_, "answers", [] {
    return "SELECT seq, status, reply_type, reply FROM cluster_inbox WHERE seq = "
           "ANY(string_to_array($1::text, ',')::bigint[]) AND answered IS NOT NULL";
  }, p));
  if (!result_ok(r.get())) return error("cannot read the inbox's answers");
  for (int i = 0; i < PQntuples(r.get()); ++i) {
    InboxReply a;
    a.status = static_cast<int>(cell_int(r.get(), i, 1));
    a.content_type = cell_text(r.get(), i, 2);
    a.body = bytes_of(r.get(), i, 3);
    out.emplace_back(static_cast<uint64_t>(cell_int(r.get(), i, 0)), std::move(a));
  }
  return out;
}

Result<std::optional<InboxStatus>> PostgresCluster::entry(uint64_t seq) {
  Params p;
  p.integer(static_cast<int64_t>(seq));
  ResultPtr r(exec_params(conn_,
                          "SELECT incarnation, method, target, caller, " FLOWRT_PG_ISO("accepted") ", answered IS NOT NULL, status, "
                          "reply_type, reply, COALESCE(" FLOWRT_PG_ISO("answered") ", ''), COALESCE(idem_key, ''), "
                          "COALESCE(started, '') FROM cluster_inbox WHERE seq = "
                          "$1::bigint",
                          p));
  if (!result_ok(r.get())) return error("cannot read inbox entry " + std::to_string(seq));
  if (PQntuples(r.get()) == 0) return std::optional<InboxStatus>();
  InboxStatus s;
  s.entry.seq = seq;
  s.entry.incarnation = cell_int(r.get(), 0, 0);
  s.entry.request.method = cell_text(r.get(), 0, 1);
  s.entry.request.target = cell_text(r.get(), 0, 2);
  s.entry.request.caller = cell_text(r.get(), 0, 3);
  s.entry.request.idempotency_key = cell_text(r.get(), 0, 10);
  s.entry.started = cell_text(r.get(), 0, 11);
  s.accepted = cell_text(r.get(), 0, 4);
  if (cell_view(r.get(), 0, 5) == "t") {
    s.reply = InboxReply{static_cast<int>(cell_int(r.get(), 0, 6)), cell_text(r.get(), 0, 7), bytes_of(r.get(), 0, 8)};
    s.answered = cell_text(r.get(), 0, 9);
  }
  return std::optional<InboxStatus>(std::move(s));
}

Status PostgresCluster::prune(int64_t seconds, int64_t keyed_seconds) {
  Params p;
  p.integer(seconds);
  p.integer(keyed_seconds);
  p.integer(kPruneRows);
  while (true) {
    ResultPtr r(exec_params(conn_,
                            "DELETE FROM cluster_inbox WHERE seq IN (SELECT seq FROM cluster_inbox WHERE answered < "
                            "clock_timestamp() - (CASE WHEN idem_key IS NULL THEN $1::bigint ELSE $2::bigint END) * "
                            "interval '1 second' ORDER BY seq LIMIT $3::bigint)",
                            p));
    if (!result_ok(r.get())) return error("cannot prune the inbox");
    if (std::strtoll(PQcmdTuples(r.get()), nullptr, 10) < kPruneRows) return Status::ok();
  }
}

}  // namespace flowrt
