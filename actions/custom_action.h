// Custom C++ action types, registered through the library API (SPEC section 6).
//
// A CustomActionType declares its inputs and outputs, which the compiler checks like any
// other action, and a function that does the work. The function may be called from any
// worker thread, for many contexts at once, so it must be safe for concurrent use. It
// returns an object of outputs or an Error; an exception it throws becomes a step error with
// the exception's message, and the engine goes on.
#pragma once

#include <functional>
#include <string>
#include <string_view>
#include <vector>

#include "flowrt/actions/action.h"
#include "flowrt/plans/plan.h"
#include "flowrt/plans/result.h"
#include "flowrt/plans/value.h"

namespace flowrt {

// What a custom action sees while it runs. Valid only during the call.
class CustomActionContext {
 public:
  CustomActionContext(const StepCall& call) : call_(call) {}  // NOLINT

  // The rendered input `name`, null when absent.
  const Value& input(std::string_view name) const { return call_.input(name); }
  // Adds a line to the context's log (nothing once given_up()).
  void log(std::string_view message, LogLevel level = LogLevel::kInfo) const { call_.host.log(level, message); }
  // True once the context is cancelled or past its run-time quota: a long action should
  // stop and return soon (its result is then discarded).
  bool cancel_requested() const { return call_.host.cancel_requested(); }
  TimeMs now() const { return call_.host.now(); }
  const Value& context_id() const { return call_.host.context_id(); }
  // Stable across a restart: "<context id>/<step path>", the path with its loop iterations
  // ("ctx-7/3.do.1#2"). With a durable store a custom action runs at least once: when its
  // context resumes after a crash from the checkpoint before this step, the step runs
  // again. Key external effects on this to make them exactly once (docs/DURABILITY.md).
  std::string idempotency_key() const { return call_.host.idempotency_key(); }
  // The engine, for actions that read or write records.
  StepHost& host() const { return call_.host; }
  // True once the engine gave up on this call (it ran past its context's max_run_time, or
  // 1s past a cancel or the engine's stop): the context has ended, the result will be
  // discarded, and every method here and of host() is inert (writes and reads fail with
  // an error saying so, log does nothing). Return as soon as possible.
  bool given_up() const { return call_.host.given_up(); }

 private:
  const StepCall& call_;
};

struct CustomActionType {
  std::string name;              // how steps call it: {"action": NAME}
  std::vector<Param> inputs;
  std::vector<Param> outputs;
  std::function<Result<Value>(CustomActionContext&)> run;
};

}  // namespace flowrt
