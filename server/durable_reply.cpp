#include "server/durable_reply.h"

#include <memory>
#include <optional>
#include <utility>

#include "server/http_message.h"

namespace flowrt::server {

std::chrono::milliseconds DrainDeadline::left() {
  const auto now = std::chrono::steady_clock::now();
  std::call_once(started_, [&] { until_ = now + within_; });
  if (now >= until_) return std::chrono::milliseconds(0);
  return std::chrono::ceil<std::chrono::milliseconds>(until_ - now);
}

Reply answer_when_durable(Engine& engine, const std::function<Reply()>& handler,
                          std::chrono::milliseconds durable_within, std::shared_ptr<DrainDeadline> drain) {
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
  deferred.deadline = reply.poll ? reply.deadline : std::chrono::steady_clock::now() + durable_within;
  deferred.max_poll_interval = reply.max_poll_interval;
  deferred.waker = reply.waker ? reply.waker : std::make_shared<ReplyWaker>();
  deferred.started = std::move(reply.started);
  auto response = std::make_shared<Response>(std::move(reply.response));
  deferred.poll = [&engine, position, inner = std::move(reply.poll), response,
                   drain = std::move(drain)](PollTurn turn) -> std::optional<Response> {
    std::optional<Status> s = engine.durable_state(position);
    if (!s) {
      if (turn == PollTurn::kWaiting) return std::nullopt;
      if (turn == PollTurn::kDeadline) {
        // No I/O thread waits on the disk: the client is told the truth so far.
        return error_response(http::status::service_unavailable,
                              "the change was made in memory but is not written to the store yet; it may still be "
                              "(the store is retried): read it back to know");
      }
      // The drain: what was done is answered once written, if the store writes it in time.
      s = engine.wait_durable_for(position, drain->left());
      if (!s) {
        return error_response(http::status::service_unavailable,
                              "the server is stopping and the change, made in memory, is not written to the store "
                              "yet: it is lost unless the store takes it while the engine stops; read it back "
                              "after the next start to know");
      }
    }
    if (!s->is_ok()) {
      return error_response(http::status::service_unavailable,
                            "the change was made in memory but " + s->message() +
                                "; it is lost when the engine stops, and the engine takes no more writes");
    }
    if (inner) return inner(turn);
    return std::move(*response);
  };
  engine.when_durable(position, [waker = deferred.waker] { waker->wake(); });
  return deferred;
}

}  // namespace flowrt::server
