// Watchdog: ends the contexts whose C++ action does not return in time.
//
// A custom action runs on a worker thread, and C++ code cannot be stopped from outside.
// A well-behaved long action polls CustomActionContext::cancel_requested() and returns.
// One that does not return by its context's max_run_time, or within `grace_ms` of its
// context being cancelled, is given up on: on_abandon ends the context (in error, or
// cancelled) and releases its locks, and its worker is replaced by a new thread. The
// stuck thread is abandoned: if the action ever returns, that thread sees it was given
// up on (Call::finish() is false), touches nothing of the engine, and exits.
//
// Thread-safety: begin/end from worker threads; the checks run on the watchdog's own
// thread, which start() starts and stop() joins; it sleeps while no call is running and
// looks every `period_ms` while one is. The list of calls is guarded by mu_;
// a Call's state is one atomic, so exactly one of "returned" and "abandoned" happens.
#pragma once

#include <atomic>
#include <functional>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "plans/value.h"
#include "runtime/thread_annotations.h"

namespace flowrt {

class Context;

// Set on a worker thread whose action was abandoned: the worker loop must then return
// at once, touching nothing (the engine may be gone).
inline thread_local bool t_worker_abandoned = false;

class Watchdog {
 public:
  // One call of user code, shared by the worker that makes it and the watchdog.
  struct Call {
    std::shared_ptr<Context> context;
    int64_t record = -1;     // the step's entry in the context record
    Value path;              // the step's path
    std::string action;      // its action type
    std::vector<int64_t> open_records;  // enclosing steps (calls, loops, blocks) still open
    double deadline_ms = 0;  // on the run clock: when the context's quota runs out
    std::thread::id worker;
    double cancel_seen_ms = -1;  // guarded by the watchdog's mu_: when the cancel was seen

    // Worker, after the action returned: true when it returned in time (go on as
    // usual), false when the watchdog had already given up on it (touch nothing).
    bool finish() {
      int expected = kRunning;
      return state.compare_exchange_strong(expected, kReturned, std::memory_order_acq_rel);
    }
    // Watchdog: true when this call is now abandoned (it had not returned).
    bool abandon() {
      int expected = kRunning;
      return state.compare_exchange_strong(expected, kAbandoned, std::memory_order_acq_rel);
    }

   private:
    static constexpr int kRunning = 0, kReturned = 1, kAbandoned = 2;
    std::atomic<int> state{kRunning};
  };
  // Why a call was given up on.
  enum class Reason { kQuota, kCancelled, kStopping };
  using OnAbandon = std::function<void(Call& call, Reason why)>;

  // `run_clock` reads the run-time clock in ms; `grace_ms` is how long a cancelled
  // context's action may go on; the watchdog looks every `period_ms` of real time.
  Watchdog(std::function<double()> run_clock, OnAbandon on_abandon, double grace_ms = 1000, int period_ms = 10);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void start() EXCLUDES(mu_);
  // Stops watching. Calls still running get `grace_ms` of real time to return; the rest
  // are given up on (as cancelled), so stopping never waits on user code for longer.
  void stop() EXCLUDES(mu_);

  // Worker: before calling a custom action of `context`, whose quota runs out at
  // `deadline_ms` on the run clock.
  std::shared_ptr<Call> begin(std::shared_ptr<Context> context, int64_t record, Value path, std::string action,
                              std::vector<int64_t> open_records, double deadline_ms) EXCLUDES(mu_);
  // Worker: the call returned in time (after Call::finish() said so).
  void end(const std::shared_ptr<Call>& call) EXCLUDES(mu_);
  // A cancel of `context` (null: of every context) was requested now: its action's grace
  // starts now on the run clock. (Without this, it starts when the watchdog notices.)
  void note_cancel(const Context* context) EXCLUDES(mu_);
  // Calls given up on so far.
  uint64_t abandoned() const { return abandoned_.load(std::memory_order_relaxed); }

 private:
  void loop() EXCLUDES(mu_);
  void check() EXCLUDES(mu_);
  void give_up(std::vector<std::pair<std::shared_ptr<Call>, Reason>> calls);

  const std::function<double()> run_clock_;
  const OnAbandon on_abandon_;
  const double grace_ms_;
  const int period_ms_;
  Mutex mu_;
  CondVar wake_;
  std::vector<std::shared_ptr<Call>> calls_ GUARDED_BY(mu_);
  bool stopping_ GUARDED_BY(mu_) = false;
  std::thread thread_;
  std::atomic<uint64_t> abandoned_{0};
};

}  // namespace flowrt
