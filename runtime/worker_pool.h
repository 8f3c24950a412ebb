// WorkerPool: the threads that run contexts.
//
// Work comes from three places: a worker's run-next slot (below), contexts made ready
// again (woken from a wait, or cancelled) in the ready queue, and new trigger events in the
// EventQueue; in that order. A semaphore holds one token per item in the two queues, so
// idle workers sleep and a push wakes exactly one. Shutdown order: stop() stops accepting
// work, wakes every worker and joins them; contexts still queued stay queued (the engine
// decides what happens to them), and a context in a slot goes back to the ready queue.
//
// Run-next slot: a context made ready by the context a worker is running (a lock its
// unlock granted, a wait its write ended) is kept in that worker's one-context slot and
// run by the same worker as soon as the running context parks or ends, so a lock hand-off
// costs no cross-thread wake-up. The slot is thread-local and owned by its worker. So
// that a slotted context is not held up for long, the slot goes to the ready queue when the
// running context goes on for more than kRunNextGraceSteps steps, or enters user code
// (where the watchdog may give up on the thread); and after kMaxRunNextStreak slot runs in
// a row, while other work is queued, the next one queues behind it, so that work is not
// starved when every worker is busy with such a chain.
// Stopping: request_stop() makes every worker end once its current slice ends (a running
// context yields at its next step, see Interpreter); join() waits until every worker has
// ended or was given up on (retire: stuck in user code, abandoned by the watchdog), so a
// stop never waits for user code beyond the watchdog's grace.
// A caller's thread may take new contexts too (take_start_for_helper, for
// Engine::run_queued_until), through the same tokens, leaving ready contexts to the workers.
// Thread-safety: push_ready and notify may be called from any thread; before_step and
// UserCodeScope act on the calling thread's slot only; the thread list is guarded by
// threads_mu_.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <thread>
#include <vector>

#include "base/thread_annotations.h"

namespace flowrt {

class Context;
class EventQueue;

class WorkerPool {
 public:
  using Runner = std::function<void(Context*)>;

  WorkerPool(EventQueue& events, Runner runner);
  ~WorkerPool();
  WorkerPool(const WorkerPool&) = delete;
  WorkerPool& operator=(const WorkerPool&) = delete;

  void start(unsigned threads) EXCLUDES(threads_mu_);
  // request_stop() then join().
  void stop() EXCLUDES(threads_mu_);
  // Workers end once their current slice ends; nothing new is taken.
  void request_stop() EXCLUDES(threads_mu_);
  // Waits until every worker has ended or was retired, joins them, and leaves one
  // semaphore token per queued item, so that a later start() finds the queues as they are.
  void join() EXCLUDES(threads_mu_);
  // A stop has been requested.
  bool stopping() const { return stopping_.load(std::memory_order_acquire); }
  unsigned threads() const EXCLUDES(threads_mu_);
  // Worker threads given up on (retired) whose user code has not returned yet.
  uint64_t abandoned_threads() const {
    // A thread can end (its action returned) before its retire() counted it: never below 0.
    const int64_t n = abandoned_->load(std::memory_order_acquire);
    return n > 0 ? static_cast<uint64_t>(n) : 0;
  }

  static constexpr unsigned kRunNextGraceSteps = 4;
  static constexpr unsigned kMaxRunNextStreak = 64;

  // Hands a ready context to a worker: this worker's run-next slot when called from one of
  // this pool's workers with the slot free, else the ready queue.
  void push_ready(Context* ctx);
  // The running context is about to take a step: counts down the slot's grace.
  void before_step();
  // While alive, the calling worker's slot is empty and stays empty: for user code, which
  // may not return in time (the watchdog then abandons the thread, and a slotted context
  // with it).
  class UserCodeScope {
   public:
    explicit UserCodeScope(WorkerPool& pool);
    ~UserCodeScope();
    UserCodeScope(const UserCodeScope&) = delete;
    UserCodeScope& operator=(const UserCodeScope&) = delete;

   private:
    bool was_enabled_ = false;
  };
  // `n` events were pushed to the EventQueue.
  void notify_events(size_t n);

  // Gives up on worker `id` (stuck in user code; see Watchdog): detaches it and starts a
  // replacement, unless stopping. It counts as abandoned until its user code returns.
  void retire(std::thread::id id) EXCLUDES(threads_mu_);

  // Without threads (simulation): is anything queued, and take the context a worker would
  // take next (ready ones first), or null.
  bool has_queued() const;
  Context* take_queued();

  // A caller's thread that helps (Engine::run_queued_until): takes the next new context
  // from the EventQueue, as a worker would take it, or null when none waits or the pool is
  // stopping. Contexts made ready again (the ready queue) are left to the workers, so
  // that a context a helper handed back is not taken by it again. Any thread but a
  // worker, and only while the pool runs.
  Context* take_start_for_helper();
  // While alive, the calling thread is a helper: a context it runs is handed back to the
  // workers before a step that runs user code (helping_thread()), so that a caller is
  // never held by user code, nor given up on by the watchdog.
  class HelperScope {
   public:
    HelperScope() : was_(t_helping) { t_helping = true; }
    ~HelperScope() { t_helping = was_; }
    HelperScope(const HelperScope&) = delete;
    HelperScope& operator=(const HelperScope&) = delete;

   private:
    bool was_;
  };
  static bool helping_thread() { return t_helping; }
  // The calling thread is one of a pool's workers.
  static bool on_worker_thread() { return t_slot != nullptr; }

 private:
  struct RunNextSlot;
  // The calling worker's slot; null on other threads (callers, timers, the simulation).
  static thread_local RunNextSlot* t_slot;
  static thread_local bool t_helping;
  // A worker's body; false when its thread was abandoned (then it must touch nothing).
  bool loop();
  // Starts one worker thread; false (logged) when the system refuses a new thread.
  bool spawn() REQUIRES(threads_mu_);
  void enqueue_ready(Context* ctx);
  void flush_slot(RunNextSlot& slot);
  struct Impl;
  std::unique_ptr<Impl> impl_;
  EventQueue& events_;
  Runner runner_;
  mutable Mutex threads_mu_;
  CondVar exited_cv_;
  struct Worker {
    std::thread thread;
    bool exited = false;
  };
  std::vector<std::unique_ptr<Worker>> threads_ GUARDED_BY(threads_mu_);
  std::atomic<bool> stopping_{false};
  // Shared with the abandoned threads, which may outlive the pool.
  std::shared_ptr<std::atomic<int64_t>> abandoned_ = std::make_shared<std::atomic<int64_t>>(0);
};

}  // namespace flowrt
