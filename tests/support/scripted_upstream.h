// A scripted leader for the tests of a follower's event stream (server/stream_relay.h,
// server/shared_stream.h): one connection on a loopback socket, whose request head is
// kept and whose answer the test writes, when it likes.
#pragma once

#include <boost/asio.hpp>

#include <memory>
#include <string>
#include <thread>

#include "server/relay_io.h"

namespace flowrt::test_support {

// One connection's worth of a leader: accepts, reads the request's head, then the test
// writes what it likes, when it likes.
class ScriptedUpstream {
 public:
  ScriptedUpstream() : acceptor_(io_, boost::asio::ip::tcp::endpoint(boost::asio::ip::make_address("127.0.0.1"), 0)) {}
  uint16_t port() const { return acceptor_.local_endpoint().port(); }
  // Accepts on a thread of its own (open() connects meanwhile); the request's head is kept.
  void accept_in_background() {
    thread_ = std::thread([this] {
      socket_ = std::make_unique<boost::asio::ip::tcp::socket>(io_);
      acceptor_.accept(*socket_);
      boost::asio::streambuf buf;
      boost::asio::read_until(*socket_, buf, "\r\n\r\n");
      request_.assign(boost::asio::buffers_begin(buf.data()), boost::asio::buffers_end(buf.data()));
    });
  }
  void join() {
    if (thread_.joinable()) thread_.join();
  }
  void send(const std::string& bytes) { boost::asio::write(*socket_, boost::asio::buffer(bytes)); }
  void close() {
    boost::system::error_code ignored;
    socket_->close(ignored);
  }
  const std::string& request() const { return request_; }
  // True once the other side closed the connection (looks without waiting).
  bool peer_closed() {
    boost::system::error_code ec;
    socket_->non_blocking(true, ec);
    char bytes[512];
    while (true) {
      socket_->read_some(boost::asio::buffer(bytes), ec);
      if (ec == boost::asio::error::would_block || ec == boost::asio::error::try_again) return false;
      if (ec) return true;  // end of file, or reset
    }
  }
  ~ScriptedUpstream() { join(); }

 private:
  boost::asio::io_context io_;
  boost::asio::ip::tcp::acceptor acceptor_;
  std::unique_ptr<boost::asio::ip::tcp::socket> socket_;
  std::thread thread_;
  std::string request_;
};

inline constexpr const char* kStreamHead =
    "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nConnection: close\r\n\r\nretry: 1000\n\n";

// The reading thread the relays of this test binary share (a node has one, too).
inline const std::shared_ptr<server::RelayIo>& relay_io() {
  static const std::shared_ptr<server::RelayIo> io = server::RelayIo::start();
  return io;
}

}  // namespace flowrt::test_support
