// The built-in record actions: create, update, delete, look up, and wait for a condition.
#pragma once

#include "actions/action.h"

namespace flowrt::builtin {

class CreateRecordAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

class UpdateRecordAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

class DeleteRecordAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

class LookUpRecordAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

class LookUpRecordsAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
};

// Parks until the record meets the condition (checked at every write of it) or the
// timeout passes; outputs the record and whether it timed out.
class WaitForConditionAction final : public Action {
 public:
  StepOutcome start(const StepCall& call) const override;
  StepOutcome resume(const StepCall& call, const WakeUp& wake) const override;
};

}  // namespace flowrt::builtin
