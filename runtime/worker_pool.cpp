#include "runtime/worker_pool.h"

#include <pthread.h>

#include <blockingconcurrentqueue.h>
#include <concurrentqueue.h>
#include <lightweightsemaphore.h>

#include "runtime/event_queue.h"
#include "runtime/watchdog.h"

namespace flowrt {

struct WorkerPool::Impl {
  moodycamel::ConcurrentQueue<Context*> ready;
  moodycamel::LightweightSemaphore tokens;  // one per item in `ready` or the EventQueue
};

WorkerPool::WorkerPool(EventQueue& events, Runner runner)
    : impl_(std::make_unique<Impl>()), events_(events), runner_(std::move(runner)) {}

WorkerPool::~WorkerPool() { stop(); }

void WorkerPool::start(unsigned threads) {
  stopping_.store(false);
  MutexLock lock(threads_mu_);
  for (unsigned i = 0; i < threads; ++i) {
    threads_.emplace_back([this] {
      pthread_setname_np(pthread_self(), "flowrt-worker");  // for top -H, perf and gdb
      loop();
    });
  }
}

unsigned WorkerPool::threads() const {
  MutexLock lock(threads_mu_);
  return static_cast<unsigned>(threads_.size());
}

void WorkerPool::stop() {
  std::vector<std::thread> threads;
  {
    MutexLock lock(threads_mu_);
    threads.swap(threads_);
  }
  if (threads.empty()) return;
  stopping_.store(true, std::memory_order_release);
  impl_->tokens.signal(static_cast<ssize_t>(threads.size()));
  for (std::thread& t : threads) t.join();
}

void WorkerPool::retire(std::thread::id id) {
  MutexLock lock(threads_mu_);
  for (auto it = threads_.begin(); it != threads_.end(); ++it) {
    if (it->get_id() == id) {
      it->detach();
      threads_.erase(it);
      break;
    }
  }
  if (stopping_.load(std::memory_order_acquire)) return;
  threads_.emplace_back([this] {
    pthread_setname_np(pthread_self(), "flowrt-worker");
    loop();
  });
}

void WorkerPool::push_ready(Context* ctx) {
  impl_->ready.enqueue(ctx);
  impl_->tokens.signal();
}

void WorkerPool::notify_events(size_t n) {
  if (n > 0) impl_->tokens.signal(static_cast<ssize_t>(n));
}

bool WorkerPool::has_queued() const { return impl_->ready.size_approx() > 0 || events_.size_approx() > 0; }

Context* WorkerPool::take_queued() {
  Context* ctx = nullptr;
  if (impl_->ready.try_dequeue(ctx) || events_.try_pop(&ctx)) {
    impl_->tokens.tryWait();  // the token that promised it
    return ctx;
  }
  return nullptr;
}

void WorkerPool::loop() {
  while (true) {
    impl_->tokens.wait();
    if (stopping_.load(std::memory_order_acquire)) return;
    // The token promises one item in one of the queues; a push may still be finishing.
    Context* ctx = nullptr;
    for (unsigned spins = 0;; ++spins) {
      if (impl_->ready.try_dequeue(ctx) || events_.try_pop(&ctx)) break;
      if (spins > 64) std::this_thread::yield();
    }
    runner_(ctx);
    // Given up on while in user code (Watchdog): this thread was replaced, and the pool
    // may be gone. Touch nothing; end.
    if (t_worker_abandoned) return;
  }
}

}  // namespace flowrt
