#include "runtime/event_queue.h"

#include <concurrentqueue.h>

namespace flowrt {

struct EventQueue::Impl {
  moodycamel::ConcurrentQueue<Context*> queue;
  moodycamel::ProducerToken producer{queue};
};

EventQueue::EventQueue() : impl_(std::make_unique<Impl>()) {}
EventQueue::~EventQueue() = default;

void EventQueue::push(Context* event) { impl_->queue.enqueue(impl_->producer, event); }

bool EventQueue::try_pop(Context** event) { return impl_->queue.try_dequeue_from_producer(impl_->producer, *event); }

size_t EventQueue::size_approx() const { return impl_->queue.size_approx(); }

}  // namespace flowrt
