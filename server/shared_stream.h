// SharedStream: one leader stream passed on to every viewer of a cluster follower. The
// follower opens the leader's `GET /api/stream` once (a StreamRelay, with the first
// viewer's credentials, asking for every event the leader still holds), keeps what comes
// in a ring of the last `capacity` events with the leader's ids, and gives each viewer the
// events after its own last id: so a viewer costs the leader nothing, and the follower
// one socket and its place in the ring.
//
// What a viewer gets is what the leader's own feed (server/event_feed.h) would give it:
//  - without Last-Event-ID, the events after the last one the leader had given (`now`,
//    from the stream's head) or the follower has received, whichever is later;
//  - with Last-Event-ID N that the ring holds every event after, those events (a gap's
//    `reset` among them given alone, as the leader does); with N up to the leader's `now`
//    not received yet, nothing until they come;
//  - with an N older than the ring holds, or past every id known, one `reset` ("events
//    missed") carrying the last id known, then what follows it.
// The ring starts with what the leader held when the upstream opened, so a viewer
// resuming through this follower with an id the leader still held is given what it
// missed, as through the leader.
//
// The upstream closes when the last viewer leaves; the stream then takes no new viewer
// (the follower opens another; a viewer handed this one just as the last left finds it
// ended, and its client reconnects). When the upstream ends (the leader went, fell silent, or
// nobody took its events for too long: StreamRelay's limits), each viewer's stream ends
// once it has what was received, and its client reconnects.
//
// Thread-safety: every method from any thread (the viewers' I/O threads); one mutex
// guards the ring, and the relay has its own. Owns the relay.
#pragma once

#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <vector>

#include "server/stream_relay.h"
#include "server/stream_source.h"

namespace flowrt::server {

class SharedStream final : public StreamSource {
 public:
  // As many events as the leader's feed holds by default.
  static constexpr size_t kCapacity = 10000;

  // `relay` streams the leader's events after `after`; the leader had given every id up
  // to `now` when it answered.
  SharedStream(std::shared_ptr<StreamRelay> relay, uint64_t after, uint64_t now, size_t capacity = kCapacity);
  ~SharedStream() override;
  SharedStream(const SharedStream&) = delete;
  SharedStream& operator=(const SharedStream&) = delete;

  // A viewer came: the id it follows from when it named none.
  uint64_t subscribe() override;
  // A viewer went; the last one closes the upstream.
  void unsubscribe() override;
  std::vector<FeedEvent> after(uint64_t after, size_t max) const override;
  bool ended() const override;

  // True while a new viewer may join: some viewer is still here (or none has come yet)
  // and the upstream has not ended.
  bool open_to_viewers() const;

 private:
  // Moves what the relay received into the ring (mu_ held).
  void take_received() const;

  const std::shared_ptr<StreamRelay> relay_;
  const size_t capacity_;
  const uint64_t now_;

  mutable std::mutex mu_;
  // The ring holds every event with an id in (base_, last_], in order. Guarded by mu_.
  mutable std::deque<FeedEvent> ring_;
  mutable uint64_t base_;
  mutable uint64_t last_;
  int viewers_ = 0;      // guarded by mu_
  bool closed_ = false;  // guarded by mu_: the last viewer went
};

}  // namespace flowrt::server
