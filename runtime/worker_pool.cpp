#include "runtime/worker_pool.h"

#include <pthread.h>

#include <algorithm>
#include <deque>
#include <system_error>
#include <utility>

#include <concurrentqueue.h>  // lightweightsemaphore.h needs its macros
#include <lightweightsemaphore.h>

#include "runtime/engine_log.h"
#include "runtime/event_queue.h"
#include "runtime/perturb.h"
#include "runtime/watchdog.h"

namespace flowrt {

struct WorkerPool::Impl {
  // First in, first out across every thread that makes contexts ready (a lock-free queue
  // orders only per producer, which could keep a context waiting behind a chain of
  // hand-offs from one worker). Held for one push or pop.
  SpinMutex ready_mu;
  std::deque<Context*> ready GUARDED_BY(ready_mu);
  // One per item in `ready` or the EventQueue. A worker with none spins kWaitSpins times
  // (about 1.3 us here) before it sleeps. The semaphore's default, 10,000 (about 13 us),
  // kept an idle worker spinning on a core the producer or the other worker wanted: a
  // third more CPU per context at 20,000 contexts/s, and the p99 at half the peak nearly
  // doubled (docs/PERFORMANCE.md, "Workers spin less before they sleep").
  static constexpr int kWaitSpins = 1000;
  moodycamel::LightweightSemaphore tokens{0, kWaitSpins};

  bool try_pop_ready(Context** ctx) {
    SpinMutexLock lock(ready_mu);
    if (ready.empty()) return false;
    *ctx = ready.front();
    ready.pop_front();
    return true;
  }
  bool has_ready() {
    SpinMutexLock lock(ready_mu);
    return !ready.empty();
  }
};

// One per worker thread, on its loop's stack; only that thread touches it.
struct WorkerPool::RunNextSlot {
  const WorkerPool* pool = nullptr;
  Context* context = nullptr;
  unsigned grace = 0;   // steps the running context may still take before the slot goes
  unsigned streak = 0;  // slot runs in a row
  bool enabled = true;  // false in user code
};

thread_local WorkerPool::RunNextSlot* WorkerPool::t_slot = nullptr;
thread_local bool WorkerPool::t_helping = false;

WorkerPool::WorkerPool(EventQueue& events, Runner runner)
    : impl_(std::make_unique<Impl>()), events_(events), runner_(std::move(runner)) {}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::start(unsigned threads) {
  stopping_.store(false);
  MutexLock lock(threads_mu_);
  for (unsigned i = 0; i < threads; ++i) {
    if (!spawn()) break;
  }
}

bool WorkerPool::spawn() {
  auto worker = std::make_unique<Worker>();
  Worker* w = worker.get();
  try {
    w->thread = std::thread([this, w, abandoned = abandoned_] {
      pthread_setname_np(pthread_self(), "flowrt-worker");  // for top -H, perf and gdb
      if (!loop()) {
        // Given up on while in user code, which has now returned: this thread was
        // replaced and the pool may be gone. Touch nothing of it.
        abandoned->fetch_sub(1, std::memory_order_acq_rel);
        return;
      }
      MutexLock lock(threads_mu_);
      w->exited = true;
      exited_cv_.notify_all();
    });
  } catch (const std::system_error& e) {
    engine_log().error("could not start a worker thread: {} ({} workers run)", e.what(), threads_.size());
    return false;
  }
  threads_.push_back(std::move(worker));
  return true;
}

unsigned WorkerPool::threads() const {
  MutexLock lock(threads_mu_);
  return static_cast<unsigned>(threads_.size());
}

void WorkerPool::stop() {
  request_stop();
  join();
}

void WorkerPool::request_stop() {
  size_t n = 0;
  {
    MutexLock lock(threads_mu_);
    n = threads_.size();
  }
  stopping_.store(true, std::memory_order_release);
  impl_->tokens.signal(static_cast<ssize_t>(n));  // wakes the sleeping workers
}

void WorkerPool::join() {
  std::vector<std::unique_ptr<Worker>> ended;
  {
    MutexLock lock(threads_mu_);
    // A retired worker leaves the list (its thread was detached): only the others end.
    while (!std::all_of(threads_.begin(), threads_.end(), [](const auto& w) { return w->exited; })) {
      exited_cv_.wait(threads_mu_);
    }
    ended.swap(threads_);
  }
  for (auto& w : ended) w->thread.join();
  // A worker may have ended on a token that promised work, leaving a stop token behind:
  // one token per queued item, no more, no less.
  while (impl_->tokens.tryWait()) {
  }
  size_t queued = events_.size_approx();
  {
    SpinMutexLock lock(impl_->ready_mu);
    queued += impl_->ready.size();
  }
  if (queued > 0) impl_->tokens.signal(static_cast<ssize_t>(queued));
}

void WorkerPool::retire(std::thread::id id) {
  MutexLock lock(threads_mu_);
  for (auto it = threads_.begin(); it != threads_.end(); ++it) {
    if ((*it)->thread.get_id() == id) {
      (*it)->thread.detach();
      threads_.erase(it);
      abandoned_->fetch_add(1, std::memory_order_acq_rel);
      break;
    }
  }
  exited_cv_.notify_all();  // join() may be waiting for it
  if (stopping_.load(std::memory_order_acquire)) return;
  spawn();
}

void WorkerPool::push_ready(Context* ctx) {
  RunNextSlot* slot = t_slot;
  if (slot && slot->pool == this && slot->enabled && !slot->context && !stopping_.load(std::memory_order_relaxed)) {
    if (slot->streak >= kMaxRunNextStreak) {
      if (has_queued()) return enqueue_ready(ctx);  // behind the work that waits
      slot->streak = 0;                             // nothing waits: a new streak
    }
    slot->context = ctx;
    slot->grace = kRunNextGraceSteps;
    return;
  }
  enqueue_ready(ctx);
}

void WorkerPool::enqueue_ready(Context* ctx) {
  {
    SpinMutexLock lock(impl_->ready_mu);
    impl_->ready.push_back(ctx);
  }
  impl_->tokens.signal();
}

void WorkerPool::flush_slot(RunNextSlot& slot) {
  if (Context* ctx = std::exchange(slot.context, nullptr)) enqueue_ready(ctx);
}

void WorkerPool::before_step() {
  RunNextSlot* slot = t_slot;
  if (slot && slot->context && slot->pool == this && --slot->grace == 0) flush_slot(*slot);
}

WorkerPool::UserCodeScope::UserCodeScope(WorkerPool& pool) {
  RunNextSlot* slot = t_slot;
  if (!slot || slot->pool != &pool) return;
  pool.flush_slot(*slot);
  was_enabled_ = slot->enabled;
  slot->enabled = false;
}

WorkerPool::UserCodeScope::~UserCodeScope() {
  // Touches only this thread's slot, which outlives the pool's use of this thread.
  if (t_slot && was_enabled_) t_slot->enabled = true;
}

void WorkerPool::notify_events(size_t n) {
  if (n > 0) impl_->tokens.signal(static_cast<ssize_t>(n));
}

bool WorkerPool::has_queued() const { return impl_->has_ready() || events_.size_approx() > 0; }

Context* WorkerPool::take_start_for_helper() {
  if (stopping_.load(std::memory_order_acquire)) return nullptr;
  // The token first, as a worker does: an item is taken only with the token that promised
  // it, so no worker woken for it finds it gone.
  if (!impl_->tokens.tryWait()) return nullptr;
  Context* ctx = nullptr;
  if (events_.try_pop(&ctx)) return ctx;
  // The token promised a ready context (the workers'), or an event whose push is still
  // finishing: handed back, it wakes a worker if one sleeps.
  impl_->tokens.signal();
  return nullptr;
}

Context* WorkerPool::take_queued() {
  Context* ctx = nullptr;
  if (impl_->try_pop_ready(&ctx) || events_.try_pop(&ctx)) {
    impl_->tokens.tryWait();  // the token that promised it
    return ctx;
  }
  return nullptr;
}

bool WorkerPool::loop() {
  RunNextSlot slot;
  slot.pool = this;
  t_slot = &slot;
  while (true) {
    Context* ctx = std::exchange(slot.context, nullptr);
    if (ctx && stopping_.load(std::memory_order_acquire)) {
      // It stays queued, like every other context not yet taken.
      enqueue_ready(ctx);
      ctx = nullptr;
    }
    if (ctx) {
      ++slot.streak;
    } else {
      slot.streak = 0;
      if (stopping_.load(std::memory_order_acquire)) break;
      impl_->tokens.wait();
      if (stopping_.load(std::memory_order_acquire)) break;
      // The token promises one item in one of the queues; a push may still be finishing.
      for (unsigned spins = 0;; ++spins) {
        if (impl_->try_pop_ready(&ctx) || events_.try_pop(&ctx)) break;
        if (spins > 64) std::this_thread::yield();
      }
    }
    perturb(PerturbPoint::kWorkerTookWork);
    try {
      runner_(ctx);  // ends the context in error itself when it fails; this is the last resort
    } catch (const std::exception& e) {
      engine_log().critical("a worker's context failed past its own handling: {}", e.what());
    } catch (...) {
      engine_log().critical("a worker's context failed past its own handling");
    }
    // Given up on while in user code (Watchdog): this thread was replaced, and the pool
    // may be gone. Touch nothing; end. (The slot is empty: user code runs without one.)
    if (t_worker_abandoned) {
      t_slot = nullptr;
      return false;
    }
  }
  t_slot = nullptr;
  return true;
}

}  // namespace flowrt
