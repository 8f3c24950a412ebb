#include "server/serve.h"

#include <boost/asio/io_context.hpp>
#include <boost/asio/ip/address.hpp>
#include <boost/asio/ip/tcp.hpp>

#include <algorithm>
#include <charconv>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <string>
#include <string_view>
#include <vector>

#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/engine_log.h"
#include "runtime/project.h"
#include "runtime/run_config.h"
#include "server/durable_reply.h"
#include "server/keyed_write_handler.h"

namespace flowrt::server {

namespace {

// A host name as DNS spells one (letters, digits, '-' and '.'; no label begins with '-').
bool is_host_name(std::string_view h) {
  if (h.empty() || h.size() > 253) return false;
  char before = '.';
  for (const char c : h) {
    const bool alnum = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9');
    if (!alnum && c != '-' && c != '.') return false;
    if (before == '.' && (c == '-' || c == '.')) return false;
    before = c;
  }
  return true;
}

}  // namespace

bool parse_listen(const std::string& listen, std::string* host, uint16_t* port) {
  const size_t colon = listen.rfind(':');
  if (colon == std::string::npos || colon == 0) return false;
  std::string h = listen.substr(0, colon);
  const bool bracketed = h.size() > 2 && h.front() == '[' && h.back() == ']';
  if (bracketed) h = h.substr(1, h.size() - 2);
  unsigned p = 0;
  const char* begin = listen.data() + colon + 1;
  const char* end = listen.data() + listen.size();
  const auto r = std::from_chars(begin, end, p);
  if (r.ec != std::errc() || r.ptr != end || p > 65535 || begin == end) return false;
  boost::system::error_code ec;
  (void)boost::asio::ip::make_address(h, ec);
  if (ec && (bracketed || !is_host_name(h))) return false;
  *host = h;
  *port = static_cast<uint16_t>(p);
  return true;
}

boost::asio::ip::address preferred_listen_address(const std::vector<boost::asio::ip::address>& addresses) {
  // An IPv4 address when the name has one: a host whose IPv6 is turned off may still list
  // ::1 for localhost, and binding it would fail.
  for (const auto& a : addresses) {
    if (a.is_v4()) return a;
  }
  return addresses.front();
}

Result<std::string> listen_address(const std::string& host) {
  boost::system::error_code ec;
  (void)boost::asio::ip::make_address(host, ec);
  if (!ec) return host;
  boost::asio::io_context io;
  boost::asio::ip::tcp::resolver resolver(io);
  const auto found = resolver.resolve(host, "", boost::asio::ip::tcp::resolver::passive, ec);
  if (ec || found.empty()) {
    return Error{"cannot resolve '" + host + "': " + (ec ? ec.message() : std::string("no address"))};
  }
  std::vector<boost::asio::ip::address> addresses;
  for (const auto& entry : found) addresses.push_back(entry.endpoint().address());
  return preferred_listen_address(addresses).to_string();
}

namespace {

// The config document (null when the project has none), to read its "server" section.
Result<Value> read_config_doc(const std::string& path) {
  if (path.empty()) return Value();
  std::ifstream in(path, std::ios::binary);
  std::stringstream text;
  text << in.rdbuf();
  return parse_json(text.str());
}

}  // namespace

Result<ServeSetup, Diagnostics> read_serve_setup(const ServeOptions& options) {
  Diagnostics diags;
  ServeSetup setup;
  if (!parse_listen(options.listen, &setup.host, &setup.port)) {
    diags.add("--listen", "", "'" + options.listen +
                                  "' is not HOST:PORT, HOST an IP address or a name (127.0.0.1:8480, [::1]:8480, "
                                  "localhost:8480)");
    return diags;
  }
  // A name is resolved once, here: what is bound, and checked for loopback, is its address.
  if (Result<std::string> address = listen_address(setup.host); address) {
    setup.host = std::move(*address);
  } else {
    diags.add("--listen", "", address.message());
    return diags;
  }
  Result<Project, Diagnostics> project = read_project(options.dir);
  if (!project) return project.error();
  Result<Value> doc = read_config_doc(project->files.config);
  if (doc) {
    const Value* section = doc->is_object() ? doc->find("server") : nullptr;
    if (!read_server_config(section, project->files.config, &setup.config, &diags)) return diags;
  }
  const bool loopback = boost::asio::ip::make_address(setup.host).is_loopback();
  if (!loopback && setup.config.tokens.empty()) {
    diags.add(project->files.config.empty() ? "config.json" : project->files.config, "/server/tokens",
              "listening on " + setup.host + ", which is not loopback, needs tokens: without them anyone who can reach "
              "the port would be admin");
    return diags;
  }
  setup.config_chose_store = doc && doc->is_object() && doc->find("store");
  setup.project = std::move(project).value();
  return setup;
}

Result<std::unique_ptr<Service>, Diagnostics> Service::open(const ServeOptions& options) {
  Diagnostics diags;
  Result<ServeSetup, Diagnostics> setup = read_serve_setup(options);
  if (!setup) return setup.error();
  const std::string host = setup->host;
  const uint16_t port = setup->port;
  ServerConfig& config = setup->config;
  std::optional<Project> project(std::move(setup->project));
  // A real clock; the state in SQLite unless the config chose a store or --data names one.
  project->options.virtual_clock = false;
  if (!options.log_level.empty()) project->options.log_level = options.log_level;
  const bool config_chose_store = setup->config_chose_store;
  if (!options.data.empty()) {
    use_data_store(options.data, &project->options);  // a file, or a postgresql:// URL
  } else if (!config_chose_store) {
    project->options.store = "sqlite";
    project->options.data_file = (std::filesystem::path(options.dir) / "flowrt.db").string();
  }
  project->options.store_lead_epoch = options.lead_epoch;
  project->options.store_give_up_ms = options.store_give_up_ms;
  project->options.on_store_lost = options.on_store_lost;
  Result<std::unique_ptr<Engine>, Diagnostics> engine = open_project(*project);
  if (!engine) return engine.error();

  std::unique_ptr<Service> s(new Service());
  s->engine_ = std::move(engine).value();
  s->feed_ = std::make_shared<EventFeed>(*s->engine_, options.feed_period_ms);
  s->api_ = std::make_unique<ApiContext>(*s->engine_, s->feed_);
  s->auth_ = std::make_unique<Authenticator>(config.tokens);
  add_api_routes(s->router_, *s->api_);
  // With a durable store a write is answered once it is durable, without a thread waiting.
  Engine* engine_ptr = s->engine_.get();
  const std::chrono::milliseconds durable_within(config.limits.durable_answer_ms);
  // A write waiting for the disk when the drain begins is answered within the drain's
  // time, a quarter of it left for the answer to be written.
  auto drain = std::make_shared<DrainDeadline>(std::chrono::milliseconds(options.drain_ms * 3 / 4));
  s->drain_ms_ = options.drain_ms;
  s->router_.wrap_writes([engine_ptr, durable_within, drain](const std::function<Reply()>& handler) {
    return answer_when_durable(*engine_ptr, handler, durable_within, drain);
  });
  // A write with an Idempotency-Key: the engine remembers the key (a cluster node's
  // more_routes puts such writes into the cluster's inbox instead).
  Router* router = &s->router_;
  s->engine_->core().keyed_writes.set_limit_bytes(config.limits.idempotency_key_bytes);
  const std::chrono::milliseconds kept_answer_within = std::min(kKeptAnswerWithin, durable_within);
  s->router_.keyed_writes([engine_ptr, router, kept_answer_within](const Request& req, const Caller& caller) {
    return answer_keyed_write(*engine_ptr, *router, req, caller, kept_answer_within);
  });
  if (options.more_routes) options.more_routes(s->router_);
  HttpServerOptions http;
  http.host = host;
  http.port = port;
  http.limits = config.limits;
  http.io_threads = options.io_threads;
  http.listener = options.listener;
  s->server_ = std::make_unique<HttpServer>(http, s->router_, *s->auth_);
  HttpServer* server = s->server_.get();
  s->api_->connections = [server] { return server->connections(); };
  if (Status started = s->server_->start(); !started) {
    diags.add("--listen", "", started.message());
    return diags;
  }
  s->feed_->start();
  s->api_->ready.store(true);
  engine_log().info("serving on {}:{}", host, s->server_->port());
  return s;
}

void Service::stop() {
  if (stopped_) return;
  stopped_ = true;
  api_->ready.store(false);
  server_->stop(drain_ms_);
  feed_->stop();
  engine_.reset();  // stops the workers and checkpoints what has not ended
}

Service::~Service() { stop(); }

}  // namespace flowrt::server
