#include "actions/action.h"
#include "actions/builtin/basic_actions.h"
#include "actions/builtin/lock_actions.h"
#include "actions/builtin/record_actions.h"

namespace flowrt {

const Action* builtin_action(ActionKind kind) {
  static const builtin::LogAction kLog;
  static const builtin::FailAction kFail;
  static const builtin::FireEventAction kFireEvent;
  static const builtin::StartFlowAction kStartFlow;
  static const builtin::WaitAction kWait;
  static const builtin::CreateRecordAction kCreate;
  static const builtin::UpdateRecordAction kUpdate;
  static const builtin::DeleteRecordAction kDelete;
  static const builtin::LookUpRecordAction kLookUp;
  static const builtin::LookUpRecordsAction kLookUpMany;
  static const builtin::WaitForConditionAction kWaitFor;
  static const builtin::LockAction kLock;
  static const builtin::UnlockAction kUnlock;
  switch (kind) {
    case ActionKind::kLog: return &kLog;
    case ActionKind::kFail: return &kFail;
    case ActionKind::kFireEvent: return &kFireEvent;
    case ActionKind::kStartFlow: return &kStartFlow;
    case ActionKind::kWait: return &kWait;
    case ActionKind::kCreateRecord: return &kCreate;
    case ActionKind::kUpdateRecord: return &kUpdate;
    case ActionKind::kDeleteRecord: return &kDelete;
    case ActionKind::kLookUpRecord: return &kLookUp;
    case ActionKind::kLookUpRecords: return &kLookUpMany;
    case ActionKind::kWaitForCondition: return &kWaitFor;
    case ActionKind::kLock: return &kLock;
    case ActionKind::kUnlock: return &kUnlock;
    default: return nullptr;
  }
}

}  // namespace flowrt
