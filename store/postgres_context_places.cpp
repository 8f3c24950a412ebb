#include "store/postgres_context_places.h"

namespace flowrt {

ContextPlaces::Place ContextPlaces::place(uint64_t seq) const {
  if (auto it = pending_.find(seq); it != pending_.end()) return it->second.place;
  if (live_.count(seq)) return Place::kLive;
  if (seq <= highest_at_open_ || unknown_.count(seq)) return Place::kUnknown;
  return Place::kNotLive;
}

void ContextPlaces::note(uint64_t seq, Place place, std::string ended_trigger) {
  Note& n = pending_[seq];
  pending_bytes_ -= n.ended_trigger.size();
  n.place = place;
  n.ended_trigger.clear();
  if (place == Place::kLive && trigger_bytes_ + pending_bytes_ + ended_trigger.size() <= kMaxTriggerBytes) {
    n.ended_trigger = std::move(ended_trigger);
    pending_bytes_ += n.ended_trigger.size();
  }
}

const std::string* ContextPlaces::ended_trigger(uint64_t seq) const {
  const std::string* t = nullptr;
  if (auto it = pending_.find(seq); it != pending_.end()) {
    t = &it->second.ended_trigger;
  } else if (auto live = live_.find(seq); live != live_.end()) {
    t = &live->second;
  }
  return t && !t->empty() ? t : nullptr;
}

void ContextPlaces::commit() {
  for (auto& [seq, note] : pending_) {
    const Place place = note.place;
    auto live = live_.find(seq);
    if (live != live_.end()) {
      trigger_bytes_ -= live->second.size();
      if (place != Place::kLive) live_.erase(live);
    }
    if (place == Place::kLive) {
      trigger_bytes_ += note.ended_trigger.size();
      live_[seq] = std::move(note.ended_trigger);
      unknown_.erase(seq);
      continue;
    }
    // At or below highest_at_open_ a seq is unknown without a note; kNotLive cannot be
    // kept there, which costs only the statements of the unknown case.
    if (place == Place::kUnknown && seq > highest_at_open_) {
      unknown_.insert(seq);
    } else {
      unknown_.erase(seq);
    }
  }
  pending_.clear();
  pending_bytes_ = 0;
}

}  // namespace flowrt
