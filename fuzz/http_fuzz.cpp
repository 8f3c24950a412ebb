// Fuzz target: bytes -> HTTP requests, as `flowrt serve` reads and answers them: parsed by
// Beast with the server's limits, then routed (routes, query strings, bodies) against an
// engine with flows, as the admin and as a viewer. Checks:
//   - parsing and answering never crash, hang or leak (ASan, UBSan, libFuzzer's timeouts);
//   - every answer has a status from 200 to 599; a JSON answer's body is valid JSON, and an
//     error's body is {"error": non-empty string, "pointer"?: string};
//   - a viewer is never answered 2xx on a route that writes;
//   - writes with an Idempotency-Key go through the single server's keyed writes.
#include <boost/beast/core.hpp>
#include <boost/beast/http.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <memory>
#include <string_view>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "server/api.h"
#include "server/event_feed.h"
#include "server/keyed_write_handler.h"
#include "server/router.h"

namespace {

using namespace flowrt;
using namespace flowrt::server;

[[noreturn]] void fail(const char* what, const Request& req, const Response& res) {
  std::fprintf(stderr, "http_fuzz: %s\nrequest: %s %s\nbody: %.200s\nstatus: %d\nresponse: %.500s\n", what,
               std::string(req.method_string()).c_str(), std::string(req.target()).c_str(), req.body().c_str(),
               res.result_int(), res.body().c_str());
  std::abort();
}

// The engine and routes an input is answered by: built for each input, so that what one
// input leaves behind (records, contexts) is freed with it and the leak checker sees real
// leaks only.
struct World {
  World() {
    EngineOptions options;
    options.properties.context_retention = 1000;
    options.properties.worker_threads = 1;
    options.log_level = "off";
    engine = std::make_unique<Engine>(options);
    Diagnostics d = engine->load_text(R"([
      {"id": "greet", "trigger": {"type": "api"}, "inputs": [{"name": "name", "type": "string"}],
       "actions": [{"action": "log", "inputs": {"message": "hi {{inputs.name}}"}}]},
      {"id": "on_t", "trigger": {"type": "record", "table": "t", "when": "created"},
       "actions": [{"action": "update_record", "inputs": {"table": "t", "sys_id": "{{trigger.sys_id}}", "values": {"seen": true}}}]},
      {"id": "on_ping", "trigger": {"type": "event", "name": "ping"}, "actions": [{"action": "log", "inputs": {"message": "p"}}]}])");
    if (!d.empty()) {
      std::fprintf(stderr, "http_fuzz: the flows do not load: %s\n", d.describe().c_str());
      std::abort();
    }
    feed = std::make_shared<EventFeed>(*engine);
    api = std::make_unique<ApiContext>(*engine, feed);
    api->ready.store(true);
    add_api_routes(router, *api);
    // Writes with an Idempotency-Key, as a single server answers them.
    router.keyed_writes([this](const Request& req, const Caller& caller) {
      return answer_keyed_write(*engine, router, req, caller);
    });
  }
  std::unique_ptr<Engine> engine;
  std::shared_ptr<EventFeed> feed;
  std::unique_ptr<ApiContext> api;
  Router router;
};

void check(const Request& req, const Reply& reply, bool viewer) {
  Response res = reply.response;
  if (reply.poll) {
    std::optional<Response> last = reply.poll(PollTurn::kDeadline);
    if (!last) fail("a deferred answer gave nothing at its deadline", req, res);
    res = *last;
  }
  if (reply.stream) {
    // As the server does: subscribe, read what follows, leave.
    const uint64_t from = reply.stream->subscribe();
    (void)reply.stream->after(reply.stream_after.value_or(from), 1000);
    reply.stream->unsubscribe();
    return;
  }
  const int status = res.result_int();
  if (status < 200 || status > 599) fail("a status out of range", req, res);
  const auto type = res.find(http::field::content_type);
  if (type != res.end() && type->value() == "application/json") {
    Result<Value> body = parse_json(res.body());
    if (!body) fail("a JSON answer is not JSON", req, res);
    if (status >= 400) {
      const Value& e = (*body)["error"];
      if (!e.is_string() || e.as_string().empty()) fail("an error without a message", req, res);
      if (const Value* p = body->find("pointer"); p && !p->is_string()) fail("a pointer that is not a string", req, res);
    }
  }
  const bool writes = req.method() != http::verb::get && req.method() != http::verb::head &&
                      req.target() != "/api/validate" && !req.target().starts_with("/api/validate?");
  if (viewer && writes && status >= 200 && status < 300) fail("a viewer's write was accepted", req, res);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size < 2) return 0;  // a caller byte and at least one byte of request
  World world;
  // The first byte picks the caller; the rest is the bytes on the connection, read as
  // requests one after another, as a kept-alive connection would be.
  const bool viewer = data[0] & 1;
  const Caller caller{viewer ? "fuzz-viewer" : "fuzz-admin", viewer ? Role::kViewer : Role::kAdmin};
  boost::beast::flat_buffer buffer;
  {
    auto b = buffer.prepare(size - 1);
    std::memcpy(b.data(), data + 1, size - 1);
    buffer.commit(size - 1);
  }
  for (int n = 0; n < 8 && buffer.size() > 0; ++n) {
    http::request_parser<http::string_body> parser;
    parser.header_limit(16 << 10);
    parser.body_limit(1 << 20);
    parser.eager(true);
    boost::beast::error_code ec;
    const size_t used = parser.put(buffer.data(), ec);
    buffer.consume(used);
    if (ec == http::error::need_more) {
      parser.put_eof(ec);
      if (ec || !parser.is_done()) return 0;
    } else if (ec || !parser.is_done()) {
      return 0;  // the server answers 400, 413 or 431 and closes: nothing more to route
    }
    Request req = parser.release();
    Reply reply = world.router.dispatch(req, caller);
    check(req, reply, viewer);
  }
  return 0;
}
