// ContextHost: StepHost for one running context; what its actions may do to the engine.
// Record writes and events go through the Dispatcher with the context as their origin, so
// they fire triggers with the right cause and chain. Used only by the thread running the
// context. For a custom C++ action it carries the watchdog's call (set_call): every method
// then holds the call's gate while it touches the engine, and once the watchdog gave up on
// the call every method is inert (writes and reads fail with kGivenUpMessage, log does
// nothing, cancel_requested is true, now is the last time read), so an action that goes
// on after being given up on never touches the engine, even a destroyed one.
#pragma once

#include <functional>

#include "actions/action.h"
#include "runtime/context.h"
#include "runtime/watchdog.h"

namespace flowrt {

class EngineCore;

class ContextHost final : public StepHost {
 public:
  // `over_quota` tells whether the context has run past max_run_time; a long action sees
  // it through cancel_requested().
  ContextHost(EngineCore& core, Context& ctx, std::function<bool()> over_quota = {})
      : core_(core), ctx_(ctx), over_quota_(std::move(over_quota)) {}

  // The path of the step being run, for log lines.
  void set_step(Value path) { step_ = std::move(path); }
  // The custom action call this host serves (see the file comment); null for built-ins.
  void set_call(Watchdog::Call* call) { call_ = call; }

  static constexpr std::string_view kGivenUpMessage =
      "the engine gave up on this action call (it did not return in time); nothing was done";

  bool given_up() const override { return call_ && call_->is_closed(); }
  TimeMs now() const override;
  const Value& context_id() const override { return ctx_.id; }
  std::string idempotency_key() const override {
    return std::string(ctx_.id.as_string()) + "/" + std::string(step_.is_string() ? step_.as_string() : "");
  }
  void log(LogLevel level, std::string_view message) override;
  bool cancel_requested() const override;
  Result<Value> create_record(const Value& table, const Value& values, const Value& while_holding) override;
  Result<Value> update_record(const Value& table, const Value& sys_id, const Value& values,
                              const Value& while_holding) override;
  Result<bool> delete_record(const Value& table, const Value& sys_id, const Value& while_holding) override;
  Result<Value> find_records(const RecordQuery& query) override;
  Value read_record(std::string_view table, std::string_view sys_id) override;
  Status fire_event(const Value& name, const Value& payload) override;
  Result<StartedFlow> start_flow(const Value& flow, const Value& inputs) override;
  bool release_lock(std::string_view name) override;
  Value try_lock(const WaitRequest& request) override;

 private:
  EngineCore& core_;
  Context& ctx_;
  std::function<bool()> over_quota_;
  Value step_;
  Watchdog::Call* call_ = nullptr;
  mutable TimeMs last_now_ = 0;  // what now() returns once the call was given up on
};

}  // namespace flowrt
