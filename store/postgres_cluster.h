// PostgresCluster: what several flowrt nodes on one PostgreSQL store share to work as one
// engine (docs/SCALING.md, "Several nodes"): who is in the cluster (leases), who leads
// (an epoch that fences the leader's writes) and the inbox of operations that nodes which
// do not lead accepted for the leader to apply, in one order.
//
// Tables, in the store's schema next to its own (created when missing, in one transaction
// under an advisory lock, so nodes starting together do not race):
//  - cluster_nodes: one row per node incarnation (a process that joined): its name,
//    address, host, pid, and lease_until, which its heartbeat moves on, with what it
//    runs (NodeRuns). A node whose lease_until is past is dead to the cluster, whatever
//    it thinks.
//  - cluster_lead: one row: the leading incarnation, its epoch, since when, and
//    applied_op, the last inbox operation whose effects are durable (the leader's store
//    writes it in each batch's transaction: PostgresStore's fence). Taking the lead
//    increments the epoch, in a transaction that locks the row; the leader's every store
//    batch updates that row only where the epoch is still its own, first in the batch, so
//    a takeover and a batch are serialised by the row lock: a batch either committed
//    before the takeover (and the new leader loads it) or is refused (fenced).
//  - cluster_inbox_head, cluster_inbox: the inbox. An append takes its numbers from the
//    head row (UPDATE ... RETURNING, which locks it until the append commits), so the
//    numbers are given in commit order and a reader never sees N + 1 before N: one order
//    for the operations of every node.
//
// The clock of leases is the database's (clock_timestamp()), never a node's.
//
// Thread-safety: none; one connection each. A node opens one per thread that needs one.
// Ownership: owns its connection.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_set>
#include <vector>

#include "plans/result.h"

struct pg_conn;

namespace flowrt {

// What a node ran when it last renewed its lease: the leader's engine's counts; a
// follower runs no contexts and reports zeros.
struct NodeRuns {
  int64_t runnable_contexts = 0;  // queued, ready to run or running
  int64_t waiting_contexts = 0;   // parked (a wait, a record condition, a lock)
  int64_t queued_events = 0;      // trigger events not started yet
  bool operator==(const NodeRuns&) const = default;
};

// A node as cluster_nodes shows it.
struct ClusterNodeRow {
  int64_t incarnation = 0;
  std::string name;
  std::string address;       // where its HTTP API listens, HOST:PORT
  std::string host;          // the machine
  int64_t pid = 0;
  std::string started;       // ISO 8601, the database's clock
  std::string heartbeat;     // its last heartbeat
  std::string lease_until;
  bool alive = false;        // lease_until is ahead of the database's clock
  bool left = false;         // it stopped cleanly
  NodeRuns runs;             // as of its last heartbeat (zeros until its first)
};

// The lead row.
struct ClusterLead {
  int64_t incarnation = 0;   // 0: no one leads
  int64_t epoch = 0;
  std::string since;
  uint64_t applied_op = 0;
};

// An HTTP request a node accepted for the leader.
struct InboxRequest {
  std::string method;
  std::string target;
  std::string caller;        // the caller's name as the accepting node authenticated it
  std::string role;          // its role
  bool authenticated = false;  // false: no valid token (only public routes answer it)
  std::string content_type;
  std::string body;
  // The client's Idempotency-Key ("" none). With the caller's name it names one entry for
  // as long as the inbox keeps it: an append of a request whose (caller, key) is there
  // adds nothing and gets that entry (InboxAppended).
  std::string idempotency_key;
};

// What an append did with one request.
struct InboxAppended {
  enum class Kind {
    kNew,        // appended now, as entry `seq`
    kAgain,      // its key names entry `seq`, the same request (method, target, body)
    kKeyReused,  // its key names entry `seq`, another request: nothing appended
    kNone,       // (a read-back) not appended, and no entry has its key
  };
  uint64_t seq = 0;
  Kind kind = Kind::kNone;
  bool operator==(const InboxAppended&) const = default;
};

struct InboxEntry {
  uint64_t seq = 0;
  int64_t incarnation = 0;   // the node that accepted it
  InboxRequest request;
  std::string started;       // read by unanswered() and entry(): the context it started, once durable
};

// The leader's answer to an inbox entry.
struct InboxReply {
  int status = 0;
  std::string content_type;
  std::string body;
};

// One inbox entry as GET /api/cluster/operations/N shows it.
struct InboxStatus {
  InboxEntry entry;
  std::string accepted;           // when, the database's clock
  std::optional<InboxReply> reply;  // none yet
  std::string answered;
};

class PostgresCluster {
 public:
  // How long a lease lasts past each heartbeat unless a node says otherwise, ms.
  static constexpr int kDefaultLeaseMs = 3000;
  // How long a statement of a cluster session may run (statement_timeout), unless the URL,
  // the role or the database sets a limit of its own: then that one stands. The cluster's
  // statements are short (a lease, an append, a page of the inbox, kPruneRows of a prune),
  // so 10 s is far beyond what any takes on a database that answers; a table locked by an
  // operator (`LOCK TABLE`, an `ALTER TABLE` queued) would otherwise hold a node's thread,
  // and its stop, for as long as the lock is held.
  static constexpr int kStatementTimeoutMs = 10000;
  // How many inbox entries one statement of prune() deletes at most.
  static constexpr int64_t kPruneRows = 10000;

  // Connects to `url` (the store's) and creates the cluster's tables when missing. The
  // session's statements are cancelled by the server after `statement_timeout_ms` (tests
  // pass a shorter limit) unless the URL, the role or the database sets statement_timeout:
  // then that limit stands. A statement cancelled so never committed: the connection stays
  // usable (connected()), and an append that failed so appended nothing.
  static Result<std::unique_ptr<PostgresCluster>> connect(const std::string& url,
                                                          int statement_timeout_ms = kStatementTimeoutMs);
  ~PostgresCluster();
  PostgresCluster(const PostgresCluster&) = delete;
  PostgresCluster& operator=(const PostgresCluster&) = delete;

  // Registers a new incarnation of node `name`, its lease running `lease_ms` from now.
  Result<int64_t> join(std::string_view name, std::string_view address, int lease_ms);
  // Where the incarnation's API listens, once it knows.
  Status set_address(int64_t incarnation, std::string_view address);
  // Moves the incarnation's lease on and notes what it runs now; an error when it has
  // left (or its row is gone).
  Status heartbeat(int64_t incarnation, int lease_ms, const NodeRuns& runs = {});
  // Takes the lead for `incarnation` when no live node has it (none leads, or the leader's
  // lease ran out, or it left): the new epoch and the applied_op it starts from. nullopt
  // when a live node leads (that node's incarnation is in lead()).
  Result<std::optional<ClusterLead>> try_lead(int64_t incarnation);
  Result<ClusterLead> lead();
  // A clean stop: the lease ends now, and the lead (if this incarnation has it) is free.
  Status leave(int64_t incarnation);
  // Every incarnation that has not left, and those that left in the last hour, newest first.
  Result<std::vector<ClusterNodeRow>> nodes();

  // Appends requests to the inbox (one transaction): what became of each, in order (new
  // entries are numbered in order; a request with an idempotency key already in the inbox,
  // or earlier in `requests`, is not appended again). `batch` names this append (unique in
  // the cluster: the node's incarnation and a count) so that appended_batch can tell
  // whether it committed when the connection is lost during it.
  Result<std::vector<InboxAppended>> append(int64_t incarnation, const std::vector<InboxRequest>& requests,
                                            std::string_view batch);
  // What the append named `batch` of `requests`, made on a connection whose server backend
  // was `backend` and that was lost during the append, did with each: as append() would
  // have said when it committed; kNone for those it did not append, unless their key
  // names an entry (an earlier one). The outcome is known only once that backend has
  // ended (it may still be committing, or wait in its transaction for a client that is
  // gone): it is ended here, and waited for up to `timeout_ms` (an error then: the outcome
  // is not known).
  Result<std::vector<InboxAppended>> appended_batch(std::string_view batch, int backend, int timeout_ms,
                                                    const std::vector<InboxRequest>& requests);
  // False once the connection is lost (a failed statement's transaction then may or may
  // not have committed); true while the server answers it.
  bool connected() const;
  // Entries after `after` without an answer, oldest first, at most `limit`.
  Result<std::vector<InboxEntry>> unanswered(uint64_t after, size_t limit);
  // Records the answer of the leader of `epoch` to entry `seq` (once: a second answer is
  // ignored) and notifies. Fenced as the leader's store batches are: false, and nothing
  // recorded, when `epoch` no longer leads (another node took the lead since). The check
  // locks the lead row for the transaction, so a takeover and an answer are serialised: a
  // stale leader, which may have refused or failed an entry the next leader applies, can
  // never answer it.
  Result<bool> answer(uint64_t seq, const InboxReply& reply, int64_t epoch);
  // The same for many: one statement, transaction and notification for up to a few
  // hundred answers (more take a transaction for each such share, each fenced alike; false
  // from the first fenced one, and those before it stay recorded). An entry answered twice
  // keeps the first answer. Each commit waits for the database's flush (the session's
  // synchronous_commit): a follower passes an answer on as soon as it reads it, so it must
  // outlive a crash of the database (postgres_inbox.cpp says why).
  Result<bool> answer_all(const std::vector<std::pair<uint64_t, InboxReply>>& answers, int64_t epoch);
  // The fence of answer_all ($1: the epoch): FOR KEY SHARE, which the takeover's FOR UPDATE
  // waits for and the leader's own store batches (an UPDATE of the row) do not.
  static constexpr const char* kAnswerFence =
      "SELECT 1 FROM cluster_lead WHERE id = 1 AND epoch = $1::bigint FOR KEY SHARE";
  // The answers among `seqs` that are there.
  Result<std::vector<std::pair<uint64_t, InboxReply>>> answers(const std::vector<uint64_t>& seqs);
  // Entry `seq` (without its body; with its key), nullopt when there is none (never, or pruned).
  Result<std::optional<InboxStatus>> entry(uint64_t seq);
  // Deletes answered entries older than `seconds`, oldest first, kPruneRows to a
  // statement (each its own transaction, well within the statement limit however many
  // entries are due).
  // Entries with an idempotency key are kept `keyed_seconds` (the key is remembered as
  // long as its entry).
  Status prune(int64_t seconds, int64_t keyed_seconds);

  // LISTEN on `channel` ("flowrt_inbox": appends, "flowrt_answers": answers; the schema's
  // name is part of the channel, so clusters in other schemas stay apart).
  Status listen(std::string_view channel);
  // Waits up to `timeout_ms` for notifications; true when any came (their payloads dropped).
  Result<bool> wait(int timeout_ms);

  // The server backend of this connection (pg_backend_pid()); for tests that cut it.
  int backend_pid() const;
  // A setting of this connection's session (current_setting), as the server shows it;
  // for tests that check what a session was given.
  Result<std::string> setting(std::string_view name);
  // The statements prepared on this connection, each with how many times the server
  // planned it for its parameters' values (pg_prepared_statements.custom_plans); for tests.
  Result<std::map<std::string, int64_t>> prepared_statements();
  const std::string& schema() const { return schema_; }

 private:
  PostgresCluster(pg_conn* conn, std::string where) : conn_(conn), where_(std::move(where)) {}
  Status create_tables();
  // The entry a request's (caller, key) names: its number and whether the request is the
  // same (method, target, body).
  struct KeyedEntry {
    uint64_t seq = 0;
    bool same = false;
  };
  // For each of `requests`, the entry its key names (nullopt: none, or no key); one
  // statement for all.
  Result<std::vector<std::optional<KeyedEntry>>> keyed_entries(const std::vector<InboxRequest>& requests);
  // Appends requests[rows[from]] .. requests[rows[to - 1]] as new entries in one statement:
  // numbered on from the head row (which stays locked until the transaction commits, so
  // appends are numbered in commit order), inserted, and the leader notified. The first
  // entry's number; the rest follow in order.
  Result<uint64_t> append_rows(int64_t incarnation, const std::vector<InboxRequest>& requests,
                               const std::vector<size_t>& rows, size_t from, size_t to, std::string_view batch);
  Error error(std::string_view what) const;
  std::string channel(std::string_view name) const;

  pg_conn* conn_;
  std::string where_;
  std::string schema_;
  // The statements prepared on conn_ (exec_prepared, in the .cpp): the inbox's appends,
  // reads and answers, each parsed and planned once per connection.
  std::unordered_set<std::string> prepared_;
};

}  // namespace flowrt
