// Watchdog: ends the contexts whose C++ action does not return in time.
//
// A custom action runs on a worker thread, and C++ code cannot be stopped from outside.
// A well-behaved long action polls CustomActionContext::cancel_requested() and returns.
// One that does not return by its context's max_run_time, or within `grace_ms` of its
// context being cancelled, or within `grace_ms` of the engine beginning to stop, is given
// up on: on_abandon ends the context (in error, or cancelled), releases its locks and
// replaces its worker by a new thread. The stuck thread is abandoned: if the action ever
// returns, that thread sees it was given up on (Call::finish() is false), touches nothing
// of the engine, and exits.
//
// What an abandoned action can still reach stays valid: its call (Call, shared with the
// worker's stack), its context, plan and inputs (held by the call). What it can do to the
// engine goes through the call's gate: each host method holds the gate while it touches
// the engine, and giving up closes the gate first (waiting for a host method in flight),
// so afterwards every host method is inert and says so, even once the engine is gone.
//
// The watchdog's own thread touches the engine only through on_abandon (which ends a
// context through the engine's usual paths), and only for a call it has just abandoned.
//
// Thread-safety: begin/end from worker threads; the checks run on the watchdog's own
// thread, which start() starts and stop() joins; it sleeps while no call is running and
// looks every `period_ms` while one is. The list of calls is guarded by mu_; a Call's
// state is one atomic, so exactly one of "returned" and "abandoned" happens.
#pragma once

#include <atomic>
#include <chrono>
#include <functional>
#include <memory>
#include <optional>
#include <shared_mutex>
#include <string>
#include <thread>
#include <vector>

#include "plans/value.h"
#include "base/thread_annotations.h"

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

    // The gate (see the file comment). A host method calls enter() before it touches the
    // engine and, when that returned true, leave() after; false means the call was given
    // up on: the method must do nothing and say so.
    bool enter() {
      gate.lock_shared();
      if (!closed.load(std::memory_order_acquire)) return true;
      gate.unlock_shared();
      return false;
    }
    void leave() { gate.unlock_shared(); }
    // Closes the gate for good once no host method is inside it.
    void close() {
      std::unique_lock lock(gate);
      closed.store(true, std::memory_order_release);
    }
    bool is_closed() const { return closed.load(std::memory_order_acquire); }

   private:
    static constexpr int kRunning = 0, kReturned = 1, kAbandoned = 2;
    std::atomic<int> state{kRunning};
    std::shared_mutex gate;
    std::atomic<bool> closed{false};
  };
  // Why a call was given up on.
  enum class Reason { kQuota, kCancelled, kStopping };
  using OnAbandon = std::function<void(Call& call, Reason why)>;

  // `run_clock` reads the run-time clock in ms; `grace_ms` is how long a cancelled
  // context's action may go on, and how long a stop waits (in real time) for actions;
  // the watchdog looks every `period_ms` of real time.
  Watchdog(std::function<double()> run_clock, OnAbandon on_abandon, double grace_ms = 1000, int period_ms = 10);
  ~Watchdog();
  Watchdog(const Watchdog&) = delete;
  Watchdog& operator=(const Watchdog&) = delete;

  void start() EXCLUDES(mu_);
  // The engine begins to stop: every call running now, or begun from now on, is given up
  // on (as stopping) once `grace_ms` of real time has passed from now. Keeps watching.
  void begin_stopping() EXCLUDES(mu_);
  // Stops watching (after begin_stopping, once the workers are gone). A call still
  // running gets what is left of the grace (all of it, without begin_stopping), then is
  // given up on, so stopping never waits on user code for longer.
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
  using Clock = std::chrono::steady_clock;
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
  bool exit_ GUARDED_BY(mu_) = false;  // the thread must end
  // Set by begin_stopping: every call still running then is given up on.
  std::optional<Clock::time_point> stop_deadline_ GUARDED_BY(mu_);
  std::thread thread_;
  std::atomic<uint64_t> abandoned_{0};
};

}  // namespace flowrt
