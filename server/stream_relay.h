// StreamRelay: one connection to a cluster leader's `GET /api/stream`, read as
// Server-Sent Events. A follower opens one with the credentials of the viewer that
// arrived first (its Authorization header or ?access_token=, which the leader checks
// again), asking for every event the leader holds, and shares it among its viewers
// (server/shared_stream.h), who get the leader's events with their ids unchanged: so a
// viewer opened on any node shows the executions live.
//
// It has one reader, which takes what arrived (after() hands each event out once).
// Every relay of a node is read on one thread, its RelayIo's (server/relay_io.h). The
// relay ends when the leader's stream ends (the leader stopped or died, or another node
// took the lead), when nothing came for `idle` (the leader sends a comment every
// stream_heartbeat_ms), or when its reader leaves more than kMaxHeld events untaken.
//
// Thread-safety: after, ended, subscribe and unsubscribe from any thread (one mutex guards
// the events held); the RelayIo's thread alone uses the connection once open() returned.
// The destructor closes the connection and waits for its last read to end (not at all
// once the RelayIo is stopped); it must not run on the RelayIo's thread.
#pragma once

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "plans/result.h"
#include "server/http_message.h"
#include "server/relay_io.h"
#include "server/stream_source.h"

namespace flowrt::server {

class StreamRelay final : public StreamSource {
 public:
  // Events read from the leader and not yet written to the client, at most.
  static constexpr size_t kMaxHeld = 10000;
  // A line of the leader's stream, and the data of one event, at most (its events are
  // single-line JSON): past it the relay ends.
  static constexpr size_t kMaxLine = 1 << 20;

  // Where the leader's stream is, and the client's request to pass on.
  struct Upstream {
    std::string host;           // a name or an address (IPv6 without brackets)
    uint16_t port = 0;
    std::string target;         // the client's target: "/api/stream", perhaps "?access_token=..."
    std::string authorization;  // the client's Authorization header ("": none)
    std::string last_event_id;  // the client's Last-Event-ID ("": none)
    // Asks for every event the leader still holds (X-Flowrt-Stream-From: held), whatever
    // last_event_id says: what a SharedStream opens with.
    bool from_held = false;
  };
  // What opening gave: a relay once the leader answered 200, else the leader's own answer
  // (a 401 for a token it does not know, a 400 for a bad Last-Event-ID, ...) to pass on.
  struct Opened {
    std::shared_ptr<StreamRelay> relay;
    std::optional<Response> answer;
    // From the leader's head (X-Flowrt-Stream-After, X-Flowrt-Stream-Now): the id its
    // stream follows from, and the last id it had given. Zero when it did not say.
    uint64_t after = 0;
    uint64_t now = 0;
  };
  // Connects, sends the request and reads the answer's head, all within `timeout` and on
  // the calling thread: an error when the leader cannot be reached or does not answer in
  // time. The stream is then read on `io`'s thread.
  static Result<Opened> open(const std::shared_ptr<RelayIo>& io, const Upstream& upstream,
                             std::chrono::milliseconds timeout, std::chrono::milliseconds idle);

  ~StreamRelay() override;
  StreamRelay(const StreamRelay&) = delete;
  StreamRelay& operator=(const StreamRelay&) = delete;

  // The leader's stream already starts where the client asked: every event is new to it.
  uint64_t subscribe() override { return 0; }
  // The client went: the upstream connection is closed.
  void unsubscribe() override;
  std::vector<FeedEvent> after(uint64_t after, size_t max) const override;
  bool ended() const override;
  // The upstream is done (closed, silent past `idle`, or cut for a client that lagged);
  // what is held may still be given out.
  bool upstream_ended() const;

 private:
  struct Connection;  // the Asio side (stream_relay.cpp)
  StreamRelay(std::shared_ptr<RelayIo> io, std::chrono::milliseconds idle);
  void read_more();        // the reading thread
  bool take_lines();       // the reading thread: false when it must end (too much held)
  void take_line(std::string_view line);
  void finish();           // the reading thread: the upstream is done
  void close_upstream();   // any thread

  const std::chrono::milliseconds idle_;
  std::unique_ptr<Connection> conn_;
  FeedEvent partial_;  // the reading thread's: the event its lines build

  mutable std::mutex mu_;
  std::condition_variable read_ended_;  // notified when reading_ goes false
  mutable std::deque<FeedEvent> held_;  // guarded by mu_; after() drops what the client has
  bool upstream_done_ = false;          // guarded by mu_
  bool closing_ = false;                // guarded by mu_
  bool reading_ = false;                // guarded by mu_: a read is pending on the RelayIo
  bool close_pending_ = false;          // guarded by mu_: close_upstream's handler is yet to run
};

}  // namespace flowrt::server
