// Journal: the one writer between the engine and a durable Store (group commit).
//
// Every change of durable state is appended here as a JournalEntry, in one order: a commit
// appends its changes under the commit lock, in commit sequence order; changes that are
// not commits (a context started or ended, a definition saved) append with the journal's
// own mutex. Appending is a move into a vector: no I/O, no serialisation, so nothing slow
// runs under the commit lock. One writer thread takes everything appended since its last
// write, turns it into one StoreBatch (building the JSON of contexts there, off the commit
// path) and writes it as one transaction, as leveldb's writer queue batches the writes of
// many threads into one log append.
//
// The durability watermark: what an entry would set going (contexts it queued, contexts a
// write or a lock grant woke) waits in the entry and is delivered only after the batch
// holding it is durable, in append order. So no context ever acts on a change that a
// crash could still lose, and the event queue keeps commit order. Finishing a durable batch
// (waking its waiters, delivering) overlaps the store's work on the next one when that is
// ready: the writer takes the next batch first and finishes the last one while the store
// has it (Store::write_overlapped; on PostgreSQL, once its first statements are sent), else
// at once. Batches are still written one at a time, each after the last is durable.
// A deferred wake-up counts as engine work from its commit until it is delivered, so
// settle() never mistakes the moment in between for idleness. Operations from outside
// wait for their entry to be durable (wait_durable) before they return, except with the
// durability `off`.
//
// Memory bounded by live work: once the batch holding a context's final record is durable,
// the writer lets the context go (ContextStore::release; the archive likewise), and reads
// find it in the store. With history_retention the writer also puts a HistoryPrune at the
// end of every batch: the store deletes the ended contexts past the age or the count in
// the batch's own transaction.
//
// A failed write (a full disk, an I/O error) is retried with backoff, and nothing after
// it is delivered meanwhile; while it fails, failure() says why and the engine refuses new
// operations from outside. With EngineOptions::store_give_up_ms, a write failing for longer
// than that gives the store up: nothing more is written or delivered (the writer drops
// what is appended from then on, counting its work done, so that settle() returns), every
// wait_durable returns an error, and on_store_lost is called. stop() writes what is left
// and ends the thread.
//
// Thread-safety: append, wait_durable and the readers from any thread; the Journal owns
// its thread. Lock order: the commit lock, then the journal's mutex (never the reverse:
// the writer delivers without its mutex held).
#pragma once

#include <atomic>
#include <chrono>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <thread>
#include <vector>

#include "actions/action.h"
#include "base/thread_annotations.h"
#include "runtime/properties.h"
#include "store/store.h"

namespace flowrt {

// The store's sync mode for a `durability` property.
SyncMode sync_mode_of(Durability d);

class Context;
class EngineCore;

// A wake-up held back until the change that caused it is durable.
struct DeferredWake {
  std::shared_ptr<Context> context;
  uint64_t wait_id = 0;
  WakeUp wake;
};

// A parked context whose checkpoint this entry carries: once durable, it may rest
// (Context::rest_when) in the wait `wait_id`.
struct RestCandidate {
  std::shared_ptr<Context> context;
  uint64_t wait_id = 0;
};

struct JournalEntry {
  std::vector<StoreChange> changes;              // in order
  std::vector<std::shared_ptr<Context>> queued;  // contexts queued: a row each (ContextPut)
  std::vector<std::shared_ptr<Context>> started; // contexts that took their first step
  // Contexts that ended: their final record is a ContextUpdate in `changes`, built by the
  // thread that ended them; listed here so that they leave memory once it is durable.
  std::vector<std::shared_ptr<Context>> ended;
  std::vector<uint64_t> archived;                // seqs in the archive that leave once durable
  // Delivered once durable, in this order: contexts pushed to the event queue, then wake-ups.
  std::vector<Context*> pushes;
  std::vector<DeferredWake> wakes;
  std::vector<RestCandidate> rests;              // told once durable, after the wake-ups
  bool has_counters = false;                     // appended under the commit lock
  StoreCounters counters;
  // A commit that a context's built-in step made: written only together with the
  // checkpoint of that context past the step (Journal::release), so that after a crash the
  // write and the context's progress past it are both there or both not.
  bool held = false;
  // Released with later entries of the same step: a batch never ends after it, so that the
  // step's commits and its checkpoint are written in one transaction.
  bool continues = false;
  // The operation whose commit this is (OperationTag::current() on the committing thread),
  // 0: none; the batch holding it carries the highest (StoreBatch::applied_op).
  uint64_t operation = 0;
  // The id of the context this commit queued, when it is the first commit of an operation
  // that starts one (OperationTag::note_starts_context); empty otherwise.
  std::string operation_started;

  bool empty() const {
    return changes.empty() && queued.empty() && started.empty() && ended.empty() && archived.empty() && pushes.empty() &&
           wakes.empty() && rests.empty() && !has_counters;
  }
};

class Journal {
 public:
  // `counters`: the engine's counters as it opens the store (written with the first batch).
  Journal(EngineCore& core, Store& store, const StoreCounters& counters);
  ~Journal();
  Journal(const Journal&) = delete;
  Journal& operator=(const Journal&) = delete;

  void start();
  // Writes everything appended (trying a failing write a few more times), delivers it,
  // and ends the writer thread.
  void stop();

  // Appends an entry (an empty one too: it writes the counters and the clock). Returns its
  // position (1, 2, ...). Entries are written in append order.
  uint64_t append(JournalEntry entry) EXCLUDES(mu_);
  // The position of the last entry appended.
  uint64_t appended() const { return appended_.load(std::memory_order_acquire); }
  // The position of the last entry written and delivered.
  uint64_t durable() const { return durable_.load(std::memory_order_acquire); }
  // Lets the held entries of one step (`positions`, ascending) be written, in one batch,
  // with `checkpoint` (a ContextUpdate carrying the context's checkpoint past the step, or
  // nothing) appended to the last. Called by the thread running the context that made the
  // commits, right after its step.
  void release(const std::vector<uint64_t>& positions, std::optional<StoreChange> checkpoint) EXCLUDES(mu_);
  // Blocks until the entry at `position` is durable. An error when the journal stopped
  // before it could be written.
  Status wait_durable(uint64_t position) EXCLUDES(mu_);
  // As wait_durable, for at most until `deadline` (steady clock): nothing when the entry
  // is neither durable nor known never to be by then.
  std::optional<Status> wait_durable_until(uint64_t position, std::chrono::steady_clock::time_point deadline)
      EXCLUDES(mu_);
  // Without waiting: OK when the entry at `position` is durable, an error when it never
  // will be (the journal stopped first), nothing while it may still be.
  std::optional<Status> reached(uint64_t position) EXCLUDES(mu_);
  // Calls `fn` once, when the entry at `position` is durable or the journal stopped before
  // it was: at once on the calling thread when that is so already, else on the writer
  // thread (or the one stopping the journal), without the journal's locks held. `fn` must
  // be quick (it wakes someone) and must not call the journal.
  void when_durable(uint64_t position, std::function<void()> fn) EXCLUDES(mu_);
  // Blocks until what the entry at `position` set going (contexts queued, wake-ups) has
  // been delivered. A simulation waits so after each step: its runs stay exact replays.
  void wait_delivered(uint64_t position) EXCLUDES(mu_);
  // Contexts appended to be queued and not yet delivered (the max_queued_events budget
  // counts them with the event queue).
  size_t undelivered() const { return undelivered_.load(std::memory_order_acquire); }
  // Why the last write failed, while writes fail; OK otherwise.
  Status failure() const EXCLUDES(fail_mu_);
  // Batches written so far (for tests of group commit and for bench figures).
  uint64_t batches() const { return batches_.load(std::memory_order_relaxed); }
  // Writes that failed so far, each try counted (for tests of the retries' back-off).
  uint64_t failed_writes() const { return failed_writes_.load(std::memory_order_relaxed); }

 private:
  void run();
  // The end of the entries the writer may take: up to the first one still held (its
  // step's checkpoint has not joined it), never between the commits of one step; once
  // stopping, holds no longer count (no step will release them).
  std::vector<JournalEntry>::iterator ready_end() REQUIRES(mu_);
  // Writes `entries` as one batch, retrying while it fails. kStopping: it gave up because
  // the journal is stopping; kStoreLost: the store failed past store_give_up_ms.
  // `meanwhile` is called once, while the store works on the batch (or before it writes,
  // for a store that cannot overlap; or after the first try, when that failed early).
  enum class Written { kYes, kStopping, kStoreLost };
  Written write(std::vector<JournalEntry>& entries, const StoreCounters& counters,
                const std::function<void()>& meanwhile);
  // The batch holding `entries`, up to position `last`, is durable: wakes its waiters,
  // calls its watchers, lets its ended contexts go and delivers what it holds.
  void finish_batch(std::vector<JournalEntry>& entries, uint64_t last) EXCLUDES(mu_);
  StoreBatch batch_of(std::vector<JournalEntry>& entries, const StoreCounters& counters);
  void deliver(std::vector<JournalEntry>& entries);
  // Once the store is given up: drops `entries` and whatever is appended after them until
  // stop() (nothing more is written or delivered, but their work is no longer counted,
  // so settle() returns). Called by the writer thread without mu_.
  void drop_until_stopped(std::vector<JournalEntry>& entries) EXCLUDES(mu_);
  void drop(std::vector<JournalEntry>& entries);
  // The batch holding `entries` is durable: the contexts that ended in it leave memory.
  void release(const std::vector<JournalEntry>& entries);
  void set_failure(Status s) EXCLUDES(fail_mu_);
  // Why an entry will never be durable, once the writer stopped (stopped_).
  Status never_written() const REQUIRES(mu_);
  // Calls the when_durable callbacks up to `position` (all of them: UINT64_MAX).
  void call_watchers(uint64_t position) EXCLUDES(mu_);

  EngineCore& core_;
  Store& store_;
  Mutex mu_;
  CondVar work_cv_;      // the writer waits on it for entries (or the stop)
  // A thread in wait_durable(_until), in sleepers_ by the position it waits for: the
  // writer wakes it once that position is durable (or the journal stopped), not at every
  // batch, so that many threads waiting for later batches are not woken to sleep again.
  struct DurableSleeper {
    CondVar cv;
    bool woken = false;  // GUARDED_BY(mu_); set as the writer takes it out of sleepers_
  };
  // Wakes (and takes out) the sleepers waiting for positions up to `position`.
  void wake_durable(uint64_t position) REQUIRES(mu_);
  // wait_durable(_until)'s sleep, as a DurableSleeper: OK once `position` is durable, an
  // error once it never will be, nothing when `deadline` (none: no limit) came first.
  std::optional<Status> sleep_until_durable(uint64_t position,
                                            std::optional<std::chrono::steady_clock::time_point> deadline)
      REQUIRES(mu_);
  std::multimap<uint64_t, DurableSleeper*> sleepers_ GUARDED_BY(mu_);
  CondVar delivered_cv_;  // wait_delivered waits on it
  std::vector<JournalEntry> pending_ GUARDED_BY(mu_);
  std::multimap<uint64_t, std::function<void()>> watchers_ GUARDED_BY(mu_);  // when_durable's, by position
  StoreCounters counters_ GUARDED_BY(mu_);  // the latest, from entries appended under the commit lock
  bool stopping_ GUARDED_BY(mu_) = false;
  bool stopped_ GUARDED_BY(mu_) = false;    // the writer ended; what is not durable now never will be
  bool gave_up_ GUARDED_BY(mu_) = false;    // it ended because the store failed past the limit
  SyncMode sync_ = SyncMode::kNormal;       // the writer thread's
  std::atomic<uint64_t> appended_{0};
  std::atomic<uint64_t> durable_{0};
  std::atomic<uint64_t> delivered_{0};
  std::atomic<size_t> undelivered_{0};
  std::atomic<uint64_t> batches_{0};
  std::atomic<uint64_t> failed_writes_{0};
  mutable Mutex fail_mu_;
  Status failure_ GUARDED_BY(fail_mu_);
  std::thread thread_;
};

}  // namespace flowrt
