#include "server/durable_reply.h"

#include <chrono>
#include <memory>
#include <optional>
#include <utility>

#include "server/http_message.h"

namespace flowrt::server {

namespace {
// A deferred write's deadline. The store's writer always ends the wait first (durable,
// or given up after store_give_up_ms); past it the last poll waits on the journal.
constexpr std::chrono::hours kDurableDeadline{1};
}  // namespace

Reply answer_when_durable(Engine& engine, const std::function<Reply()>& handler) {
  uint64_t position = 0;
  Reply reply;
  {
    const DurabilityDeferral deferral;
    reply = handler();
    position = deferral.position();
  }
  if (position == 0 || reply.stream) return reply;
  if (std::optional<Status> s = engine.durable_state(position); s && s->is_ok()) return reply;
  Reply deferred;
  deferred.deadline = reply.poll ? reply.deadline : std::chrono::steady_clock::now() + kDurableDeadline;
  deferred.max_poll_interval = reply.max_poll_interval;
  deferred.waker = reply.waker ? reply.waker : std::make_shared<ReplyWaker>();
  auto response = std::make_shared<Response>(std::move(reply.response));
  deferred.poll = [&engine, position, inner = std::move(reply.poll), response](bool last) -> std::optional<Response> {
    std::optional<Status> s = engine.durable_state(position);
    if (!s && last) s = engine.wait_durable(position);  // the server stops: the writer ends the wait soon
    if (!s) return std::nullopt;
    if (!s->is_ok()) {
      return error_response(http::status::service_unavailable,
                            "the change was made in memory but " + s->message() +
                                "; it is lost when the engine stops, and the engine takes no more writes");
    }
    if (inner) return inner(last);
    return std::move(*response);
  };
  engine.when_durable(position, [waker = deferred.waker] { waker->wake(); });
  return deferred;
}

}  // namespace flowrt::server
