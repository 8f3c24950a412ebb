// EventQueue: the one FIFO queue of trigger events, in commit order.
//
// Built on moodycamel::ConcurrentQueue, which orders items only per producer: every push
// goes through the one producer token, and pushes happen under the Dispatcher's commit
// lock (REQUIRES), so the queue order is the commit order across all producers. Any thread
// may pop; items are claimed in queue order. The moodycamel header stays out of this one.
// size() counts the events pushed and not yet popped (the max_queued_events budget).
#pragma once

#include <atomic>
#include <cstddef>
#include <memory>

namespace flowrt {

class Context;

class EventQueue {
 public:
  EventQueue();
  ~EventQueue();
  EventQueue(const EventQueue&) = delete;
  EventQueue& operator=(const EventQueue&) = delete;

  // REQUIRES: the caller holds the commit lock (one producer at a time).
  void push(Context* event);
  bool try_pop(Context** event);
  size_t size_approx() const;
  // Pushed and not yet popped; exact once pushes and pops have returned.
  size_t size() const { return size_.load(std::memory_order_acquire); }

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
  std::atomic<size_t> size_{0};
};

}  // namespace flowrt
