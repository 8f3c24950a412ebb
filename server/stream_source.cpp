#include "server/stream_source.h"

#include <algorithm>

namespace flowrt::server {

FeedEvent missed_reset(uint64_t last) { return FeedEvent{last, "reset", "{\"reason\":\"events missed\"}"}; }

std::vector<FeedEvent> held_events_after(const std::deque<FeedEvent>& ring, uint64_t after, size_t max) {
  std::vector<FeedEvent> out;
  if (ring.empty()) return out;
  for (auto it = ring.begin() + static_cast<std::ptrdiff_t>(after + 1 - ring.front().id);
       it != ring.end() && out.size() < max; ++it) {
    if (it->type == "reset") {
      out.assign(1, *it);
      break;
    }
    out.push_back(*it);
  }
  return out;
}

StreamTurn next_stream_turn(const StreamSource& source, uint64_t after, size_t max) {
  StreamTurn turn;
  const bool ended = source.ended();  // first: what after() gives now is then the last
  turn.events = source.after(after, max);
  turn.last = ended && turn.events.empty();
  turn.next_after = after;
  for (const FeedEvent& e : turn.events) {
    turn.next_after = e.type == "reset" ? e.id : std::max(turn.next_after, e.id);
  }
  return turn;
}

}  // namespace flowrt::server
