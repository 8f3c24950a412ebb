// The built-in actions that need no records: log, fail, fire_event, start_flow, wait.
#pragma once

#include "actions/action.h"

namespace flowrt::builtin {

class LogAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

class FailAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

class FireEventAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

class StartFlowAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

class WaitAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

}  // namespace flowrt::builtin
