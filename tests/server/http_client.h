// A plain HTTP/1.1 client for the server's tests: one keep-alive connection to a loopback
// port, one request at a time (Boost.Beast, synchronous), and raw socket access for tests
// of malformed or slow requests. Not thread-safe: one per test thread.
#pragma once

#include <boost/asio.hpp>
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <chrono>
#include <optional>
#include <string>

#include "plans/value.h"
#include "plans/value_json.h"

namespace flowrt::testing_http {

namespace asio = boost::asio;
namespace beast = boost::beast;
namespace http = beast::http;
using tcp = asio::ip::tcp;

struct HttpReply {
  int status = 0;
  std::string body;
  http::fields headers;
  Value json() const {
    Result<Value> v = parse_json(body);
    return v ? *v : Value();
  }
  std::string header(std::string_view name) const {
    auto it = headers.find(name);
    return it == headers.end() ? "" : std::string(it->value());
  }
};

class HttpClient {
 public:
  explicit HttpClient(uint16_t port) : port_(port), socket_(io_) { connect(); }

  void connect() {
    beast::error_code ec;
    socket_.close(ec);
    socket_ = tcp::socket(io_);
    socket_.connect(tcp::endpoint(asio::ip::make_address("127.0.0.1"), port_));
    buffer_.clear();
  }

  // Sends one request and reads its response; reconnects once when the server had closed
  // the kept-alive connection.
  HttpReply request(http::verb method, const std::string& target, const std::string& body = "",
                    const std::string& token = "", const std::string& content_type = "application/json") {
    http::request<http::string_body> req{method, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    if (!body.empty()) req.set(http::field::content_type, content_type);
    req.body() = body;
    req.prepare_payload();
    req.keep_alive(true);
    return exchange(req);
  }

  HttpReply get(const std::string& target, const std::string& token = "") { return request(http::verb::get, target, "", token); }
  HttpReply post(const std::string& target, const std::string& body, const std::string& token = "") {
    return request(http::verb::post, target, body, token);
  }
  // A POST naming itself with an Idempotency-Key.
  HttpReply post_keyed(const std::string& target, const std::string& body, const std::string& key,
                       const std::string& token = "") {
    http::request<http::string_body> req{http::verb::post, target, 11};
    req.set(http::field::host, "127.0.0.1");
    if (!token.empty()) req.set(http::field::authorization, "Bearer " + token);
    req.set(http::field::content_type, "application/json");
    req.set("Idempotency-Key", key);
    req.body() = body;
    req.prepare_payload();
    req.keep_alive(true);
    return exchange(req);
  }

  // Writes raw bytes; reads one response (nullopt when the server closed without one).
  std::optional<HttpReply> raw(const std::string& bytes) {
    beast::error_code ec;
    asio::write(socket_, asio::buffer(bytes), ec);
    if (ec) return std::nullopt;
    return read_reply();
  }
  void write_raw(const std::string& bytes) { asio::write(socket_, asio::buffer(bytes)); }
  // Reads one response; `head`: the answer to a HEAD request (a header, no body).
  std::optional<HttpReply> read_reply(bool head = false) {
    http::response_parser<http::string_body> parser;
    parser.skip(head);
    parser.body_limit(64u << 20);
    beast::error_code ec;
    http::read(socket_, buffer_, parser, ec);
    if (ec) return std::nullopt;
    http::response<http::string_body> res = parser.release();
    HttpReply r;
    r.status = res.result_int();
    r.body = res.body();
    r.headers = res.base();
    return r;
  }
  // True when the server has closed the connection (a read returns end of file).
  bool closed_by_server() {
    if (buffer_.size() > 0) return false;  // the server sent more than one response
    char byte;
    beast::error_code ec;
    socket_.read_some(asio::buffer(&byte, 1), ec);
    if (ec != asio::error::eof && ec != asio::error::connection_reset) last_error_ = ec.message();
    return ec == asio::error::eof || ec == asio::error::connection_reset;
  }
  // Why closed_by_server said no (for failure messages).
  std::string last_error_;
  tcp::socket& socket() { return socket_; }

 private:
  HttpReply exchange(http::request<http::string_body>& req) {
    for (int attempt = 0; attempt < 2; ++attempt) {
      beast::error_code ec;
      http::write(socket_, req, ec);
      if (!ec) {
        if (std::optional<HttpReply> r = read_reply(req.method() == http::verb::head)) return *r;
      }
      connect();
    }
    return HttpReply{};
  }

  uint16_t port_;
  asio::io_context io_;
  tcp::socket socket_;
  beast::flat_buffer buffer_;
};

}  // namespace flowrt::testing_http
