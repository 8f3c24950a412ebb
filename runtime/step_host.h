// ContextHost: StepHost for one running context; what its actions may do to the engine.
// Record writes and events go through the Dispatcher with the context as their origin, so
// they fire triggers with the right cause and chain. Used only by the thread running the
// context.
#pragma once

#include <functional>

#include "actions/action.h"
#include "runtime/context.h"

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

  TimeMs now() const override;
  const Value& context_id() const override { return ctx_.id; }
  void log(LogLevel level, std::string_view message) override;
  bool cancel_requested() const override { return ctx_.cancel_requested() || (over_quota_ && over_quota_()); }
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
};

}  // namespace flowrt
