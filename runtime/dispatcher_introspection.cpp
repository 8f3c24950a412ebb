// Read-only views of the Dispatcher's state for checks (runtime/liveness.h). Nothing here
// changes the dispatcher; each view takes the commit lock only to read.
#include "runtime/dispatcher.h"

namespace flowrt {

bool Dispatcher::has_record_waiter(std::string_view table, std::string_view sys_id, const Context& ctx) {
  SpinMutexLock lock(mu_);
  auto it = waiters_.find(record_key(table, sys_id));
  if (it == waiters_.end()) return false;
  for (const Waiter& w : it->second) {
    if (w.context.get() == &ctx) return true;
  }
  return false;
}

}  // namespace flowrt
