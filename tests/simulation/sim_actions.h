// The custom C++ actions the simulation's flows call, and the fake run-time clock that
// makes their quota behaviour deterministic. One SimActions per seed.
//
//   sim_echo  {text} -> {out: TEXT upper-cased}
//   sim_stamp {tag}  -> writes {"tag", "by": context id} to the sink table -> {sys_id}
//   sim_throw        throws std::runtime_error("boom on purpose")
//   sim_slow         moves the run clock of its thread past max_run_time, then returns:
//                    its context ends in error at the quota, at the same step every run
//   sim_hang         (kThreads only) never returns on its own: it makes every watchdog
//                    deadline pass, so the watchdog gives up on it, then blocks until
//                    release_hung() at the end of the seed lets its thread exit
//
// The run clock (EngineOptions::run_clock) is a fake one: on a thread that runs contexts (a
// worker, or in simulation mode the driving thread) it is that thread's own offset, which
// only sim_slow moves, so the running time of contexts on other threads never jumps; on
// any other thread (the watchdog's) it is 0 until sim_hang is called, then far ahead.
#pragma once

#include <atomic>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>

#include "actions/custom_action.h"

namespace flowrt::sim {

class SimActions {
 public:
  // `threads`: the engine runs real workers (else simulation mode, on the driving thread).
  explicit SimActions(bool threads);
  // Every action type above, to register before the definitions are loaded.
  std::vector<CustomActionType> types();
  std::function<double()> run_clock();
  // Lets every sim_hang call that entered return, and waits until each has.
  void release_hung();
  int hung() const;

 private:
  struct State {
    std::atomic<double> watchdog_ms{0};
    std::mutex mu;
    std::condition_variable cv;
    int entered = 0;
    int left = 0;
    bool open = false;
  };
  bool threads_;
  std::shared_ptr<State> state_;
};

}  // namespace flowrt::sim
