// KeyedWrites: the writes sent to one engine with an idempotency key (a single server's
// Idempotency-Key, server/keyed_write_handler.h), so that the same write sent again gets the
// first one's answer and is applied once.
//
// A write is claimed before it runs (claim): a new key is held while it runs, and a second
// sending meanwhile is told so (kInFlight). While a Scope lives on the running thread, the
// write's first commit carries the key's mark (a KeyedWritePut with status 0) in its own
// journal entry, so the mark is durable exactly when the write's first change is: after a
// crash, a key is either unknown (nothing of its write is there; run it) or marked (it was
// applied). finish() then keeps the answer, in a journal entry of its own whose position it
// returns: a caller that gives the answer once that is durable (as the server does) gives
// it again after any crash; a crash before it is durable leaves the mark, which answers
// "applied, answer not kept". A write that starts a context (a call or a test run: it says
// so with note_starts_context) has that context queued by its first commit, and the mark
// then keeps the context's id ({"context_id"}), so that "applied, answer not kept" tells it
// after a crash too, and in this engine when the write ends unanswered without telling
// finish() what it started (it failed after it committed). A write whose outcome
// the server cannot tell (its answer a 503 or 504) keeps the mark when it committed and is
// forgotten when it did not. Keys are kept for kKeepMs after their write was applied or
// answered; pruned at most once a minute, in memory and in the store (KeyedWritePrune).
// Every key kept is in memory, its answer's body too, within a budget of bytes
// (set_limit_bytes): a new key that would pass it is refused (kFull) once the keys past
// kKeepMs are pruned, so that no client can grow the server without end; the keys kept
// stay answered. Keys restored from the store are kept whatever the budget.
//
// Without a journal (the memory store) the same holds in memory, for the engine's life.
//
// Thread-safety: every method from any thread (one mutex); Scope and note_commit on the
// thread that runs the write, note_commit under the commit lock. Owned by EngineCore.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "base/thread_annotations.h"
#include "plans/time.h"
#include "store/store.h"

namespace flowrt {

class EngineClock;
class Journal;

class KeyedWrites {
 public:
  // How long a key is kept after its write was applied or answered: a day.
  static constexpr DurationMs kKeepMs = 24 * 3600 * 1000;

  struct Answer {
    int status = 0;
    std::string headers;
    std::string body;
  };
  enum class Found : uint8_t {
    kNew,                // claimed: run the write under a Scope, then finish()
    kAnswered,           // the same request was answered: `answer`
    kAppliedUnanswered,  // the same request was applied; its answer was not kept
    kOtherRequest,       // the key was used for another request
    kInFlight,           // the same key is being written now
    kFull,               // a new key, refused: the keys kept fill the budget (limit_bytes)
  };
  struct Claim {
    Found found = Found::kNew;
    Answer answer;  // kAnswered; kAppliedUnanswered: its body says what the write started, if known
  };

  explicit KeyedWrites(const EngineClock& clock) : clock_(clock) {}
  KeyedWrites(const KeyedWrites&) = delete;
  KeyedWrites& operator=(const KeyedWrites&) = delete;

  // Set once the store is open (a durable store only): where marks, answers and prunes go.
  void set_journal(Journal* journal) EXCLUDES(mu_);
  // The keys the store kept (before any claim).
  void restore(std::vector<KeyedWritePut> kept) EXCLUDES(mu_);

  // What (caller, key) is, for a request whose digest is `request`; kNew claims it.
  Claim claim(const std::string& caller, const std::string& key, const std::string& request) EXCLUDES(mu_);
  // Ends a claim: keeps `answer`, or (nullopt: its outcome is not known) keeps the mark
  // when `committed`, else forgets the key. `started` (JSON of an object, or empty) is what
  // an unanswered write is known to have started: kept and journaled with its mark, and
  // given back with kAppliedUnanswered; empty, what its mark keeps (a call's context) is
  // kept instead. Returns the journal position that holds the answer
  // (Engine::durable_state tells when it is durable); 0 when no answer was journaled.
  uint64_t finish(const std::string& caller, const std::string& key, std::optional<Answer> answer, bool committed,
                  std::string started = "") EXCLUDES(mu_);
  // How many keys are kept (in flight included).
  size_t size() const EXCLUDES(mu_);
  // The bytes the keys kept take, as counted against the budget.
  size_t bytes() const EXCLUDES(mu_);

  // The budget for the keys kept, in bytes (kDefaultLimitBytes until set).
  static constexpr size_t kDefaultLimitBytes = size_t{64} << 20;
  void set_limit_bytes(size_t limit) EXCLUDES(mu_);
  size_t limit_bytes() const EXCLUDES(mu_);

  // While one lives on a thread, the first commit made on it carries the claimed key's mark.
  class Scope {
   public:
    Scope(KeyedWrites& writes, std::string caller, std::string key, std::string request);
    ~Scope();
    Scope(const Scope&) = delete;
    Scope& operator=(const Scope&) = delete;
    // Whether a commit was made on this thread under it.
    bool committed() const { return committed_; }

   private:
    friend class KeyedWrites;
    KeyedWrites& writes_;
    std::optional<StoreChange> mark_;  // until the first commit takes it
    std::string marked_started_;       // what the mark journaled as started ({"context_id"}), if anything
    std::string marked_caller_;        // the mark's caller and key, kept with marked_started_
    std::string marked_key_;
    bool committed_ = false;
    bool starts_context_ = false;  // note_starts_context was called under it
    Scope* previous_;
  };
  // Called by a write that starts a context (Engine::call_flow, Engine::test_flow) before
  // it commits: the mark of the calling thread's Scope, if one lives, is to keep the id of
  // the context its first commit queues. Without a Scope it does nothing.
  static void note_starts_context();
  // Called by the commit path for each commit, under the commit lock: the first commit
  // under the calling thread's Scope appends its mark to `changes` (null: no journal).
  // `first_queued` is the id of the first context the commit queues (empty: none).
  static void note_commit(std::vector<StoreChange>* changes, std::string_view first_queued = {});

 private:
  struct Kept {
    std::string request;
    int status = -1;  // -1: in flight; 0: applied, not answered; else the answer's
    std::string headers;
    std::string body;  // the answer's; status 0: what the write started (JSON), or empty;
                       // in flight: what its mark keeps as started, once it committed
    TimeMs at = 0;
  };
  // The Scope of an in-flight key ended with `marked_started` in its mark: kept with the key,
  // as what finish() keeps when it is told of nothing started.
  void note_marked_started(const std::string& caller, const std::string& key, std::string marked_started)
      EXCLUDES(mu_);
  // What a kept key counts against the budget: its strings and the map's node.
  static size_t cost(const std::string& caller, const std::string& key, const Kept& k);
  // Forgets what is past kKeepMs: at most once a minute, or (`force`, when the budget is
  // full) once a second.
  void prune_locked(TimeMs now, bool force) REQUIRES(mu_);

  const EngineClock& clock_;
  mutable Mutex mu_;
  Journal* journal_ GUARDED_BY(mu_) = nullptr;
  std::map<std::pair<std::string, std::string>, Kept> kept_ GUARDED_BY(mu_);  // by (caller, key)
  TimeMs last_prune_ GUARDED_BY(mu_) = 0;
  size_t bytes_ GUARDED_BY(mu_) = 0;  // the sum of cost() over kept_
  size_t limit_bytes_ GUARDED_BY(mu_) = kDefaultLimitBytes;
};

}  // namespace flowrt
