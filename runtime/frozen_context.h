// FrozenContext: a finished context's record, packed into one allocation, as the memory
// store keeps it (ContextStore) once the context has ended.
//
// A live Context is built to run: its execution record is a vector of step entries, each
// input and output an object of its own, the trigger's record versions, the scheduling and
// lock fields. Once it ends none of that can change, and only its record is ever read, so
// it is frozen: the record's fields (status, times, trigger, cause, steps, logs, variables,
// error) are written with a ValuePacker (plans/value_pack.h) into the bytes after a small
// header. Values that something else holds too (records that their tables hold, interned
// shapes) are kept by reference; the rest is written out in place. An action step's inputs
// are written against its node's templates, so that what the plan already says (constants,
// the text around pills) takes no bytes, and a log step's line is taken from its step
// entry (frozen_context.cpp says the layout). Reading decodes the bytes into the same fields that a live context
// reads from (RecordFields) and builds the JSON through the one record_to_value, so a frozen
// record reads exactly as the live one did (FrozenRecordTest,
// tests/scenarios/frozen_record_test.cpp).
// Ownership: reference counted (boost::intrusive_ptr); the plan it ran with is kept (its
// steps name their nodes by ordinal). Thread-safety: immutable once made; any thread reads.
#pragma once

#include <atomic>
#include <cstdint>
#include <memory>

#include <boost/intrusive_ptr.hpp>

#include "runtime/context.h"

namespace flowrt {

struct FlowSlot;

class FrozenContext {
 public:
  // `ctx`'s record, frozen. REQUIRES: ctx finished.
  static boost::intrusive_ptr<const FrozenContext> freeze(const Context& ctx);

  FrozenContext(const FrozenContext&) = delete;
  FrozenContext& operator=(const FrozenContext&) = delete;

  uint64_t seq() const { return seq_; }
  const FlowSlot* flow() const { return flow_; }
  ContextStatus status() const { return static_cast<ContextStatus>(packed()[0]); }
  // The plan it ran with (null when its flow did not compile).
  const std::shared_ptr<const Plan>& plan() const { return plan_; }
  uint64_t commit_seq() const;
  // The record as JSON (SPEC section 10), as Context::to_value gives it.
  Value to_value(size_t value_limit = 0) const;
  Context::Summary summary() const;
  // Bytes it takes: header (40) and packed record (not the values it references).
  size_t footprint() const { return sizeof(FrozenContext) + packed_size_; }

  // References held to it (tests check that its holders let go).
  uint32_t use_count() const { return refs_.load(std::memory_order_relaxed); }

  friend void intrusive_ptr_add_ref(const FrozenContext* f) { f->refs_.fetch_add(1, std::memory_order_relaxed); }
  friend void intrusive_ptr_release(const FrozenContext* f) {
    if (f->refs_.fetch_sub(1, std::memory_order_acq_rel) == 1) destroy(f);
  }

  // The record's fields, decoded (frozen_context.cpp).
  struct Decoded;

 private:
  FrozenContext() = default;
  ~FrozenContext() = default;
  static void destroy(const FrozenContext* f);
  const unsigned char* packed() const { return reinterpret_cast<const unsigned char*>(this + 1); }
  Decoded decode() const;

  mutable std::atomic<uint32_t> refs_{1};
  uint32_t packed_size_ = 0;
  uint64_t seq_ = 0;
  const FlowSlot* flow_ = nullptr;
  std::shared_ptr<const Plan> plan_;
  // The packed record follows the header, in the same allocation; its first byte is the
  // status, which lists read without decoding.
};

}  // namespace flowrt
