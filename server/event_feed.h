// EventFeed: the changes `GET /api/stream` sends (Server-Sent Events): contexts started,
// a step ended, waiting, ended; and locks changed. Each change has an id, increasing by one;
// a client that reconnects with Last-Event-ID gets what it missed, as long as the feed
// still holds it (the last `capacity` changes), else a "reset" event telling it to reload.
//
// The feed watches the engine from a thread of its own every `period_ms`: it reads the
// engine's contexts and locks as any reader does, so running flows pay nothing for it, and
// only while a client is connected. When a client connects and no other is, the feed
// begins watching afresh: it follows every context not ended (recovered ones included) as
// it is then, and adds a "reset" event, since whatever changed while no one watched was
// not seen: a client resuming from before that gap is told to reload. One look announces
// at most the 500 newest contexts that started; when more did, a "reset" comes before
// them, so that a client knows some were left out and reloads.
// Thread-safety: any thread; one mutex guards the ring of changes.
#pragma once

#include <atomic>
#include <condition_variable>
#include <cstdint>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "plans/value.h"
#include "server/stream_source.h"

namespace flowrt {
class Engine;
}

namespace flowrt::server {

class EventFeed final : public StreamSource {
 public:
  EventFeed(Engine& engine, int64_t period_ms = 100, size_t capacity = 10000);
  ~EventFeed();
  EventFeed(const EventFeed&) = delete;
  EventFeed& operator=(const EventFeed&) = delete;

  // Starts and stops the watching thread.
  void start();
  void stop();

  // The changes after `after` (at most `max`); a single "reset" event when some of those
  // are no longer held.
  std::vector<FeedEvent> after(uint64_t after, size_t max) const override;
  std::vector<FeedEvent> after(uint64_t after) const { return this->after(after, 1000); }
  bool ended() const override { return false; }  // the server's own feed ends with the server
  uint64_t last_id() const;
  // The id after which the feed holds every event: before its oldest one held (its last
  // id when it holds none).
  uint64_t held_after() const;
  // Streams open on the feed now.
  int clients() const { return subscribers_.load(); }

  // One look at the engine now (the thread calls it; tests call it to step the feed).
  void poll();

  // A stream client came or went: the feed reads contexts only while one is connected.
  // subscribe returns the id a new client follows from (after the reset, when it was the
  // first: the client has just loaded what it shows).
  uint64_t subscribe() override;
  void unsubscribe() override;

  // What the feed measured: contexts started per second over the last seconds.
  struct Figures {
    double contexts_per_s = 0;
  };
  Figures figures() const;

 private:
  void publish(std::string type, const Value& data);
  // The first subscriber came: follow what has not ended, mark the gap (poll_mu_ held).
  void begin_watching();
  // Every lock's state now: name -> its JSON.
  std::map<std::string, std::string> lock_states() const;

  Engine& engine_;
  const int64_t period_ms_;
  const size_t capacity_;

  mutable std::mutex mu_;
  std::deque<FeedEvent> ring_;  // guarded by mu_
  uint64_t next_id_ = 1;        // guarded by mu_

  // The watcher's own state, guarded by poll_mu_ (poll, and subscribe's begin_watching).
  std::mutex poll_mu_;
  uint64_t seen_seq_ = 0;                   // contexts up to this one have been announced
  std::map<uint64_t, std::string> open_;    // seq -> "status/steps" of contexts not ended
  std::map<std::string, std::string> locks_;  // name -> its state's JSON

  std::atomic<int> subscribers_{0};
  // guarded by mu_: (steady ms, contexts_started) samples of the last seconds
  std::deque<std::pair<int64_t, uint64_t>> rate_;

  std::mutex run_mu_;
  std::condition_variable run_cv_;
  bool running_ = false;  // guarded by run_mu_
  std::thread thread_;
};

}  // namespace flowrt::server
