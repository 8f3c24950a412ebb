// CommitEntry: what one commit did, in the order of the one commit path.
//
// Every operation that changes the engine's records or starts flows (an insert, update or
// delete, by id or each record of a `where`; a named event; a flow start on request or by
// schedule) commits under the Dispatcher's commit lock and takes the next commit sequence
// number: one total order of commits, which the contexts it starts carry
// (Context::commit_seq) and which a log of commits (the durable store's) follows. Plain
// data; borrowed for the duration of the observer's call.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "flowrt/plans/value.h"

namespace flowrt {

class Context;

struct CommitEntry {
  enum class Kind : uint8_t { kInsert, kUpdate, kDelete, kEvent, kStart };
  uint64_t seq = 0;              // 1, 2, 3, ... in commit order
  Kind kind = Kind::kInsert;
  std::string_view table;        // record operations
  const Value* record = nullptr;    // after an insert or update; as it was for a delete
  const Value* previous = nullptr;  // before an update
  const Value* event = nullptr;     // kEvent: the event's name
  const Context* origin = nullptr;  // the context whose step made it; null from outside
  std::vector<const Context*> started;  // the contexts it queued, in seq order
};

// Called under the commit lock for every commit, in commit order (EngineOptions::on_commit).
// It must be quick and must not call back into the engine.
using CommitObserver = std::function<void(const CommitEntry&)>;

// OperationTag: while one lives on a thread, the commits that thread makes carry its
// operation number (JournalEntry::operation), and the store batch that holds them says so
// (StoreBatch::applied_op). A cluster leader applies a forwarded operation under its inbox
// number this way, so that the number is durable exactly when the operation's effects are.
// Scoped to the thread that made it; tags do not nest (the inner one wins until it ends).
// A definition change (saved, published, activated) is tagged as a commit is.
// `on_first_commit`, when given, is called a single time: when the thread's first commit
// under the tag has its journal entry (under the commit lock for a commit; it must be
// quick and must not call the engine). The leader starts the next operation then, so
// operations commit in inbox order while their waits for durability overlap.
// An operation that starts a context (a call or a test run: Engine::call_flow and
// Engine::test_flow say so with note_starts_context) has that context queued by its first
// commit, and the commit's journal entry names it (JournalEntry::operation_started), so
// that a next leader answering the operation without applying it again can tell which
// context it started.
class OperationTag {
 public:
  explicit OperationTag(uint64_t operation, std::function<void()> on_first_commit = {});
  ~OperationTag();
  OperationTag(const OperationTag&) = delete;
  OperationTag& operator=(const OperationTag&) = delete;
  // The operation of the calling thread's live tag, 0 when none.
  static uint64_t current();
  // Called by a write that starts a context, before it commits: the calling thread's tag,
  // if one lives, is to name the context its first commit queues. Without a tag it does
  // nothing.
  static void note_starts_context();
  // Called by the commit path for each commit: the calling thread's operation (0 when it
  // has no tag), after telling the tag's on_first_commit of the first. `first_queued` is
  // the id of the first context the commit queues; `started` (when not null) is set to it
  // when this is the first commit of an operation that starts a context, else left as is.
  static uint64_t note_commit(std::string_view first_queued = {}, std::string* started = nullptr);

 private:
  uint64_t operation_;
  std::function<void()> on_first_commit_;
  bool committed_ = false;        // a commit was made under it
  bool starts_context_ = false;   // note_starts_context was called under it
  OperationTag* previous_;
};

}  // namespace flowrt
