#include "store/postgres_context_places.h"

namespace flowrt {

ContextPlaces::Place ContextPlaces::place(uint64_t seq) const {
  if (auto it = pending_.find(seq); it != pending_.end()) return it->second;
  if (live_.count(seq)) return Place::kLive;
  if (seq <= highest_at_open_ || unknown_.count(seq)) return Place::kUnknown;
  return Place::kNotLive;
}

void ContextPlaces::commit() {
  for (const auto& [seq, place] : pending_) {
    if (place == Place::kLive) {
      live_.insert(seq);
      unknown_.erase(seq);
      continue;
    }
    live_.erase(seq);
    // At or below highest_at_open_ a seq is unknown without a note; kNotLive cannot be
    // kept there, which costs only the statements of the unknown case.
    if (place == Place::kUnknown && seq > highest_at_open_) {
      unknown_.insert(seq);
    } else {
      unknown_.erase(seq);
    }
  }
  pending_.clear();
}

}  // namespace flowrt
