#include "server/stream_source.h"

#include <algorithm>
#include <string>

namespace flowrt::server {

namespace {

// The bytes of append_sse_event's text for `e`.
size_t sse_event_bytes(const FeedEvent& e) {
  return sizeof("id: \nevent: \ndata: \n\n") - 1 + std::to_string(e.id).size() + e.type.size() + e.data.size();
}

}  // namespace

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

StreamTurn next_stream_turn(const StreamSource& source, uint64_t after, size_t max, size_t max_bytes) {
  StreamTurn turn;
  const bool ended = source.ended();  // first: what after() gives now is then the last
  turn.events = source.after(after, max);
  turn.last = ended && turn.events.empty();
  turn.next_after = after;
  size_t bytes = 0;
  for (size_t i = 0; i < turn.events.size(); ++i) {
    if (bytes >= max_bytes) {  // the rest comes at the next turns, after the last one given
      turn.events.resize(i);
      break;
    }
    const FeedEvent& e = turn.events[i];
    bytes += sse_event_bytes(e);
    turn.next_after = e.type == "reset" ? e.id : std::max(turn.next_after, e.id);
  }
  return turn;
}

void append_sse_event(std::string& out, const FeedEvent& e) {
  out += "id: ";
  out += std::to_string(e.id);
  out += "\nevent: ";
  out += e.type;
  out += "\ndata: ";
  out += e.data;
  out += "\n\n";
}

}  // namespace flowrt::server
