// StreamSource: what an event stream (`GET /api/stream`) writes to its client: the
// changes after an id, as Server-Sent Events. A server's own EventFeed is one; on a
// cluster follower a SharedStream, which passes the leader's stream on to every viewer,
// is the other.
//
// The HTTP server (server/http_server.cpp) subscribes once when the stream opens,
// asks for the changes after the last id it wrote every 100 ms (next_stream_turn),
// unsubscribes when the connection closes, and closes the stream once the source has
// ended and given all it had.
// Thread-safety: implementations are called from the stream's I/O thread while their own
// threads fill them.
#pragma once

#include <cstddef>
#include <cstdint>
#include <deque>
#include <string>
#include <vector>

namespace flowrt::server {

struct FeedEvent {
  uint64_t id = 0;
  std::string type;  // "context", "lock" or "reset"
  std::string data;  // JSON text
};

// The `reset` ("events missed") a client gets when it names an id whose events are not
// all held, or one never given: it reloads, then follows from `last`, the last id given.
FeedEvent missed_reset(uint64_t last);

// The events of `ring` (consecutive ids, the oldest first) after `after`, at most `max`;
// `after` is at least the id before the ring's first and below its last. A gap's `reset`
// among them is given alone, without the events before it: the client reloads and
// follows from it. (What EventFeed and SharedStream give a client from what they hold.)
std::vector<FeedEvent> held_events_after(const std::deque<FeedEvent>& ring, uint64_t after, size_t max);

class StreamSource {
 public:
  virtual ~StreamSource() = default;
  // A client came: the id it follows from when it named none.
  virtual uint64_t subscribe() = 0;
  virtual void unsubscribe() = 0;
  // The changes after `after` (at most `max`).
  virtual std::vector<FeedEvent> after(uint64_t after, size_t max) const = 0;
  // True once nothing more will come: what after() gives from then on is all there is.
  virtual bool ended() const = 0;
};

// One turn of a stream: the changes after `after` (at most `max`), and whether the stream
// ends with them. ended() is asked first: once it holds nothing more comes, so an after()
// that then gives nothing means all was given. (Asked the other way round, a source whose
// last changes come in between the two calls, as a follower's relay reading the leader's
// last bytes, would end the stream without them.)
struct StreamTurn {
  std::vector<FeedEvent> events;
  bool last = false;  // the stream ends after writing `events` (then none)
  // What to ask after at the next turn: the last event's id, also when it is a `reset`
  // whose id is below `after` (a client that named an id never given follows on from the
  // reset's, and is not given the reset again at every turn).
  uint64_t next_after = 0;
};
// With `max_bytes`: the events end once those before them take max_bytes as Server-Sent
// Events text (append_sse_event), so that a turn holds at most max_bytes and one event more;
// it always gives one when there is one, and next_after is that of the events given, so the
// next turn gives the rest.
StreamTurn next_stream_turn(const StreamSource& source, uint64_t after, size_t max,
                            size_t max_bytes = SIZE_MAX);

// What the HTTP server asks a turn for at most (next_stream_turn's max and max_bytes): a
// stream client that does not read holds that much of the server's memory, and one event.
inline constexpr size_t kStreamTurnEvents = 1000;
inline constexpr size_t kStreamTurnBytes = 256u << 10;

// `e` as Server-Sent Events text ("id: …\nevent: …\ndata: …\n\n"), appended to `out`.
void append_sse_event(std::string& out, const FeedEvent& e);

}  // namespace flowrt::server
