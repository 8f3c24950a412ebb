// lock and unlock (SPEC section 8). A lock step parks with a request for the runtime's
// lock table and is resumed with the outcome: granted (token, attempts, waited_ms) or not
// (timeout, deadlock). Unlocking a name this context does not hold is a warning.
#pragma once

#include "actions/action.h"

namespace flowrt::builtin {

class LockAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
  StepOutcome resume(const StepCall& call, const WakeUp& wake) const override;
};

class UnlockAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

}  // namespace flowrt::builtin
