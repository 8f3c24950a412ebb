// Coalescing a batch's context changes: a context queued, started, checkpointed and ended
// within one batch becomes one row write instead of four. Plain data; no state.
#pragma once

#include "store/store.h"

namespace flowrt {

// Folds every ContextPut/ContextUpdate of one seq into the first of them, as applying them
// in order would leave the row, and drops the rest. The other changes keep their order.
// Applying the result leaves a store as applying `batch` does
// (StoreCoalesceTest.ACoalescedBatch_LeavesTheStoreAsTheOriginal).
void coalesce_context_changes(StoreBatch& batch);

}  // namespace flowrt
