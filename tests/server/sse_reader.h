// StreamReader: a test's client of GET /api/stream (Server-Sent Events) over a raw
// connection, reading events one at a time; a receive timeout keeps a broken stream from
// hanging a test. Used by the stream tests and the cluster's (a follower's relayed stream).
#pragma once

#include <sys/socket.h>
#include <sys/time.h>

#include <chrono>
#include <functional>
#include <optional>
#include <string>

#include "plans/value.h"
#include "plans/value_json.h"
#include "tests/server/http_client.h"

namespace flowrt::testing_http {

// One event of the stream.
struct SseEvent {
  uint64_t id = 0;
  std::string type;
  Value data;
};

// Reads a stream's events from a raw connection (a receive timeout keeps a broken stream
// from hanging the test).
class StreamReader {
 public:
  StreamReader(uint16_t port, const std::string& request) : client_(port) {
    timeval tv{30, 0};
    ::setsockopt(client_.socket().native_handle(), SOL_SOCKET, SO_RCVTIMEO, &tv, sizeof tv);
    client_.write_raw(request);
  }
  // The next event (skipping comments and the retry line); nullopt when the stream ended,
  // or when no event came within 30 s (the server's keep-alive comments do not count).
  std::optional<SseEvent> next() {
    SseEvent e;
    const auto deadline = std::chrono::steady_clock::now() + std::chrono::seconds(30);
    while (true) {
      if (std::chrono::steady_clock::now() > deadline) return std::nullopt;
      std::optional<std::string> line = read_line();
      if (!line) return std::nullopt;
      if (line->empty()) {
        if (!e.type.empty()) return e;
        continue;
      }
      if (line->starts_with("id: ")) e.id = std::stoull(line->substr(4));
      if (line->starts_with("event: ")) e.type = line->substr(7);
      if (line->starts_with("data: ")) e.data = *parse_json(line->substr(6));
    }
  }
  // Events until one matches, or the stream ends.
  // Every event read is kept in seen() (for failure messages).
  std::optional<SseEvent> until(const std::function<bool(const SseEvent&)>& match) {
    while (std::optional<SseEvent> e = next()) {
      seen_ += e->type + " " + std::to_string(e->id) + "\n";
      if (match(*e)) return e;
    }
    return std::nullopt;
  }
  const std::string& seen() const { return seen_; }
  // The server closed the stream (rather than it falling silent until the timeout).
  bool closed() const { return closed_; }
  const std::string& head() const { return head_; }
  // Reads the response's head (and the retry line sent with it): once it is here, the
  // server has subscribed this stream to the feed.
  bool opened() { return read_line().has_value(); }

 private:
  std::optional<std::string> read_line() {
    while (true) {
      const size_t nl = buffer_.find('\n');
      if (nl != std::string::npos) {
        std::string line = buffer_.substr(0, nl);
        buffer_.erase(0, nl + 1);
        if (!line.empty() && line.back() == '\r') line.pop_back();
        if (!in_body_) {
          head_ += line + "\n";
          if (line.empty()) in_body_ = true;
          continue;
        }
        return line;
      }
      // recv itself, not Asio's read_some, which polls again without end when SO_RCVTIMEO
      // expires: a stream that never sends fails the test after 30 s instead of hanging it.
      char chunk[4096];
      const ssize_t n = ::recv(client_.socket().native_handle(), chunk, sizeof chunk, 0);
      if (n == 0) closed_ = true;
      if (n <= 0) return std::nullopt;
      buffer_.append(chunk, static_cast<size_t>(n));
    }
  }
  HttpClient client_;
  std::string buffer_;
  std::string head_;
  std::string seen_;
  bool in_body_ = false;
  bool closed_ = false;
};

}  // namespace flowrt::testing_http
