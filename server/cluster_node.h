// ClusterNode: one `flowrt serve --node NAME` process of several on one PostgreSQL store,
// which together work as one engine (docs/SCALING.md, "Several nodes").
//
// One node leads: it holds the lead row's current epoch (store/postgres_cluster.h), runs
// the engine (a Service whose store writes are fenced by that epoch: a batch committed
// after another node took over is refused) and applies what the others forward
// (ClusterApplier). The others follow: their HTTP API forwards every request to the leader
// through the inbox (ClusterForwarder) and answers with the leader's answer, except a read
// of an ended context, which a follower answers from the database when it holds it
// (HistoryReader: such a record no longer changes); each tries to
// take the lead whenever the leader's lease has run out. The node that takes over opens
// the store, which resumes every context from its last durable step, as a restart does,
// and answers on the same port it did as a follower: its follower's server goes on (what it
// forwards meanwhile waits in the inbox) until the leader's service answers on that very
// socket (HttpServer::share_listener), so the port never refuses a connection; the
// follower's forwarded requests are then answered by this node's applier. Writes that carry an
// Idempotency-Key go through the inbox on every node, the leader too: the inbox
// remembers the key, so a client may send such a write again, to any node, and it is
// applied once (docs/API.md, "Idempotency keys").
//
// Leases: a heartbeat thread renews this node's lease every lease/3, from the moment it
// joins until it has stopped (a leader's drain included), a failed renewal on a cut
// connection tried again at once on a new one. A
// leader that could not renew it for a whole lease, whose store writes have failed for a
// whole lease (a cut writer connection never writes again: the engine gives the store up,
// EngineOptions::store_give_up_ms, also while the node loads the state to lead), or that
// finds another incarnation in the lead row, or whose answers to the inbox are fenced
// (ClusterApplier), has lost the lead: it calls on_lost_lead (the
// command line exits with status 3; restarted, it joins again as a new incarnation). Its
// writes are fenced either way. While a node loads the state to lead, its heartbeat thread
// watches the lead row (the loading may wait for a write that the next leader fenced).
//
// Thread-safety: open, stop and the destructor from one thread; port and leads from any.
// Owns its threads, its connections, the service or the follower's server.
#pragma once

#include <atomic>
#include <chrono>
#include <condition_variable>
#include <functional>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "compiler/diagnostics.h"
#include "plans/result.h"
#include "server/relay_io.h"
#include "server/shared_stream.h"
#include "server/serve.h"
#include "store/postgres_cluster.h"

namespace flowrt::server {

class ClusterApplier;
class ClusterForwarder;
class HistoryReader;

struct ClusterOptions {
  std::string node;                                     // the node's name (--node)
  int lease_ms = 3000;                                  // a lease's length past each heartbeat
  std::chrono::milliseconds forward_timeout{30000};    // how long a forwarded request waits
  // Where other nodes and clients reach this node (--advertise): "HOST" (with the port it
  // listens on) or "HOST:PORT" (a port mapped elsewhere), HOST a name or an IP address
  // ("[::1]" for IPv6). Empty: the --listen host and port, which must then not be a
  // wildcard (0.0.0.0, ::), as no other machine can reach that.
  std::string advertise;
  // Called once, from the node's thread, when it led and lost the lead; by default the
  // process exits with status 3 (kLostLeadExit) at once.
  std::function<void(const std::string& why)> on_lost_lead;
};

inline constexpr int kLostLeadExit = 3;

class ClusterNode {
 public:
  // When this node takes the lead, how long its follower may wait for the answers to what
  // it forwarded (its applier answers them) once the leader's service answers on the same
  // port, ms.
  static constexpr int64_t kHandOverGraceMs = 2000;

  // Joins the cluster in the store `options.data` names (a postgresql:// URL), takes the lead
  // when no live node has it, and starts listening. Every problem at once.
  static Result<std::unique_ptr<ClusterNode>, Diagnostics> open(const ServeOptions& options,
                                                                 const ClusterOptions& cluster);
  ~ClusterNode();
  ClusterNode(const ClusterNode&) = delete;
  ClusterNode& operator=(const ClusterNode&) = delete;

  uint16_t port() const { return port_.load(); }
  // Where this node says it is reached ("host:port"): ClusterOptions::advertise, or the
  // --listen host and the port listened on.
  std::string advertised_address() const;
  bool leads() const { return leads_.load(); }
  int64_t incarnation() const { return incarnation_; }
  // The leader's service (null while following); for tests.
  Service* service() { return service_.get(); }
  // Leaves the cluster: a follower stops forwarding; a leader drains as `flowrt serve` does
  // and frees the lead at once (another node takes it without waiting for the lease).
  void stop();

 private:
  ClusterNode() = default;
  Status start_following();
  Status start_leading(int64_t epoch, uint64_t applied);
  void add_cluster_routes(Router& router);
  // A follower's GET /api/stream: the leader's stream, passed on to every viewer through
  // one upstream (server/shared_stream.h).
  Reply relay_stream(const ApiRequest& req);
  // Where the leading node listens ("host:port"); an error while none leads.
  Result<std::string> leader_address();
  // The API's reads of the cluster, info_mu_ held: its connection (opened when missing),
  // and who leads with every node, read together (the connection dropped on a failure).
  struct Members {
    ClusterLead lead;
    std::vector<ClusterNodeRow> nodes;
  };
  Result<PostgresCluster*> info_link_locked();
  Result<Members> members_locked();
  void heartbeat_loop();
  void control_loop();
  // True when this node took the lead (it leads, or loads the state to) and its lease went
  // unrenewed for a whole lease, counted from when the last renewal was asked for (the
  // node was stopped or starved, or the database answered late): it must give the lead
  // up, not renew the lease.
  bool lease_lapsed() const;
  std::string lease_lapsed_why() const;
  void lost_lead(const std::string& why);

  ServeOptions options_;
  ClusterOptions cluster_;
  ServeSetup setup_;
  std::string url_;
  std::string address_;
  std::atomic<uint16_t> port_{0};  // written by open and on taking the lead (the same port)
  int64_t incarnation_ = 0;
  std::atomic<bool> leads_{false};
  std::atomic<bool> lost_{false};
  std::atomic<int64_t> epoch_{0};
  // Renewed lease, as steady time: the leader gives up when it is older than a lease.
  std::atomic<int64_t> last_renewal_ms_{0};

  std::mutex info_mu_;                        // guards info_link_ and address_ (the /api/cluster reads)
  std::unique_ptr<PostgresCluster> info_link_;

  // Following: its server, router and the forwarder. Leading: the service and applier.
  std::unique_ptr<Authenticator> auth_;
  Router follower_router_;
  std::unique_ptr<ClusterForwarder> forwarder_;
  // Following: where the reads of ended contexts are answered from (made by open, kept
  // for the node's life: the follower's routes hold it).
  std::unique_ptr<HistoryReader> history_;
  std::unique_ptr<HttpServer> follower_server_;
  // Leading: what puts writes with an Idempotency-Key into the inbox (made before the
  // service answers, kept until the node stops). Declared before the service, so that it
  // is destroyed after it: a keyed reply the service's connections still hold waits on it.
  std::unique_ptr<ClusterForwarder> keyed_forwarder_;
  std::unique_ptr<Service> service_;
  // The service once it answers as the leader's, read by the heartbeat thread for the
  // counts each heartbeat notes. Set by the thread that takes the lead; cleared by stop
  // before the service stops (its engine goes then). Guarded by runs_mu_, held while the
  // counts are read.
  std::mutex runs_mu_;
  Service* leading_service_ = nullptr;
  std::unique_ptr<ClusterApplier> applier_;
  // The thread the leader's event stream is read on (made at the first viewer; stopped
  // when the node stops), and the stream the viewers share while one is open (held by
  // the viewers' connections). Both guarded by relay_mu_.
  std::mutex relay_mu_;
  std::shared_ptr<RelayIo> relay_io_;
  std::weak_ptr<SharedStream> shared_stream_;

  // Guards stopping_ and heartbeat_stopping_ for the threads' waits. The heartbeat stops
  // last: a leader renews its lease until its service has drained and stopped, so that no
  // other node takes the lead while this one's engine still runs.
  std::mutex mu_;
  std::condition_variable cv_;
  bool stopping_ = false;
  bool heartbeat_stopping_ = false;
  std::thread heartbeat_;
  std::thread control_;
};

}  // namespace flowrt::server
