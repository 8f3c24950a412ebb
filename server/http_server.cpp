#include "server/http_server.h"

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <sys/socket.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <chrono>
#include <cstring>
#include <iterator>
#include <mutex>
#include <optional>
#include <string>
#include <unordered_map>

#include "runtime/engine_log.h"
#include "server/stream_source.h"

namespace flowrt::server {

namespace asio = boost::asio;
namespace beast = boost::beast;
using tcp = asio::ip::tcp;
using Clock = std::chrono::steady_clock;

namespace {
class Session;
}

// What the sessions share: the I/O contexts, the acceptor, the open sessions.
struct HttpServer::State {
  State(HttpServerOptions o, const Router& r, const Authenticator& a)
      : options(std::move(o)), router(r), auth(a), ios(make_ios(options.io_threads)), accept_io(1), acceptor(accept_io) {
    for (auto& io : ios) io_work.push_back(asio::make_work_guard(*io));
  }
  static std::vector<std::unique_ptr<asio::io_context>> make_ios(int threads) {
    std::vector<std::unique_ptr<asio::io_context>> out;
    for (int i = 0; i < std::max(1, threads); ++i) out.push_back(std::make_unique<asio::io_context>(1));
    return out;
  }

  HttpServerOptions options;
  const Router& router;
  const Authenticator& auth;
  // Before io: sessions still queued in io when it is destroyed unregister under mu.
  std::mutex mu;
  std::unordered_map<uint64_t, std::weak_ptr<Session>> sessions;  // guarded by mu
  uint64_t next_session = 0;                                       // guarded by mu
  std::condition_variable all_closed;                              // with mu
  // One I/O context per I/O thread, each run by its thread alone: a connection lives on
  // one of them (round robin), so its handlers run one at a time on that thread (no strand
  // needed) and no handler is handed to another thread.
  std::vector<std::unique_ptr<asio::io_context>> ios;
  size_t next_io = 0;  // on the accept thread: where the next connection goes
  // Keep the I/O threads running while no connection has an operation pending in their
  // context (a deferred reply waits for its waker, say, once the acceptor has closed): the
  // wake is posted to its connection's context and the answer must still be written.
  // stop() lets go of them last.
  std::vector<asio::executor_work_guard<asio::io_context::executor_type>> io_work;
  // Whether `ios` still exist, for threads other than the I/O threads that post to them (a
  // deferred reply's waker): they post only under its mutex while it is open; stop()
  // closes it before it destroys them. Shared with those wakers, which may outlive this.
  struct IoGate {
    std::mutex mu;
    bool open = true;  // guarded by mu
  };
  std::shared_ptr<IoGate> io_gate = std::make_shared<IoGate>();
  // The acceptor has an I/O context and a thread of its own, so that a handler that takes
  // long never delays a new connection, nor stop()'s closing of the acceptor. It is not
  // thread-safe: its completions run on that thread, and stop() closes it there.
  asio::io_context accept_io;
  tcp::acceptor acceptor;
  std::atomic<bool> stopping{false};

  void accept();
};

namespace {

// Whether the request's Transfer-Encoding (its header lines read as one list) leaves the
// body's length unknown: anything but exactly `chunked` (in any case, whitespace around it
// aside) does, for that is the only coding read (RFC 9112 6.3: such a request is refused,
// or its body would be read as the next request). False without the header.
bool transfer_encoding_refused(const http::fields& header) {
  std::string all;
  bool any = false;
  for (auto [it, end] = header.equal_range(http::field::transfer_encoding); it != end; ++it) {
    if (any) all += ',';
    all += it->value();
    any = true;
  }
  if (!any) return false;
  std::string_view coding(all);
  while (!coding.empty() && (coding.front() == ' ' || coding.front() == '\t')) coding.remove_prefix(1);
  while (!coding.empty() && (coding.back() == ' ' || coding.back() == '\t')) coding.remove_suffix(1);
  return !beast::iequals(coding, "chunked");
}

// Why the request's Host header lines are refused (RFC 9112 3.2: an HTTP/1.1 request
// without Host, or any request with more than one, is answered 400), or "" when they are
// not. An HTTP/1.0 request may go without.
std::string host_header_refusal(const http::request_header<>& header) {
  const auto [first, end] = header.equal_range(http::field::host);
  const auto count = std::distance(first, end);
  if (count == 0 && header.version() >= 11) {
    return "the request has no Host header, which every HTTP/1.1 request must have (RFC 9112 section 3.2); "
           "send Host: HOST:PORT";
  }
  if (count > 1) {
    return "the request has " + std::to_string(count) +
           " Host headers; a request may have one only (RFC 9112 section 3.2)";
  }
  return {};
}

// What a connection reads ahead while a deferred reply waits (watch_client), at most.
constexpr size_t kWatchBytes = 64u << 10;

// One connection: reads requests one after another (keep-alive), answers each, until the
// client closes, a limit is passed, or the server stops. Runs on its I/O thread alone.
class Session : public std::enable_shared_from_this<Session> {
 public:
  Session(tcp::socket socket, std::shared_ptr<HttpServer::State> state, uint64_t id)
      : stream_(std::move(socket)),
        state_(std::move(state)),
        id_(id),
        timer_(stream_.get_executor()),
        deadline_timer_(stream_.get_executor()) {
    beast::error_code ec;
    const tcp::endpoint peer = stream_.socket().remote_endpoint(ec);
    loopback_ = !ec && peer.address().is_loopback();
  }

  ~Session() {
    if (feed_) feed_->unsubscribe();
    std::lock_guard lock(state_->mu);
    state_->sessions.erase(id_);
    if (state_->sessions.empty()) state_->all_closed.notify_all();
  }

  void start() { asio::dispatch(stream_.get_executor(), [self = shared_from_this()] { self->read(); }); }

  // From stop(): an idle connection, one still reading a request, and a stream close now;
  // one whose request a route has (its handler runs, its answer is deferred or written)
  // closes after its response. A request still arriving was handed to no route, so
  // nothing of it was done: waiting for the rest of it (a client that stalls halfway
  // through its body) would hold the stop for its whole grace.
  void drain() {
    asio::post(stream_.get_executor(), [self = shared_from_this()] {
      if (!self->busy_ || self->reading_ || self->streaming_) return self->close();
      if (self->deferred_) self->wake_deferred();  // its last poll answers now
    });
  }

  // Too many connections: one answer, then close.
  void refuse() {
    asio::dispatch(stream_.get_executor(), [self = shared_from_this()] {
      self->send(error_response(http::status::service_unavailable, "too many connections; try again later"), false);
    });
  }

 private:
  const ServerLimits& limits() const { return state_->options.limits; }

  void read() {
    if (state_->stopping.load()) return close();
    parser_.emplace();
    parser_->header_limit(static_cast<uint32_t>(limits().header_bytes));
    parser_->body_limit(limits().body_bytes);
    busy_ = false;
    reading_ = true;
    // A new connection's first request line and headers must come within the request
    // timeout; a kept-alive connection's next ones within the idle timeout.
    idle_wait_ = !first_;
    set_deadline(idle_wait_ ? limits().idle_timeout_ms : limits().request_timeout_ms);
    http::async_read_header(stream_, buffer_, *parser_,
                            [self = shared_from_this()](beast::error_code ec, size_t) { self->on_header(ec); });
  }

  void on_header(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    busy_ = true;
    if (transfer_encoding_refused(parser_->get())) {
      return send(error_response(http::status::bad_request,
                                 "the request's Transfer-Encoding is not 'chunked' alone, so its body's length "
                                 "cannot be known; send Content-Length, or Transfer-Encoding: chunked"),
                  false);
    }
    if (std::string why = host_header_refusal(parser_->get()); !why.empty()) {
      return send(error_response(http::status::bad_request, why), false);
    }
    // The rest of the request must come within the request timeout.
    idle_wait_ = false;
    set_deadline(limits().request_timeout_ms);
    http::async_read(stream_, buffer_, *parser_,
                     [self = shared_from_this()](beast::error_code e, size_t) { self->on_read(e); });
  }

  // The read or write in progress must end within `ms`, or it is cancelled (a read is then
  // answered as a timeout: the socket stays open for that answer, which tcp_stream's own
  // expiry would not allow). Moving the deadline is a store: the one deadline timer is
  // armed only when none is pending, or when the new deadline is before the pending one;
  // a timer that fires before the deadline (it moved later) arms itself again. So a
  // request costs no timer operation in the steady state.
  void set_deadline(int64_t ms) {
    timed_out_ = false;
    deadline_ = Clock::now() + std::chrono::milliseconds(ms);
    if (!deadline_armed_ || deadline_ < deadline_timer_.expiry()) arm_deadline();
  }
  // No read or write is timed now (a deferred reply, an event stream).
  void clear_deadline() { deadline_ = Clock::time_point::max(); }

  void arm_deadline() {
    deadline_armed_ = true;
    deadline_timer_.expires_at(deadline_);
    deadline_timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec == asio::error::operation_aborted) return;  // re-armed earlier, or closed
      self->deadline_armed_ = false;
      if (ec || self->closed_ || self->deadline_ == Clock::time_point::max()) return;
      if (Clock::now() < self->deadline_) return self->arm_deadline();  // it moved later
      self->timed_out_ = true;
      beast::error_code ignored;
      self->stream_.socket().cancel(ignored);
    });
  }

  void on_read_error(beast::error_code ec) {
    reading_ = false;
    clear_deadline();
    if (timed_out_) ec = beast::error::timeout;
    if (ec == http::error::end_of_stream || ec == asio::error::operation_aborted || ec == asio::error::connection_reset ||
        ec == asio::error::eof) {
      return close();
    }
    if (ec == beast::error::timeout) {
      // Idle between requests: just close. In the middle of one: say so, naming the limit
      // that ran out (a kept-alive connection's next request line and headers wait under
      // idle_timeout_ms, the rest of a request under request_timeout_ms).
      if (!busy_ && buffer_.size() == 0) return close();
      const std::string message =
          idle_wait_ ? "the request line and headers did not arrive whole within " +
                           std::to_string(limits().idle_timeout_ms) +
                           " ms of the previous answer on this connection (idle_timeout_ms)"
                     : "the request did not arrive whole within " + std::to_string(limits().request_timeout_ms) +
                           " ms (request_timeout_ms)";
      return send(error_response(http::status::request_timeout, message), false);
    }
    if (ec == http::error::body_limit) {
      return send(error_response(http::status::payload_too_large,
                                 "the request body is larger than " + std::to_string(limits().body_bytes) +
                                     " bytes (body_bytes)"),
                  false);
    }
    if (ec == http::error::header_limit) {
      return send(error_response(http::status::request_header_fields_too_large,
                                 "the request line and headers are larger than " +
                                     std::to_string(limits().header_bytes) + " bytes (header_bytes)"),
                  false);
    }
    send(error_response(http::status::bad_request, "malformed HTTP request: " + ec.message()), false);
  }

  void on_read(beast::error_code ec) {
    if (ec) return on_read_error(ec);
    reading_ = false;
    // The drain closed the connection while the request was arriving: it goes to no route.
    if (closed_) return;
    clear_deadline();
    first_ = false;
    request_ = parser_->release();
    handle();
  }

  std::optional<Caller> caller() const {
    const auto auth = request_.find(http::field::authorization);
    const std::string_view header = auth == request_.end() ? std::string_view() : std::string_view(auth->value());
    if (std::optional<Caller> c = state_->auth.authenticate(header, loopback_)) return c;
    // EventSource cannot send headers: the stream takes ?access_token=.
    const std::string_view target = request_.target();
    if (header.empty() && target.starts_with("/api/stream")) {
      std::vector<std::string> segments;
      std::map<std::string, std::string, std::less<>> query;
      if (split_target(target, &segments, &query)) {
        if (auto t = query.find("access_token"); t != query.end()) return state_->auth.authenticate_token(t->second);
      }
    }
    return std::nullopt;
  }

  void handle() {
    const bool keep = request_.keep_alive() && !state_->stopping.load();
    std::optional<Caller> who = caller();
    if (!who && state_->router.is_public(request_)) who = Caller{"anonymous", Role::kViewer, false};
    if (!who) {
      return send(unauthorized_response(state_->auth.has_tokens()
                                            ? kTokenNeeded
                                            : "clients other than loopback need a token, and none is configured"),
                  keep);
    }
    answer(dispatch(*who), keep);
  }

  // The router's reply to request_ (an exception is a 500, logged).
  Reply dispatch(const Caller& who) {
    try {
      return state_->router.dispatch(request_, who);
    } catch (const std::exception& e) {
      engine_log().error("serve: {} {}: {}", std::string(request_.method_string()),
                         std::string(request_.target().substr(0, 200)), e.what());
      return error_response(http::status::internal_server_error, std::string("internal error: ") + e.what());
    }
  }

  void answer(Reply reply, bool keep) {
    if (reply.stream) return start_stream(std::move(reply));
    if (reply.poll) return wait_for(std::move(reply), keep);
    send(std::move(reply.response), keep);
  }

  // A deferred response: polled on its timer, never blocking the thread; a reply
  // with a waker is polled at once when it is woken (the timer is cancelled for it).
  void wait_for(Reply reply, bool keep) {
    auto shared = std::make_shared<Reply>(std::move(reply));
    deferred_ = true;
    if (shared->waker) {
      // Woken from another thread (the store's writer, the cluster's answers), perhaps
      // after the server stopped: the gate says whether the I/O contexts still exist, and
      // holds them while the wake is posted (stop() closes it before it destroys them).
      shared->waker->bind([weak = weak_from_this(), gate = state_->io_gate] {
        std::lock_guard lock(gate->mu);
        if (!gate->open) return;
        if (auto self = weak.lock()) {
          asio::post(self->stream_.get_executor(), [self] {
            if (self->deferred_) self->wake_deferred();
          });
        }
      });
    }
    // Polled at once; then a reply with a waker waits for it (its timer is the fallback),
    // one without is polled 1 ms later, then at doubling intervals.
    const auto first = shared->waker ? shared->max_poll_interval : std::chrono::milliseconds(1);
    poll_deferred(shared, keep, first);
  }

  // On its thread, while a deferred reply waits: its timer ends now, and it is polled.
  void wake_deferred() {
    woken_ = true;
    timer_.cancel();
  }

  void poll_deferred(std::shared_ptr<Reply> reply, bool keep, std::chrono::milliseconds delay) {
    if (closed_) {  // its client went (watch_client): the reply goes with this handler, unanswered
      deferred_ = false;
      return;
    }
    woken_ = false;
    const PollTurn turn = state_->stopping.load()              ? PollTurn::kDraining
                          : Clock::now() >= reply->deadline ? PollTurn::kDeadline
                                                            : PollTurn::kWaiting;
    if (std::optional<Response> res = reply->poll(turn)) {
      end_deferred();
      return send(std::move(*res), keep);
    }
    if (turn != PollTurn::kWaiting) {
      end_deferred();
      return send(error_response(http::status::internal_server_error, "no response"), false);
    }
    if (!watching_) watch_client();
    const auto next = reply->waker ? reply->max_poll_interval : std::min(delay * 2, reply->max_poll_interval);
    timer_.expires_at(std::min(Clock::now() + delay, reply->deadline));
    timer_.async_wait([self = shared_from_this(), reply, keep, next](beast::error_code ec) {
      if (ec == asio::error::operation_aborted && self->woken_) return self->poll_deferred(reply, keep, next);
      if (ec) {
        self->deferred_ = false;
        return self->close();
      }
      self->poll_deferred(reply, keep, next);
    });
  }

  // The deferred reply is answered: the look for the client's close ends (the answer's
  // write and the next request's read use the socket now; bytes it read are in buffer_).
  void end_deferred() {
    deferred_ = false;
    if (!watching_) return;
    watching_ = false;
    ++watch_generation_;
    beast::error_code ignored;
    stream_.socket().cancel(ignored);  // the watch is the one operation on the socket now
  }

  // While a deferred reply waits nothing else reads the socket: this looks for the client's
  // close (or a reset), which abandons the reply: the connection closes, and the reply goes
  // unanswered with its timer's handler (what it holds goes with it: a keyed write's claim,
  // a call's watch of its context), so a client that left holds no connection. Bytes that
  // come meanwhile (the next request, pipelined) are added to buffer_, where the next
  // request's read finds them, up to kWatchBytes; past those the watch ends, and the rest
  // waits in the socket until the reply is answered. An asynchronous read, not a wait for
  // readiness: a read looks at what is there first, so a close that came before it started
  // is seen too (a wait on the edge-triggered reactor missed it under load). Its own
  // buffer: the handler of a read cancelled by end_deferred runs before the answer's write
  // completes, so what it read is in buffer_ before the next request's read begins.
  void watch_client() {
    if (buffer_.size() >= kWatchBytes) return;
    watching_ = true;
    stream_.socket().async_read_some(
        asio::buffer(watch_buffer_),
        [self = shared_from_this(), generation = watch_generation_](beast::error_code ec, size_t n) {
          if (n > 0) {
            const auto space = self->buffer_.prepare(n);
            std::memcpy(space.data(), self->watch_buffer_.data(), n);
            self->buffer_.commit(n);
          }
          if (generation != self->watch_generation_ || self->closed_) return;  // answered, or closed
          self->watching_ = false;
          if (ec) return self->close();  // the client closed, or the connection broke
          self->watch_client();
        });
  }

  void start_stream(Reply reply) {
    streaming_ = true;
    feed_ = reply.stream;
    const uint64_t now = feed_->subscribe();
    stream_after_ = reply.stream_after.value_or(now);
    out_ =
        "HTTP/1.1 200 OK\r\nContent-Type: text/event-stream\r\nCache-Control: no-store\r\n"
        "Connection: close\r\nX-Accel-Buffering: no\r\nX-Flowrt-Stream-After: " +
        std::to_string(stream_after_) + "\r\nX-Flowrt-Stream-Now: " + std::to_string(now) + "\r\n\r\n";
    // HEAD: the headers alone, and the connection closes once they are written.
    head_only_ = request_.method() == http::verb::head;
    if (!head_only_) out_ += "retry: 1000\n\n";
    last_heartbeat_ = Clock::now();
    write_stream();
  }

  // Each write must end within request_timeout_ms: a client that stops reading cannot
  // hold the connection (the deadline cancels the write, and the connection closes).
  void write_stream() {
    if (out_.empty()) return stream_tick();
    set_deadline(limits().request_timeout_ms);
    asio::async_write(stream_.socket(), asio::buffer(out_), [self = shared_from_this()](beast::error_code ec, size_t) {
      self->clear_deadline();
      if (ec || self->head_only_) return self->close();
      self->out_.clear();
      self->stream_tick();
    });
  }

  void stream_tick() {
    if (state_->stopping.load()) return close();
    // Bounded in bytes too: a client that does not read holds at most that much (and one
    // event) until its write's deadline lets it go.
    const StreamTurn turn = next_stream_turn(*feed_, stream_after_, kStreamTurnEvents, kStreamTurnBytes);
    if (turn.last) return close();  // all it had is written
    for (const FeedEvent& e : turn.events) append_sse_event(out_, e);
    stream_after_ = turn.next_after;
    if (out_.empty() && Clock::now() - last_heartbeat_ > std::chrono::milliseconds(limits().stream_heartbeat_ms)) {
      out_ = ": heartbeat\n\n";  // a comment: keeps proxies and the client's connection alive
    }
    if (!out_.empty()) {
      last_heartbeat_ = Clock::now();
      return write_stream();
    }
    timer_.expires_after(std::chrono::milliseconds(100));
    timer_.async_wait([self = shared_from_this()](beast::error_code ec) {
      if (ec) return self->close();
      self->stream_tick();
    });
  }

  void send(Response res, bool keep) {
    reading_ = false;  // an answer is written now (also a refusal of a request still arriving)
    res.keep_alive(keep);
    res.set(http::field::server, "flowrt");
    if (request_.method() == http::verb::head) res.body().clear();
    response_ = std::make_shared<Response>(std::move(res));
    set_deadline(limits().request_timeout_ms);
    http::async_write(stream_, *response_, [self = shared_from_this(), keep](beast::error_code ec, size_t) {
      self->clear_deadline();
      self->response_.reset();
      if (ec || !keep) return self->close();
      self->read();
    });
  }

  void close() {
    if (closed_) return;
    closed_ = true;
    timer_.cancel();
    deadline_timer_.cancel();
    beast::error_code ec;
    stream_.socket().shutdown(tcp::socket::shutdown_send, ec);
    stream_.socket().close(ec);
  }

  beast::tcp_stream stream_;
  std::shared_ptr<HttpServer::State> state_;
  const uint64_t id_;
  asio::steady_timer timer_;       // deferred responses and event streams
  bool deferred_ = false;          // a deferred reply waits
  bool watching_ = false;          // watch_client's read is pending
  std::array<char, 4096> watch_buffer_;  // what that read reads, then added to buffer_
  uint64_t watch_generation_ = 0;  // a watch whose generation is past is over (end_deferred)
  bool woken_ = false;             // its timer was cancelled to poll it now
  // The idle and request timeouts of reads and writes (set_deadline).
  asio::steady_timer deadline_timer_;
  Clock::time_point deadline_ = Clock::time_point::max();  // of the read or write in progress
  bool deadline_armed_ = false;                             // a timer wait is pending
  bool timed_out_ = false;
  // The read in progress waits for a kept-alive connection's next request line and
  // headers: its deadline is idle_timeout_ms, not request_timeout_ms.
  bool idle_wait_ = false;
  beast::flat_buffer buffer_;
  std::optional<http::request_parser<http::string_body>> parser_;
  Request request_;
  std::shared_ptr<Response> response_;
  bool loopback_ = false;
  bool first_ = true;
  bool busy_ = false;
  bool reading_ = false;  // a request is being read, not yet handed to a route
  bool streaming_ = false;
  bool head_only_ = false;  // a HEAD of the event stream: its headers, then the close
  bool closed_ = false;
  std::shared_ptr<StreamSource> feed_;
  uint64_t stream_after_ = 0;
  std::string out_;
  Clock::time_point last_heartbeat_;
};

}  // namespace

void HttpServer::State::accept() {
  asio::io_context& io = *ios[next_io++ % ios.size()];
  acceptor.async_accept(io, [this](beast::error_code ec, tcp::socket socket) {
    if (ec) {
      if (ec == asio::error::operation_aborted || stopping.load()) return;
      engine_log().warn("serve: accept: {}", ec.message());
      return accept();
    }
    std::shared_ptr<Session> session;
    bool refuse = false;
    {
      std::lock_guard lock(mu);
      const uint64_t id = next_session++;
      refuse = sessions.size() >= options.limits.connections;
      // The State outlives every session: stop() waits for them (or for the I/O threads).
      session = std::make_shared<Session>(std::move(socket), std::shared_ptr<State>(this, [](State*) {}), id);
      sessions.emplace(id, session);
    }
    if (refuse) {
      session->refuse();
    } else {
      session->start();
    }
    accept();
  });
}

HttpServer::HttpServer(HttpServerOptions options, const Router& router, const Authenticator& auth)
    : options_(std::move(options)), state_(std::make_shared<State>(options_, router, auth)) {}

HttpServer::~HttpServer() { stop(0); }

ListeningSocket::~ListeningSocket() {
  if (fd_ >= 0) ::close(fd_);
}

int ListeningSocket::take() { return std::exchange(fd_, -1); }

Result<std::shared_ptr<ListeningSocket>> HttpServer::share_listener() const {
  // The acceptor's descriptor is set by start() and closed by stop() only.
  const int fd = ::dup(state_->acceptor.native_handle());
  if (fd < 0) return Error{std::string("cannot hand its port over: ") + std::strerror(errno)};
  return std::make_shared<ListeningSocket>(fd);
}

Status HttpServer::start() {
  beast::error_code ec;
  tcp::acceptor& acceptor = state_->acceptor;
  if (options_.listener) {
    // A socket listening already (a second descriptor of another server's): accepted on
    // as it is, its address its own.
    const int fd = options_.listener->take();
    sockaddr_storage bound{};
    socklen_t size = sizeof bound;
    if (fd < 0 || ::getsockname(fd, reinterpret_cast<sockaddr*>(&bound), &size) != 0) {
      if (fd >= 0) ::close(fd);
      return Error{"cannot listen on the port handed over: it is not an open socket"};
    }
    acceptor.assign(bound.ss_family == AF_INET6 ? tcp::v6() : tcp::v4(), fd, ec);
    if (ec) {
      ::close(fd);
      return Error{"cannot listen on the port handed over: " + ec.message()};
    }
  } else {
    const asio::ip::address address = asio::ip::make_address(options_.host, ec);
    if (ec) return Error{"cannot listen on '" + options_.host + "': not an IP address"};
    const tcp::endpoint endpoint(address, options_.port);
    acceptor.open(endpoint.protocol(), ec);
    if (!ec) acceptor.set_option(asio::socket_base::reuse_address(true), ec);
    if (!ec) acceptor.bind(endpoint, ec);
    if (!ec) acceptor.listen(asio::socket_base::max_listen_connections, ec);
    if (ec) {
      return Error{"cannot listen on " + options_.host + ":" + std::to_string(options_.port) + ": " + ec.message()};
    }
  }
  port_ = acceptor.local_endpoint().port();
  state_->accept();
  threads_.emplace_back([s = state_] { s->accept_io.run(); });  // ends once the acceptor is closed
  for (auto& io : state_->ios) {
    threads_.emplace_back([s = state_, io = io.get()] { io->run(); });
  }
  return Status::ok();
}

size_t HttpServer::connections() const {
  std::lock_guard lock(state_->mu);
  return state_->sessions.size();
}

void HttpServer::stop(int64_t grace_ms) {
  if (threads_.empty()) return;
  state_->stopping.store(true);
  // A raw pointer: a handler still queued when the I/O context stops must not keep the
  // State (and so its own queue) alive. The State outlives every run of it.
  asio::post(state_->accept_io, [s = state_.get()] {
    beast::error_code ec;
    s->acceptor.close(ec);
  });
  std::vector<std::shared_ptr<Session>> open;
  {
    std::lock_guard lock(state_->mu);
    for (auto& [id, weak] : state_->sessions) {
      if (auto s = weak.lock()) open.push_back(std::move(s));
    }
  }
  for (auto& s : open) s->drain();
  open.clear();
  {
    std::unique_lock lock(state_->mu);
    state_->all_closed.wait_for(lock, std::chrono::milliseconds(grace_ms), [&] { return state_->sessions.empty(); });
  }
  for (auto& work : state_->io_work) work.reset();
  for (auto& io : state_->ios) io->stop();
  state_->accept_io.stop();
  for (std::thread& t : threads_) t.join();
  threads_.clear();
  // The close posted above does not run when the I/O context stopped first: the port would
  // stay taken for as long as this server lives (a cluster node that takes the lead listens
  // on it again at once). No thread runs the acceptor's handlers any more.
  beast::error_code ec;
  state_->acceptor.close(ec);
  // Handlers still queued never run now, and they hold their sessions, and a deferred
  // reply holds what its poll needs (a keyed write's open claim, which tells the engine
  // when it goes). Destroyed with the State, they would go after the engine that the
  // service stops once the server has: so they go now, with the I/O contexts that queue
  // them. The accept cancelled by the close goes first: its socket belongs to one of them.
  state_->accept_io.restart();
  state_->accept_io.poll();  // its handler returns at once (stopping)
  {
    std::lock_guard lock(state_->io_gate->mu);  // no waker posts to them from now on
    state_->io_gate->open = false;
  }
  state_->io_work.clear();
  state_->ios.clear();
}

}  // namespace flowrt::server
