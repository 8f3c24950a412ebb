#include "store/coalesce.h"

#include <unordered_map>
#include <utility>

namespace flowrt {
namespace {

// `later` applied on top of a queued row.
void fold(StoredContext& row, ContextUpdate&& later) {
  row.status = std::move(later.status);
  if (later.started >= 0) row.started = later.started;
  if (later.ended >= 0) row.ended = later.ended;
  if (!later.record.is_null()) row.record = std::move(later.record);
  if (is_final_context_status(row.status)) {
    row.checkpoint = Value();
  } else if (!later.checkpoint.is_null()) {
    row.checkpoint = std::move(later.checkpoint);
  }
}

// `later` applied on top of an earlier update of the same row. A final status forgets the
// checkpoint: an update carrying none, with a final status, says so by itself.
void fold(ContextUpdate& first, ContextUpdate&& later) {
  first.status = std::move(later.status);
  if (later.started >= 0) first.started = later.started;
  if (later.ended >= 0) first.ended = later.ended;
  if (!later.record.is_null()) first.record = std::move(later.record);
  if (is_final_context_status(first.status)) {
    first.checkpoint = Value();
  } else if (!later.checkpoint.is_null()) {
    first.checkpoint = std::move(later.checkpoint);
  }
}

uint64_t seq_of(const StoreChange& c) {
  if (const auto* p = std::get_if<ContextPut>(&c)) return p->context.seq;
  if (const auto* u = std::get_if<ContextUpdate>(&c)) return u->seq;
  return 0;
}

}  // namespace

void coalesce_context_changes(StoreBatch& batch) {
  std::unordered_map<uint64_t, size_t> first;  // seq -> index of its first context change
  std::vector<StoreChange> out;
  out.reserve(batch.changes.size());
  for (StoreChange& c : batch.changes) {
    const uint64_t seq = seq_of(c);
    if (seq == 0) {
      out.push_back(std::move(c));
      continue;
    }
    auto [it, inserted] = first.emplace(seq, out.size());
    if (inserted) {
      out.push_back(std::move(c));
      continue;
    }
    StoreChange& into = out[it->second];
    if (auto* later = std::get_if<ContextUpdate>(&c)) {
      if (auto* put = std::get_if<ContextPut>(&into)) {
        fold(put->context, std::move(*later));
      } else {
        fold(std::get<ContextUpdate>(into), std::move(*later));
      }
    } else {
      into = std::move(c);  // a second put replaces the row, as applying it would
    }
  }
  batch.changes = std::move(out);
}

}  // namespace flowrt
