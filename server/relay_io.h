// RelayIo: the one thread on which a cluster follower reads the leader streams it passes
// on (server/stream_relay.h; one at a time since they are shared, server/shared_stream.h,
// but a stream just replaced may still be closing).
//
// Ownership: shared. The node that makes it keeps it while it serves, and each relay keeps
// it while the relay lives, so that the I/O context outlives every socket on it. Its
// owner stops it (stop(): no handler runs after it returns) before letting go; a relay
// that outlives that closes its socket itself, without waiting for the thread.
// Thread-safety: io() and stopped() from any thread; stop() from any thread but its own.
#pragma once

#include <atomic>
#include <memory>
#include <mutex>
#include <thread>

#include <boost/asio/executor_work_guard.hpp>
#include <boost/asio/io_context.hpp>

namespace flowrt::server {

class RelayIo {
 public:
  // Starts the thread.
  static std::shared_ptr<RelayIo> start();
  ~RelayIo();
  RelayIo(const RelayIo&) = delete;
  RelayIo& operator=(const RelayIo&) = delete;

  boost::asio::io_context& io() { return io_; }
  // Ends the thread: the handlers pending stay unrun. Idempotent.
  void stop();
  // True once stop() has joined the thread: no handler runs any more.
  bool stopped() const { return stopped_.load(std::memory_order_acquire); }

 private:
  RelayIo();

  boost::asio::io_context io_;
  boost::asio::executor_work_guard<boost::asio::io_context::executor_type> work_;
  std::mutex stop_mu_;  // one stop() joins at a time
  std::thread thread_;
  std::atomic<bool> stopped_{false};
};

}  // namespace flowrt::server
