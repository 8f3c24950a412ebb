#include "server/stream_relay.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <unistd.h>

#include <charconv>

namespace flowrt::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;

struct StreamRelay::Connection {
  explicit Connection(std::shared_ptr<RelayIo> relay_io) : io(std::move(relay_io)), stream(io->io()) {}
  std::shared_ptr<RelayIo> io;  // declared first: outlives the stream on it
  beast::tcp_stream stream;
  beast::flat_buffer buffer;
};

StreamRelay::StreamRelay(std::shared_ptr<RelayIo> io, std::chrono::milliseconds idle)
    : idle_(idle), conn_(std::make_unique<Connection>(std::move(io))) {}

StreamRelay::~StreamRelay() {
  close_upstream();
  // The close ends the pending read on the RelayIo's thread, which then notifies. A
  // stopped RelayIo runs no handler any more (then nothing but this touches the
  // connection), and stop() notifies no relay: so the wait looks again every 20 ms.
  std::unique_lock lock(mu_);
  while ((reading_ || close_pending_) && !conn_->io->stopped()) {
    read_ended_.wait_for(lock, std::chrono::milliseconds(20));
  }
}

Result<StreamRelay::Opened> StreamRelay::open(const std::shared_ptr<RelayIo>& io, const Upstream& up,
                                               std::chrono::milliseconds timeout, std::chrono::milliseconds idle) {
  std::shared_ptr<StreamRelay> relay(new StreamRelay(io, idle));
  Connection& c = *relay->conn_;
  // The handshake runs here, on an I/O context of its own; the connection then moves to
  // the RelayIo, whose thread reads it.
  asio::io_context setup;
  beast::tcp_stream handshake(setup);
  http::request<http::empty_body> req{http::verb::get, up.target, 11};
  req.set(http::field::host, up.host + ":" + std::to_string(up.port));
  req.set(http::field::accept, "text/event-stream");
  if (!up.authorization.empty()) req.set(http::field::authorization, up.authorization);
  if (!up.last_event_id.empty()) req.set("Last-Event-ID", up.last_event_id);
  if (up.from_held) req.set("X-Flowrt-Stream-From", "held");
  http::response_parser<http::string_body> parser;
  parser.body_limit(64 * 1024);  // a refusal's JSON; a stream's body is read apart
  std::string failed;            // what went wrong, in words
  bool whole = false;            // the head read (and, unless 200, the body)

  // One chain on the relay's own I/O context, run here: the stream's timer bounds it all.
  boost::system::error_code ec;
  std::vector<tcp::endpoint> endpoints;
  if (const asio::ip::address address = asio::ip::make_address(up.host, ec); !ec) {
    endpoints.emplace_back(address, up.port);
  } else {
    tcp::resolver resolver(setup);
    for (const auto& r : resolver.resolve(up.host, std::to_string(up.port), ec)) endpoints.push_back(r.endpoint());
    if (ec || endpoints.empty()) return Error{"cannot resolve '" + up.host + "': " + ec.message()};
  }
  handshake.expires_after(timeout);
  handshake.async_connect(endpoints, [&](beast::error_code connected, const tcp::endpoint&) {
    if (connected) return void(failed = "connect: " + connected.message());
    http::async_write(handshake, req, [&](beast::error_code sent, size_t) {
      if (sent) return void(failed = "send: " + sent.message());
      http::async_read_header(handshake, c.buffer, parser, [&](beast::error_code head, size_t) {
        if (head) return void(failed = "read: " + head.message());
        if (parser.get().result() == http::status::ok) return void(whole = true);
        http::async_read(handshake, c.buffer, parser, [&](beast::error_code body, size_t) {
          if (body) return void(failed = "read: " + body.message());
          whole = true;
        });
      });
    });
  });
  setup.run();
  if (!whole) {
    return Error{failed.empty() ? std::string("no answer in time") : failed};
  }
  Opened out;
  if (parser.get().result() != http::status::ok) {
    Response answer = parser.release();
    answer.keep_alive(false);
    out.answer = std::move(answer);
    return out;
  }
  auto id_in = [&](std::string_view field) -> uint64_t {
    const auto h = parser.get().find(field);
    if (h == parser.get().end()) return 0;
    const std::string_view v = h->value();
    uint64_t id = 0;
    const auto r = std::from_chars(v.data(), v.data() + v.size(), id);
    return r.ec == std::errc() && r.ptr == v.data() + v.size() ? id : 0;
  };
  out.after = id_in("X-Flowrt-Stream-After");
  out.now = id_in("X-Flowrt-Stream-Now");
  // The bytes after the head, already read, are the stream's first.
  if (!relay->take_lines()) return Error{"the leader's stream began with an over-long line"};
  tcp::socket socket = handshake.release_socket();
  const tcp::endpoint local = socket.local_endpoint(ec);
  const tcp::socket::native_handle_type fd = ec ? -1 : socket.release(ec);
  if (!ec) {
    c.stream.socket().assign(local.protocol(), fd, ec);
    if (ec) ::close(fd);  // released, and not taken: no socket owns it any more
  }
  if (ec) return Error{"cannot hand the leader's stream to the relay's thread: " + ec.message()};
  {
    std::lock_guard lock(relay->mu_);
    relay->reading_ = true;
  }
  StreamRelay* self = relay.get();  // kept until its read ends (the destructor waits)
  asio::post(c.stream.get_executor(), [self] { self->read_more(); });
  out.relay = std::move(relay);
  return out;
}

void StreamRelay::read_more() {
  Connection& c = *conn_;
  c.stream.expires_after(idle_);
  c.stream.async_read_some(c.buffer.prepare(8192), [this](beast::error_code e, size_t n) {
    if (e) return finish();
    conn_->buffer.commit(n);
    if (!take_lines()) return finish();
    read_more();
  });
}

bool StreamRelay::take_lines() {
  beast::flat_buffer& b = conn_->buffer;
  const std::string_view bytes(static_cast<const char*>(b.data().data()), b.size());
  size_t used = 0;
  while (true) {
    const size_t nl = bytes.find('\n', used);
    if (nl == std::string_view::npos) break;
    std::string_view line = bytes.substr(used, nl - used);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    take_line(line);
    used = nl + 1;
  }
  b.consume(used);
  std::lock_guard lock(mu_);
  return b.size() <= kMaxLine && partial_.data.size() <= kMaxLine && held_.size() <= kMaxHeld && !closing_;
}

// Server-Sent Events: "field: value" lines, an empty line ending each event; comments
// (":") and the retry field are not passed on.
void StreamRelay::take_line(std::string_view line) {
  if (line.empty()) {
    if (!partial_.type.empty() || !partial_.data.empty()) {
      if (partial_.type.empty()) partial_.type = "message";
      std::lock_guard lock(mu_);
      held_.push_back(std::move(partial_));
    }
    partial_ = FeedEvent{};
    return;
  }
  if (line.front() == ':') return;
  const size_t colon = line.find(':');
  const std::string_view field = line.substr(0, colon);
  std::string_view value = colon == std::string_view::npos ? std::string_view() : line.substr(colon + 1);
  if (!value.empty() && value.front() == ' ') value.remove_prefix(1);
  if (field == "id") {
    uint64_t id = 0;
    const auto r = std::from_chars(value.data(), value.data() + value.size(), id);
    if (r.ec == std::errc() && r.ptr == value.data() + value.size()) partial_.id = id;
  } else if (field == "event") {
    partial_.type = std::string(value);
  } else if (field == "data") {
    if (!partial_.data.empty()) partial_.data += '\n';
    partial_.data += value;
  }
}

void StreamRelay::finish() {
  beast::error_code ignored;
  conn_->stream.socket().close(ignored);
  std::lock_guard lock(mu_);
  upstream_done_ = true;
  reading_ = false;  // the last thing this thread does with the relay
  read_ended_.notify_all();
}

void StreamRelay::close_upstream() {
  {
    std::lock_guard lock(mu_);
    const bool first = !closing_;
    closing_ = true;
    if (!first || !reading_) return;  // asked before, or no read pending: nothing to end
    close_pending_ = true;
  }
  // On the reading thread, which alone uses the connection: the pending read ends. The
  // destructor waits for this too.
  asio::post(conn_->stream.get_executor(), [this] {
    beast::error_code ignored;
    conn_->stream.socket().close(ignored);
    std::lock_guard lock(mu_);
    close_pending_ = false;
    read_ended_.notify_all();
  });
}

void StreamRelay::unsubscribe() { close_upstream(); }

std::vector<FeedEvent> StreamRelay::after(uint64_t after, size_t max) const {
  // One client reads a relay, and takes what it is given: handed out is dropped. `after`
  // is the last id it was given, so nothing held is at or before it.
  (void)after;
  std::lock_guard lock(mu_);
  std::vector<FeedEvent> out;
  for (const FeedEvent& e : held_) {
    if (out.size() >= max) break;
    out.push_back(e);
  }
  held_.erase(held_.begin(), held_.begin() + static_cast<std::ptrdiff_t>(out.size()));
  return out;
}

bool StreamRelay::upstream_ended() const {
  std::lock_guard lock(mu_);
  return upstream_done_;
}

bool StreamRelay::ended() const {
  std::lock_guard lock(mu_);
  return upstream_done_ && held_.empty();
}

}  // namespace flowrt::server
