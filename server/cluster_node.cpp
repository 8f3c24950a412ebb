#include "server/cluster_node.h"

#include <charconv>
#include <cstdlib>
#include <utility>

#include "plans/time.h"
#include "plans/value_json.h"
#include "runtime/engine.h"
#include "runtime/engine_core.h"
#include "runtime/engine_log.h"
#include "runtime/run_config.h"
#include "server/api.h"
#include "server/api_common.h"
#include "server/cluster_applier.h"
#include "server/cluster_forwarder.h"
#include "server/context_list.h"
#include "server/context_summary.h"
#include "server/history_reader.h"
#include "server/http_message.h"
#include "server/shared_stream.h"
#include "server/stream_relay.h"
#include "store/postgres_cluster.h"

namespace flowrt::server {

namespace {

int64_t steady_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

bool valid_node_name(const std::string& name) {
  if (name.empty() || name.size() > 64) return false;
  for (char c : name) {
    const bool ok = (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z') || (c >= '0' && c <= '9') || c == '-' ||
                    c == '_' || c == '.';
    if (!ok) return false;
  }
  return true;
}

// `text` as --advertise takes it: HOST or HOST:PORT (an IPv6 HOST in brackets); an error
// saying what is wrong. *port is 0 when it names none.
Status parse_advertise(const std::string& text, std::string* host, uint16_t* port) {
  auto bad = [&](const std::string& why) {
    return Error{"'" + utf8_prefix(text, 100) + "' is not HOST or HOST:PORT: " + why};
  };
  std::string h = text;
  std::string p;
  if (!h.empty() && h.front() == '[') {
    const size_t close = h.find(']');
    if (close == std::string::npos) return bad("an IPv6 address in brackets needs its ']'");
    if (close + 1 < h.size()) {
      if (h[close + 1] != ':') return bad("after ']' only ':PORT' may follow");
      p = h.substr(close + 2);
      if (p.empty()) return bad("the port after ':' is missing");
    }
    h = h.substr(0, close + 1);
  } else if (const size_t colon = h.rfind(':'); colon != std::string::npos) {
    if (h.find(':') != colon) return bad("an IPv6 address goes in brackets ([::1]:8480)");
    p = h.substr(colon + 1);
    h = h.substr(0, colon);
    if (p.empty()) return bad("the port after ':' is missing");
  }
  if (h.empty() || h == "[]") return bad("the host is missing");
  for (char c : h) {
    if (static_cast<unsigned char>(c) <= ' ' || c == '/' || c == '@' || c == '?' || c == '#') {
      return bad("a host holds no spaces, '/', '@', '?' or '#'");
    }
  }
  *port = 0;
  if (!p.empty()) {
    unsigned value = 0;
    const auto parsed = std::from_chars(p.data(), p.data() + p.size(), value);
    if (parsed.ec != std::errc() || parsed.ptr != p.data() + p.size() || value < 1 || value > 65535) {
      return bad("the port must be a number from 1 to 65535");
    }
    *port = static_cast<uint16_t>(value);
  }
  *host = h;
  return Status::ok();
}

bool wildcard_host(const std::string& host) { return host == "0.0.0.0" || host == "::" || host == "[::]"; }

Value reply_body(const InboxReply& a) {
  if (a.content_type.starts_with("application/json")) {
    if (Result<Value> v = parse_json(a.body)) return *v;
  }
  return Value(utf8_prefix(a.body, 4096));
}

}  // namespace

Result<std::unique_ptr<ClusterNode>, Diagnostics> ClusterNode::open(const ServeOptions& options,
                                                                     const ClusterOptions& cluster) {
  Diagnostics diags;
  if (!valid_node_name(cluster.node)) {
    diags.add("--node", "", "'" + utf8_prefix(cluster.node, 80) +
                                "' is not a node name (1 to 64 letters, digits, '-', '_' or '.')");
    return diags;
  }
  if (cluster.lease_ms < 300 || cluster.lease_ms > 600000) {
    diags.add("--lease-ms", "", "a lease must last from 300 to 600000 ms");
    return diags;
  }
  std::string advertised_host;
  uint16_t advertised_port = 0;
  if (!cluster.advertise.empty()) {
    if (Status s = parse_advertise(cluster.advertise, &advertised_host, &advertised_port); !s) {
      diags.add("--advertise", "", s.message());
      return diags;
    }
  }
  Result<ServeSetup, Diagnostics> setup = read_serve_setup(options);
  if (!setup) return setup.error();
  if (cluster.advertise.empty() && wildcard_host(setup->host)) {
    diags.add("--advertise", "", "listening on " + setup->host +
                                     ", which no other node can connect to: give --advertise HOST[:PORT], where the "
                                     "other nodes and clients reach this one");
    return diags;
  }
  EngineOptions store_options = setup->project.options;
  if (!options.data.empty()) use_data_store(options.data, &store_options);
  if (store_options.store != "postgresql") {
    diags.add("--node", "", "several nodes share a postgresql store: give --data postgresql://... (or a config "
                            "whose store is postgresql)");
    return diags;
  }
  std::unique_ptr<ClusterNode> n(new ClusterNode());
  n->options_ = options;
  n->cluster_ = cluster;
  n->url_ = store_options.store_url;
  n->setup_ = std::move(setup).value();
  Result<std::unique_ptr<PostgresCluster>> link = PostgresCluster::connect(n->url_);
  if (!link) {
    diags.add("--data", "", link.error().message);
    return diags;
  }
  Result<int64_t> joined = (*link)->join(cluster.node, "", cluster.lease_ms);
  if (!joined) {
    diags.add("--data", "", joined.error().message);
    return diags;
  }
  n->incarnation_ = *joined;
  n->last_renewal_ms_.store(steady_ms());
  ClusterNode* self = n.get();
  // Renewing from now on: a node that takes the lead below keeps it while it loads the
  // state, however long that takes (else its lease ran out meanwhile, another node took
  // the lead, and this one exited 3 as soon as it had loaded).
  n->heartbeat_ = std::thread([self] { self->heartbeat_loop(); });
  n->auth_ = std::make_unique<Authenticator>(n->setup_.config.tokens);
  // The follower's routes, built once (a Router is immutable once a server uses it).
  n->add_cluster_routes(n->follower_router_);
  n->follower_router_.add(http::verb::get, "/healthz", Permission::kPublic, [](const ApiRequest&) -> Reply {
    return json_response(http::status::ok, Value::object({{"status", Value("ok")}}));
  });
  n->follower_router_.add(http::verb::get, "/readyz", Permission::kPublic, [](const ApiRequest&) -> Reply {
    return json_response(http::status::ok, Value::object({{"status", Value("ready")}, {"role", Value("follower")}}));
  });
  add_viewer_routes(n->follower_router_);  // the viewer's files are in the binary: served here
  // An ended context's record: from the database when it is there, else the leader's
  // answer (server/history_reader.h).
  n->history_ = std::make_unique<HistoryReader>(n->url_);
  n->follower_router_.add(http::verb::get, "/api/contexts/{id}", Permission::kRead, [self](const ApiRequest& req) -> Reply {
    if (std::optional<Value> record = self->history_->ended_record(req.param("id"))) {
      return json_response(http::status::ok, *record);
    }
    return self->forwarder_->forward(req.http, req.caller);
  });
  // A list of contexts that ended with a given status likewise (server/context_list.h);
  // any other list is the leader's, which alone knows the contexts that have not ended.
  n->follower_router_.add(http::verb::get, "/api/contexts", Permission::kRead, [self](const ApiRequest& req) -> Reply {
    Response error;
    const std::optional<ContextListQuery> q = parse_context_list(req, &error);
    if (!q) return error;
    if (is_final_status(q->status)) {
      // One more than the page, as the leader reads it: whether a next page exists.
      std::optional<std::vector<Value>> page =
          self->history_->ended_page(q->flow, q->status, q->before_seq, q->limit + 1);
      if (page) return context_list_response(*q, *page);
    }
    return self->forwarder_->forward(req.http, req.caller);
  });
  // The event stream: the leader's, passed on (server/stream_relay.h).
  n->follower_router_.add(http::verb::get, "/api/stream", Permission::kRead,
                          [self](const ApiRequest& req) -> Reply { return self->relay_stream(req); });
  n->follower_router_.otherwise([self](const Request& req, const Caller& caller) -> Reply {
    return self->forwarder_->forward(req, caller);
  });
  n->follower_router_.keyed_writes([self](const Request& req, const Caller& caller) -> Reply {
    return self->forwarder_->forward(req, caller);
  });

  Result<std::optional<ClusterLead>> lead = (*link)->try_lead(n->incarnation_);
  Status started = !lead ? Status(lead.error())
                   : *lead ? n->start_leading((*lead)->epoch, (*lead)->applied_op)
                           : n->start_following();
  if (!started) {
    // Left at once (on a new connection if this one was cut too), so that another node
    // need not wait for this one's lease to run out.
    if (!(*link)->leave(n->incarnation_)) {
      if (Result<std::unique_ptr<PostgresCluster>> fresh = PostgresCluster::connect(n->url_)) {
        (void)(*fresh)->leave(n->incarnation_);
      }
    }
    diags.add("--listen", "", started.message());
    return diags;
  }
  const std::string address = n->advertised_address();
  (void)(*link)->set_address(n->incarnation_, address);
  {
    // The server already answers: /api/cluster reads these under info_mu_.
    std::lock_guard lock(n->info_mu_);
    n->address_ = address;
    n->info_link_ = std::move(link).value();
  }
  engine_log().info("cluster: node {} (incarnation {}) {} on {}", cluster.node, n->incarnation_,
                    n->leads() ? "leads" : "follows", address);
  n->control_ = std::thread([self] { self->control_loop(); });
  return n;
}

ClusterNode::~ClusterNode() { stop(); }

Status ClusterNode::start_following() {
  forwarder_ = std::make_unique<ClusterForwarder>(url_, incarnation_, cluster_.forward_timeout);
  forwarder_->start();
  HttpServerOptions http;
  http.host = setup_.host;
  http.port = port_.load() ? port_.load() : setup_.port;
  http.limits = setup_.config.limits;
  http.io_threads = options_.io_threads;
  follower_server_ = std::make_unique<HttpServer>(http, follower_router_, *auth_);
  if (Status s = follower_server_->start(); !s) return s;
  port_ = follower_server_->port();
  return Status::ok();
}

Status ClusterNode::start_leading(int64_t epoch, uint64_t applied) {
  // The follower's port goes on answering while this node loads the state to lead (what it
  // forwards meanwhile waits in the inbox for this node's applier), and is handed to the
  // leader's service, a second descriptor of the same socket: no connection to this node
  // is refused during the takeover.
  std::shared_ptr<ListeningSocket> listener;
  if (follower_server_) {
    Result<std::shared_ptr<ListeningSocket>> shared = follower_server_->share_listener();
    if (shared) {
      listener = std::move(shared).value();
    } else {
      engine_log().warn("cluster: {}; the port refuses connections while this node loads the state", shared.message());
      forwarder_->stop();  // answers the forwarded requests (503: accepted, see the operation)
      follower_server_->stop();
    }
  }
  ServeOptions o = options_;
  o.listener = listener;
  if (port_) o.listen = (setup_.host.find(':') != std::string::npos ? "[" + setup_.host + "]" : setup_.host) + ":" +
                        std::to_string(port_.load());
  o.lead_epoch = epoch;
  // A leader whose store cannot be written (its connection was cut: the store never
  // writes again) would keep the lead while every write waits, and so would a node whose
  // connection is cut while it loads the state to lead (the load waits for its writes):
  // once the writes have failed for a whole lease it gives the lead up, and another node
  // loads the state.
  o.store_give_up_ms = cluster_.lease_ms;
  o.on_store_lost = [this](const std::string& why) { lost_lead("its store could not be written: " + why); };
  // Writes with an Idempotency-Key go through the inbox here too, which remembers the key:
  // one path for them, whichever node a client sends them to.
  keyed_forwarder_ = std::make_unique<ClusterForwarder>(url_, incarnation_, cluster_.forward_timeout);
  keyed_forwarder_->start();
  o.more_routes = [this](Router& r) {
    add_cluster_routes(r);
    r.keyed_writes([this](const Request& req, const Caller& caller) { return keyed_forwarder_->forward(req, caller); });
  };
  epoch_.store(epoch);
  Result<std::unique_ptr<Service>, Diagnostics> service = Service::open(o);
  if (!service) {
    std::string why;
    for (const Diagnostic& d : service.error().list()) why += (why.empty() ? "" : "; ") + d.describe();
    return Error{"cannot lead: " + why};
  }
  {
    std::lock_guard lock(info_mu_);
    service_ = std::move(service).value();
  }
  port_ = service_->port();
  {
    std::lock_guard lock(runs_mu_);
    leading_service_ = service_.get();
  }
  const std::string address = advertised_address();
  applier_ = std::make_unique<ClusterApplier>(url_, service_->router(), epoch, applied, address,
                                              [this](const std::string& why) { lost_lead(why); });
  applier_->start();
  if (follower_server_) {
    // What the follower forwarded is answered as the applier answers its entries; what is
    // still waiting after kHandOverGraceMs (or comes in the moment before the follower's
    // server stops) gets 503: accepted, see the operation.
    (void)forwarder_->wait_answered(std::chrono::milliseconds(kHandOverGraceMs));
    forwarder_->stop();
    follower_server_->stop();
  }
  follower_server_.reset();
  forwarder_.reset();
  leads_.store(true);
  return Status::ok();
}

std::string ClusterNode::advertised_address() const {
  std::string host = setup_.host;
  uint16_t port = port_.load();
  if (!cluster_.advertise.empty()) {
    uint16_t given = 0;
    (void)parse_advertise(cluster_.advertise, &host, &given);  // checked by open
    if (given != 0) port = given;
  }
  if (host.find(':') != std::string::npos && host.front() != '[') host = "[" + host + "]";
  return host + ":" + std::to_string(port);
}

Result<PostgresCluster*> ClusterNode::info_link_locked() {
  if (!info_link_) {
    Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
    if (!c) return c.error();
    info_link_ = std::move(c).value();
  }
  return info_link_.get();
}

Result<ClusterNode::Members> ClusterNode::members_locked() {
  Result<PostgresCluster*> link = info_link_locked();
  if (!link) return link.error();
  Result<ClusterLead> lead = (*link)->lead();
  Result<std::vector<ClusterNodeRow>> nodes = lead ? (*link)->nodes() : Result<std::vector<ClusterNodeRow>>(lead.error());
  if (!lead || !nodes) {
    info_link_.reset();  // on a new connection next time
    return !lead ? lead.error() : nodes.error();
  }
  return Members{*lead, std::move(nodes).value()};
}

Result<std::string> ClusterNode::leader_address() {
  std::lock_guard lock(info_mu_);
  Result<Members> m = members_locked();
  if (!m) return m.error();
  // This node has taken the lead and still loads the state: its own follower routes
  // answer until it leads (a stream passed on from itself would come back to them).
  if (m->lead.incarnation == incarnation_) return Error{"this node is taking the lead and loads the state"};
  for (const ClusterNodeRow& r : m->nodes) {
    if (m->lead.incarnation != 0 && r.incarnation == m->lead.incarnation && r.alive && !r.address.empty()) {
      return r.address;
    }
  }
  return Error{"no node leads the cluster now (a change of leader is under way)"};
}

Reply ClusterNode::relay_stream(const ApiRequest& req) {
  auto unavailable = [](const std::string& why) {
    Response res = error_response(http::status::service_unavailable, why + "; try again in a moment");
    res.set(http::field::retry_after, "1");
    return res;
  };
  Reply reply;
  Response bad;
  if (!last_event_id(req, &reply.stream_after, &bad)) return bad;
  {
    std::lock_guard lock(relay_mu_);
    if (std::shared_ptr<SharedStream> shared = shared_stream_.lock(); shared && shared->open_to_viewers()) {
      reply.stream = std::move(shared);
      return reply;
    }
  }
  Result<std::string> address = leader_address();
  if (!address) return unavailable("the event stream is the leader's, passed on: " + address.message());
  // "host:port", the host in brackets when it is an IPv6 address.
  const std::string& a = *address;
  const size_t colon = a.rfind(':');
  uint16_t port = 0;
  const auto parsed = std::from_chars(a.data() + colon + 1, a.data() + a.size(), port);
  if (colon == std::string::npos || parsed.ec != std::errc() || port == 0) {
    return unavailable("the leader's address '" + utf8_prefix(a, 100) + "' is not host:port");
  }
  // Opened with this viewer's credentials, which the leader checks again; later viewers'
  // are checked here only (every node has the same tokens).
  StreamRelay::Upstream up;
  up.host = a.substr(0, colon);
  if (up.host.size() > 2 && up.host.front() == '[' && up.host.back() == ']') up.host = up.host.substr(1, up.host.size() - 2);
  up.port = port;
  up.target = std::string(req.http.target());
  if (auto h = req.http.find(http::field::authorization); h != req.http.end()) up.authorization = std::string(h->value());
  up.from_held = true;
  // The leader sends a comment every stream_heartbeat_ms: two missed, and it is gone.
  const std::chrono::milliseconds idle(2 * setup_.config.limits.stream_heartbeat_ms + 1000);
  std::shared_ptr<RelayIo> io;
  {
    std::lock_guard lock(relay_mu_);
    if (!relay_io_) relay_io_ = RelayIo::start();
    io = relay_io_;
  }
  Result<StreamRelay::Opened> opened = StreamRelay::open(io, up, std::chrono::milliseconds(3000), idle);
  if (!opened) return unavailable("the leader's event stream at " + a + " cannot be opened: " + opened.message());
  if (opened->answer) return std::move(*opened->answer);  // the leader's refusal, as it gave it
  auto shared = std::make_shared<SharedStream>(std::move(opened->relay), opened->after, opened->now);
  {
    // Another viewer may have opened one meanwhile: all share the first (this one's
    // upstream closes as it goes).
    std::lock_guard lock(relay_mu_);
    if (std::shared_ptr<SharedStream> first = shared_stream_.lock(); first && first->open_to_viewers()) {
      shared = std::move(first);
    } else {
      shared_stream_ = shared;
    }
  }
  reply.stream = std::move(shared);
  return reply;
}

void ClusterNode::add_cluster_routes(Router& router) {
  router.add(http::verb::get, "/api/cluster", Permission::kRead, [this](const ApiRequest&) -> Reply {
    std::lock_guard lock(info_mu_);
    Result<Members> members = members_locked();
    if (!members) return error_response(http::status::service_unavailable, members.message());
    const ClusterLead* lead = &members->lead;
    const std::vector<ClusterNodeRow>* nodes = &members->nodes;
    std::vector<Value> list;
    std::string leader_name;
    for (const ClusterNodeRow& r : *nodes) {
      const bool leads = r.incarnation == lead->incarnation;
      if (leads) leader_name = r.name;
      // The same on every node: the live leader runs every context, any other node none;
      // the counts are those its last heartbeat noted.
      Value runs = Value::object({{"contexts", Value(leads && r.alive && !r.left ? "all" : "none")},
                                  {"runnable_contexts", Value(r.runs.runnable_contexts)},
                                  {"waiting_contexts", Value(r.runs.waiting_contexts)},
                                  {"queued_events", Value(r.runs.queued_events)}});
      list.push_back(Value::object({{"name", Value(r.name)},
                                    {"incarnation", Value(r.incarnation)},
                                    {"role", Value(r.left ? "left" : !r.alive ? "gone" : leads ? "leader" : "follower")},
                                    {"address", Value(r.address)},
                                    {"host", Value(r.host)},
                                    {"pid", Value(r.pid)},
                                    {"started", Value(r.started)},
                                    {"heartbeat", Value(r.heartbeat)},
                                    {"lease_until", Value(r.lease_until)},
                                    {"alive", Value(r.alive)},
                                    {"runs", std::move(runs)}}));
    }
    Value body = Value::object(
        {{"node", Value::object({{"name", Value(cluster_.node)},
                                 {"incarnation", Value(incarnation_)},
                                 {"role", Value(leads_.load() ? "leader" : "follower")},
                                 {"address", Value(address_)}})},
         {"lead", Value::object({{"incarnation", Value(lead->incarnation)},
                                 {"node", lead->incarnation ? Value(leader_name) : Value()},
                                 {"epoch", Value(lead->epoch)},
                                 {"since", Value(lead->since)},
                                 {"applied_operation", Value(static_cast<int64_t>(lead->applied_op))}})},
         {"nodes", Value::array(std::move(list))}});
    return json_response(http::status::ok, body);
  });
  router.add(http::verb::get, "/api/cluster/operations/{seq}", Permission::kRead, [this](const ApiRequest& req) -> Reply {
    const std::string& text = req.param("seq");
    uint64_t seq = 0;
    const auto r = std::from_chars(text.data(), text.data() + text.size(), seq);
    if (r.ec != std::errc() || r.ptr != text.data() + text.size() || seq == 0) {
      return error_response(http::status::bad_request, "'" + utf8_prefix(text, 40) + "' is not an operation number");
    }
    std::lock_guard lock(info_mu_);
    Result<PostgresCluster*> link = info_link_locked();
    if (!link) return error_response(http::status::service_unavailable, link.message());
    Result<std::optional<InboxStatus>> e = (*link)->entry(seq);
    if (!e) {
      info_link_.reset();
      return error_response(http::status::service_unavailable, e.error().message);
    }
    if (!*e) {
      return error_response(http::status::not_found, "no operation " + text + " (never accepted, or deleted: "
                                                     "answered more than ten minutes ago, a day for one with an "
                                                     "Idempotency-Key)");
    }
    const InboxStatus& s = **e;
    Value body = Value::object({{"operation", Value(static_cast<int64_t>(seq))},
                                {"accepted", Value(s.accepted)},
                                {"accepted_by", Value(s.entry.incarnation)},
                                {"method", Value(s.entry.request.method)},
                                {"target", Value(utf8_prefix(s.entry.request.target, 2000))},
                                {"caller", Value(s.entry.request.caller)},
                                {"answered", Value(s.reply.has_value())}});
    if (!s.entry.request.idempotency_key.empty()) {
      body = body.merged(Value::object({{"idempotency_key", Value(s.entry.request.idempotency_key)}}));
    }
    // A call's or a test run's context, once the commit that queued it is durable: told
    // also while the operation is not answered yet (its leader stopped before answering).
    if (!s.entry.started.empty()) body = body.merged(Value::object({{"context_id", Value(s.entry.started)}}));
    if (s.reply) {
      body = body.merged(Value::object({{"answered_at", Value(s.answered)},
                                        {"status", Value(static_cast<int64_t>(s.reply->status))},
                                        {"reply", reply_body(*s.reply)}}));
    }
    return json_response(http::status::ok, body);
  });
}

void ClusterNode::heartbeat_loop() {
  std::unique_ptr<PostgresCluster> link;
  const auto period = std::chrono::milliseconds(cluster_.lease_ms / 3);
  // A heartbeat that failed on a connection that had worked (cut by the database, say) is
  // tried again at once on a new one, not a period later: waiting would leave a third of
  // the lease for the reconnection. A new connection that fails waits the period.
  bool again = false;
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, again ? std::chrono::milliseconds(0) : period, [&] { return heartbeat_stopping_; })) {
        return;
      }
    }
    again = false;
    // Checked before renewing, as the control thread checks: a leader that resumes after
    // a stop longer than its lease must not renew it first and lead on, whether or not
    // another node took the lead meanwhile.
    if (!lost_.load() && lease_lapsed()) {
      lost_lead(lease_lapsed_why());
      continue;
    }
    // The lease runs from when the database renewed it, which is after this (connecting
    // may wait on the database too): a renewal answered late (the node was stopped, or the
    // database held it up) is not counted as newer than it is.
    const int64_t asked = steady_ms();
    bool fresh = false;
    if (!link) {
      Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
      if (!c) {
        engine_log().warn("cluster: cannot renew the lease: {}", c.error().message);
        continue;
      }
      link = std::move(c).value();
      fresh = true;
    }
    // What this node runs, noted with its lease for /api/cluster on every node: the
    // leader's engine's counts, a follower's zeros. Read from the engine's atomic
    // counters, not Engine::stats(), which takes locks: nothing of the engine's may hold
    // up a renewal.
    NodeRuns runs;
    {
      std::lock_guard lock(runs_mu_);
      if (leading_service_) {
        const EngineCore& core = leading_service_->engine().core();
        runs = NodeRuns{static_cast<int64_t>(core.runnable()), static_cast<int64_t>(core.waiting()),
                        static_cast<int64_t>(core.events.size_approx())};
      }
    }
    if (Status s = link->heartbeat(incarnation_, cluster_.lease_ms, runs); s) {
      last_renewal_ms_.store(asked);
      // While this node takes the lead its control thread is busy loading the state, and a
      // store write there that the next leader fenced is retried for ever: the lead row is
      // checked here meanwhile, so that a node that lost the lead while loading exits.
      if (const int64_t epoch = epoch_.load(); epoch > 0 && !leads_.load() && !lost_.load()) {
        Result<ClusterLead> lead = link->lead();
        if (!lead) {
          link.reset();
        } else if (lead->incarnation != incarnation_ || lead->epoch != epoch) {
          lost_lead("while it loaded the state to lead, incarnation " + std::to_string(lead->incarnation) +
                    " took the lead (epoch " + std::to_string(lead->epoch) + ")");
        }
      }
    } else {
      engine_log().warn("cluster: cannot renew the lease: {}", s.message());
      link.reset();
      again = !fresh;
    }
  }
}

void ClusterNode::control_loop() {
  std::unique_ptr<PostgresCluster> link;
  const auto period = std::chrono::milliseconds(cluster_.lease_ms / 3);
  while (true) {
    {
      std::unique_lock lock(mu_);
      if (cv_.wait_for(lock, period, [&] { return stopping_; })) return;
    }
    if (lost_.load()) continue;
    if (lease_lapsed()) {
      lost_lead(lease_lapsed_why());
      continue;
    }
    if (!link) {
      Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
      if (!c) continue;
      link = std::move(c).value();
    }
    if (leads_.load()) {
      Result<ClusterLead> lead = link->lead();
      if (!lead) {
        link.reset();
        continue;
      }
      if (lead->incarnation != incarnation_ || lead->epoch != epoch_.load()) {
        lost_lead("incarnation " + std::to_string(lead->incarnation) + " took the lead (epoch " +
                  std::to_string(lead->epoch) + ")");
      }
      continue;
    }
    Result<std::optional<ClusterLead>> lead = link->try_lead(incarnation_);
    if (!lead) {
      link.reset();
      continue;
    }
    if (!*lead) continue;
    engine_log().info("cluster: node {} takes the lead (epoch {}; no live node led: the last leader left, or its "
                      "lease ran out)",
                      cluster_.node, (*lead)->epoch);
    if (Status s = start_leading((*lead)->epoch, (*lead)->applied_op); !s) lost_lead(s.message());
  }
}

bool ClusterNode::lease_lapsed() const {
  // From the moment it took the lead (epoch set), while it loads the state too.
  return epoch_.load() > 0 && steady_ms() - last_renewal_ms_.load() > cluster_.lease_ms;
}

std::string ClusterNode::lease_lapsed_why() const {
  return "its lease could not be renewed for " + std::to_string(cluster_.lease_ms) + " ms";
}

void ClusterNode::lost_lead(const std::string& why) {
  if (lost_.exchange(true)) return;
  engine_log().error("cluster: node {} (incarnation {}) lost the lead: {}; it stops (its writes are fenced)",
                     cluster_.node, incarnation_, why);
  engine_log().flush();
  if (cluster_.on_lost_lead) {
    cluster_.on_lost_lead(why);
    return;
  }
  std::_Exit(kLostLeadExit);
}

void ClusterNode::stop() {
  {
    std::lock_guard lock(mu_);
    if (stopping_) return;
    stopping_ = true;
  }
  cv_.notify_all();
  if (control_.joinable()) control_.join();
  if (forwarder_) forwarder_->stop();
  if (follower_server_) follower_server_->stop();
  {
    // After the server: no stream is passed on any more. A relay still held closes itself.
    std::lock_guard lock(relay_mu_);
    if (relay_io_) relay_io_->stop();
  }
  if (keyed_forwarder_) keyed_forwarder_->stop();  // its waiting requests are answered (accepted or not)
  if (applier_) applier_->stop();
  {
    std::lock_guard lock(runs_mu_);
    leading_service_ = nullptr;  // its engine goes as it stops
  }
  // Drains and checkpoints while this node still leads: the heartbeat renews the lease
  // meanwhile, however long the drain takes (else another node could take the lead and
  // resume contexts this engine still runs, and this one's last writes were fenced).
  if (service_) service_->stop();
  {
    std::lock_guard lock(mu_);
    heartbeat_stopping_ = true;
  }
  cv_.notify_all();
  if (heartbeat_.joinable()) heartbeat_.join();
  if (lost_.load()) return;
  if (incarnation_ == 0) return;  // it never joined (incarnations are numbered from 1)
  // Leaving frees the lead at once (the next leader need not wait for the lease). The kept
  // connection may have been ended since its last use (the database restarted, an idle
  // session cut): then once more on a new one, as open() does.
  std::lock_guard lock(info_mu_);
  for (int attempt = 0; attempt < 2; ++attempt) {
    if (!info_link_) {
      Result<std::unique_ptr<PostgresCluster>> c = PostgresCluster::connect(url_);
      if (!c) {
        engine_log().warn("cluster: incarnation {} could not leave (its lease runs out instead): {}", incarnation_, c.message());
        return;
      }
      info_link_ = std::move(c).value();
    }
    Status left = info_link_->leave(incarnation_);
    if (left) return;
    info_link_.reset();
    if (attempt == 1) {
      engine_log().warn("cluster: incarnation {} could not leave (its lease runs out instead): {}", incarnation_, left.message());
    }
  }
}

}  // namespace flowrt::server
