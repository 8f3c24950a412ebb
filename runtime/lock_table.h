// LockTable: the state of every named lock (SPEC section 8): holders, weights, fencing
// tokens, leases and a FIFO queue of waiters per name.
//
// A lock belongs to a context (identified by its seq), never to a thread. The table is a
// plain data structure: times come in as arguments, and what follows from an operation
// (grants to waiters) comes back as values for the caller to carry out (wake the
// context, set timers, write its log). Not synchronized: the Dispatcher owns the table
// and guards it with its commit lock, so that a `while_holding` check and the write it
// guards are one atomic step.
//
// Rules: exclusive by default (undeclared names have limit 1); a request is granted at
// once only when the queue is empty and its weight fits; otherwise it waits, first come
// first served, and no later request passes it. A request that could never be granted
// because of the contexts waiting for the requester (a cycle across names and weights) is
// refused as a deadlock.
//
// On the real clock a lock step first tries without parking (try_acquire); when the lock
// is taken, its context parks and asks again (acquire). So that no later request passes
// it in between, the failed try takes its place at the back of the queue then, as a
// placeholder: nobody behind it is granted, and nobody new is granted at once, until its
// context's acquire finds the place and decides there (granted, queued in that place, or
// refused), or drop_place takes it away (the step did not park for it).
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <optional>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

#include <boost/container/small_vector.hpp>

#include "plans/time.h"
#include "plans/value.h"
#include "runtime/clock.h"

namespace flowrt {

struct LockRequest {
  uint64_t who = 0;           // the context's seq
  void* owner = nullptr;      // the caller's object for the context (handed back in grants)
  std::string name;
  int64_t weight = 1;
  TimeMs now = 0;
  TimeMs give_up_at = 0;      // first attempt + (max_attempts - 1) * delay
  DurationMs max_duration = 3600000;
  uint64_t wait_id = 0;       // the context's wait this request parks on
  Value step;                 // the lock step's path, for log lines
  int64_t max_attempts = 1;   // with delay: how attempts and waiting are reported
  DurationMs delay = 1000;
};

struct LockGrant {
  uint64_t who = 0;
  void* owner = nullptr;
  std::string name;
  int64_t weight = 1;
  int64_t token = 0;
  uint64_t wait_id = 0;
  TimeMs requested_at = 0;
  TimeMs granted_at = 0;
  TimeMs expires_at = 0;
  bool was_queued = false;
  TimerHandle give_up_timer;  // the waiter's timer, to cancel now that it is granted
  Value step;
  int64_t max_attempts = 1;
  DurationMs delay = 1000;
};

struct AcquireOutcome {
  enum class Kind : uint8_t { kGranted, kReentered, kQueued, kTimedOut, kDeadlock, kTooHeavy };
  Kind kind = Kind::kGranted;
  LockGrant grant;            // kGranted, kReentered
  std::string message;        // kDeadlock (names the cycle), kTooHeavy
  size_t ahead = 0;           // kQueued: how many wait before it
  std::vector<uint64_t> holders;  // kQueued: who holds it now
  // The request was decided where its placeholder stood (try_acquire): a grant is then a
  // hand-off from the queue (grant.was_queued), and a refusal took it out of the queue.
  bool had_place = false;
  // Grants to waiters that the requester's place held up, made when it left the queue
  // without waiting there (kTimedOut, kDeadlock, kTooHeavy) or was granted with room left
  // for those behind it (kGranted): for the caller to carry out.
  std::vector<LockGrant> others;
};

struct LockHolderState {
  uint64_t who;
  int64_t weight;
  int64_t token;
  TimeMs acquired_at;
  TimeMs expires_at;
};

struct LockWaiterState {
  uint64_t who;
  int64_t weight;
  TimeMs requested_at;
  TimeMs give_up_at;
};

struct LockState {
  std::string name;
  int64_t limit;
  int64_t held;
  int64_t last_token;
  std::vector<LockHolderState> holders;
  std::vector<LockWaiterState> waiters;
};

// {"name", "limit", "held", "last_token", "holders": [{"context", "weight", "token",
// "acquired_at", "expires_at"}], "waiters": [{"context", "weight", "requested_at",
// "gives_up_at"}]}: a lock as Engine::locks() and a Store show it.
Value lock_state_value(const LockState& s);

class LockTable {
 public:
  // Declares a name's limit (config "locks"). Names never declared have limit 1.
  void set_limit(std::string_view name, int64_t limit);
  int64_t limit(std::string_view name) const;

  AcquireOutcome acquire(const LockRequest& request);
  // Decided at `now`, which may be later than the request (request.now): a request a
  // context made before a restart and makes again after it. A grant's lease counts from
  // `now`; its wait from request.now.
  AcquireOutcome acquire(const LockRequest& request, TimeMs now);
  // Grants only what needs no waiting (a free lock with no queue, or one already held), and
  // returns true. Otherwise returns false, and a request that would wait (its weight fits
  // the limit, it gives up later than request.now, and its context waits for no other
  // lock) takes its place at the back of the queue as a placeholder (out->kind kQueued);
  // any other changes nothing. Its context's acquire() decides in that place;
  // drop_place() takes it away.
  bool try_acquire(const LockRequest& request, AcquireOutcome* out);
  // A placeholder whose context did not park for it (the step failed, or asked for
  // something else) leaves the queue; grants it held up come back in *granted. False when
  // `who` holds no place in `name`'s queue.
  bool drop_place(uint64_t who, std::string_view name, TimeMs now, std::vector<LockGrant>* granted);
  // The holder lets go (unlock). Returns false when `who` does not hold `name`.
  bool release(uint64_t who, std::string_view name, TimeMs now, std::vector<LockGrant>* granted);
  // A waiter's attempts ran out (or its wait `wait_id` ended): it leaves the queue. Its
  // request comes back in *request. Returns false when it was no longer waiting there.
  bool give_up(uint64_t who, std::string_view name, uint64_t wait_id, TimeMs now, std::vector<LockGrant>* granted,
               LockRequest* request = nullptr, TimerHandle* give_up_timer = nullptr);
  // A lease ran out: released as if unlocked, if `who` still holds it with `token`.
  bool expire(uint64_t who, std::string_view name, int64_t token, TimeMs now, std::vector<LockGrant>* granted);
  // A context ended: every lock it holds is released and it leaves every queue. The names
  // released and the timers to cancel (leases, give-up timers) come back.
  void release_all(uint64_t who, TimeMs now, std::vector<std::string>* released, std::vector<TimerHandle>* timers,
                   std::vector<LockGrant>* granted);

  bool holds(uint64_t who, std::string_view name) const;
  bool holds_any(uint64_t who) const;
  bool waiting(uint64_t who) const;
  // Remembers a holder's lease timer or a waiter's give-up timer, to cancel them later.
  void set_lease_timer(uint64_t who, std::string_view name, TimerHandle timer);
  void set_give_up_timer(uint64_t who, std::string_view name, TimerHandle timer);
  TimerHandle lease_timer(uint64_t who, std::string_view name) const;

  std::vector<LockState> snapshot() const;
  // One lock's state; nullopt when no one holds or waits for it.
  std::optional<LockState> state(std::string_view name) const;

  // ---- what a durable store keeps (runtime/journal.h) ----
  // The last fencing token issued (0: none yet).
  int64_t last_token() const { return next_token_ - 1; }
  // Tokens go on after `token` (a stored last token): never one issued before.
  void restore_last_token(int64_t token);
  // Puts back a holder a store kept (a context resumed after a restart), as it was: its
  // weight, token, grant time and lease expiry. False (and nothing changed) when it would
  // not fit the limit or it holds the name already.
  bool restore_holder(uint64_t who, void* owner, std::string_view name, int64_t weight, int64_t token,
                      TimeMs acquired_at, TimeMs expires_at);
  // With tracking on, the names of the locks whose state changed since the last
  // take_changed() (each once, in the order first changed).
  void track_changes(bool on) { track_changes_ = on; }
  std::vector<std::string> take_changed();
  // "" when every invariant holds: held weights fit their limits and equal the holders'
  // sum, no one holds and waits for one name, the index by context matches the holders and
  // queues (and keeps no one who neither holds nor waits), no waiter that fits is left
  // waiting, and queued requests were granted in join order.
  std::string check_invariants() const;
  bool empty() const { return locks_.empty(); }
  // What the last deadlock check looked at (holders and queue positions): linear in the
  // waiters and their holdings, which a test checks.
  uint64_t last_deadlock_check_work() const { return last_deadlock_check_work_; }

 private:
  struct Holder {
    uint64_t who;
    void* owner;
    int64_t weight;
    int64_t token;
    TimeMs acquired_at;
    TimeMs expires_at;
    TimerHandle lease_timer;
  };
  struct Waiter {
    LockRequest request;
    TimerHandle give_up_timer;
    uint64_t order = 0;  // when it joined a queue, over all names
    // A try that found the lock taken, holding its place until its context parks and asks
    // again (see the top): never granted from the queue, it holds up those behind it.
    bool placeholder = false;
    uint64_t who() const { return request.who; }
    int64_t weight() const { return request.weight; }
  };
  struct Entry {
    int64_t limit = 1;
    bool declared = false;
    int64_t held = 0;
    uint64_t last_granted_order = 0;  // FIFO check: queued grants follow join order
    std::vector<Holder> holders;
    std::deque<Waiter> queue;
    // Whether `weight` more fits within the limit; held <= limit always, so the difference
    // cannot overflow where the sum could (a limit and weights near INT64_MAX).
    bool fits(int64_t weight) const { return weight <= limit - held; }
  };

  // What one context holds and waits for: the reverse of the entries' holders and queues,
  // which release_all and deadlock detection read. The names are the keys of `locks_`,
  // which stay where they are while anyone holds or waits for them (forget_if_idle erases
  // an entry only when no one does). A hand-off (a queued request granted) changes the two
  // contexts' records in place and allocates nothing: the waiter's record was made when
  // it queued. A context's record goes once it neither holds nor waits.
  struct ContextLocks {
    const std::string* waiting_for = nullptr;
    boost::container::small_vector<const std::string*, 2> held;
    bool idle() const { return waiting_for == nullptr && held.empty(); }
  };
  using Locks = std::map<std::string, Entry, std::less<>>;

  Locks::iterator entry(std::string_view name);
  const ContextLocks* context_locks(uint64_t who) const;
  // Erases `who`'s record once it neither holds nor waits.
  void forget_context_if_idle(std::unordered_map<uint64_t, ContextLocks>::iterator it);
  // The functions below take a lock as its map element, so that what they index is its
  // key (which stays put), never a copy of the name.
  LockGrant grant(Locks::value_type& lock, ContextLocks& c, const LockRequest& request, TimeMs now, bool queued);
  void grant_waiters(Locks::value_type& lock, TimeMs now, std::vector<LockGrant>* granted);
  // try_acquire's placeholder, when `request` would wait (see try_acquire).
  void hold_place(Locks::value_type& lock, const LockRequest& request, AcquireOutcome* out);
  // The request's decision where its placeholder stands in the queue (acquire).
  AcquireOutcome decide_in_place(Locks::value_type& lock, std::deque<Waiter>::iterator place, const LockRequest& request,
                                 TimeMs now);
  // `who`'s placeholder in `lock`'s queue, or the queue's end.
  std::deque<Waiter>::iterator place_of(Locks::value_type& lock, uint64_t who);
  // Takes `who`'s entry out of `lock`'s queue (a waiter or a placeholder) and grants what it
  // held up.
  void leave_queue(Locks::value_type& lock, std::deque<Waiter>::iterator it, TimeMs now, std::vector<LockGrant>* granted);
  void drop_holder(Locks::value_type& lock, std::vector<Holder>::iterator it);
  void forget_if_idle(std::string_view name);
  void note_changed(std::string_view name);
  // The cycle `request` would close, described; "" when there is none.
  std::string find_deadlock(const LockRequest& request, const Entry& e) const;
  // Names the shortest cycle of waiting through the requester, among the contexts that
  // cannot proceed.
  std::string name_cycle(const LockRequest& request, const Entry& target,
                         const std::function<bool(uint64_t)>& can_proceed) const;
  mutable uint64_t last_deadlock_check_work_ = 0;

  Locks locks_;
  int64_t next_token_ = 1;
  uint64_t next_order_ = 1;
  std::string violation_;  // the first broken rule seen while granting, for check_invariants
  bool track_changes_ = false;
  std::vector<std::string> changed_;
  std::unordered_map<uint64_t, ContextLocks> contexts_;  // who -> what it holds and waits for
};

}  // namespace flowrt
