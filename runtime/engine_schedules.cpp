// EngineCore's schedules: the trigger index and the timers of schedule triggers, each
// occurrence's start, and a schedule's rhythm going on (or catching up) after a restart.
// All under the engine's schedule lock (engine_core.h).
#include <algorithm>
#include <memory>
#include <optional>

#include "plans/time.h"
#include "runtime/engine_core.h"
#include "runtime/engine_log.h"
#include "runtime/flow_slot.h"
#include "triggers/schedule.h"

namespace flowrt {

void EngineCore::refresh_triggers() {
  dispatcher.set_index(flows.build_index());
  arm_schedules();
}

void EngineCore::arm_schedules() {
  MutexLock lock(schedule_mu_);
  for (FlowSlot* slot : flows.all_flows()) {
    const FlowSlot::Trigger trigger = slot->trigger();
    const bool wanted = slot->active.load(std::memory_order_acquire) && trigger.spec &&
                        trigger.spec->type == TriggerType::kSchedule;
    if (wanted && slot->schedule_timer.valid() && slot->schedule_version == trigger.version) continue;
    // Deactivated, or a new version: the old timer (if any) is stale from now on.
    timers.cancel(slot->schedule_timer);
    slot->schedule_timer = TimerHandle{};
    ++slot->schedule_generation;
    if (!wanted) {
      // What a restart owed it is not owed to a later activation.
      slot->missed_at = -1;
      slot->due_from = -1;
      continue;
    }
    // Never an occurrence that already fired (an `at` re-armed at its own time); the one
    // missed while no engine ran first, at once.
    const TimeMs from = slot->missed_at >= 0  ? slot->missed_at
                        : slot->due_from >= 0 ? slot->due_from
                                              : std::max(clock.now(), slot->last_tick + 1);
    slot->missed_at = -1;
    slot->due_from = -1;
    std::optional<TimeMs> next = next_occurrence(*trigger.spec, slot->activated_at.load(std::memory_order_acquire), from);
    if (!next) continue;
    const uint64_t generation = slot->schedule_generation;
    const TimeMs at = *next;
    slot->schedule_version = trigger.version;
    slot->schedule_timer = timers.add(at, false, [this, slot, generation, at] { schedule_tick(slot, generation, at); });
  }
}

void EngineCore::schedule_tick(FlowSlot* slot, uint64_t generation, TimeMs at) {
  if (stop_requested()) return;
  std::shared_ptr<const TriggerSpec> trigger;
  {
    MutexLock lock(schedule_mu_);
    if (generation != slot->schedule_generation) return;
    slot->schedule_timer = TimerHandle{};
    if (!slot->active.load(std::memory_order_acquire)) return;
    slot->last_tick = at;
    // A version published since this timer was armed: arm_schedules, which follows every
    // publish, re-arms it for that version; this tick of the old one does not fire.
    FlowSlot::Trigger current = slot->trigger();
    if (current.version != slot->schedule_version) return;
    trigger = std::move(current.spec);
  }
  if (!trigger || trigger->type != TriggerType::kSchedule) return;
  engine_log().debug("schedule tick of flow {} at {}", slot->id, format_time(at));
  TriggerData t;
  t.type = TriggerType::kSchedule;
  t.time = at;
  (void)dispatcher.start_flow(*slot, std::move(t), Value(), Origin{});  // journals the tick with the start
  std::optional<TimeMs> next = next_occurrence(*trigger, slot->activated_at.load(std::memory_order_acquire), at + 1);
  if (!next) return;
  MutexLock lock(schedule_mu_);
  if (generation != slot->schedule_generation) return;
  const TimeMs when = *next;
  slot->schedule_timer = timers.add(when, false, [this, slot, generation, when] { schedule_tick(slot, generation, when); });
}

Value EngineCore::restore_schedule(FlowSlot* slot, TimeMs activated_at, TimeMs last_tick, bool same_version) {
  MutexLock lock(schedule_mu_);
  slot->activated_at.store(activated_at, std::memory_order_release);
  slot->last_tick = std::max(slot->last_tick, last_tick);
  // Armed from the new activation time by the next arm_schedules.
  timers.cancel(slot->schedule_timer);
  slot->schedule_timer = TimerHandle{};
  ++slot->schedule_generation;
  slot->missed_at = -1;
  slot->due_from = -1;
  const std::shared_ptr<const TriggerSpec> trigger = slot->trigger_spec();
  if (!trigger || trigger->type != TriggerType::kSchedule) return Value();
  if (clock.is_virtual()) {
    // The clock went on from where the last run left it: what is due by now fell due
    // during that run (FlowSlot::due_from), and fires one by one at the next advance; a
    // schedule changed since has no backlog (arm_schedules goes on from now).
    if (same_version) slot->due_from = std::max(slot->last_tick + 1, activated_at);
    return Value();
  }
  // The occurrences after the last one fired that are due by now: missed while no engine ran.
  // None before the activation: an `at` or a `start` already past when the flow was
  // activated never ran, and is not owed now (as arm_schedules counts from the activation).
  const TimeMs now = clock.now();
  int missed = 0;
  TimeMs latest = -1, before = -1;
  for (std::optional<TimeMs> at = next_occurrence(*trigger, activated_at, std::max(slot->last_tick + 1, activated_at));
       at && *at <= now; at = next_occurrence(*trigger, activated_at, *at + 1)) {
    before = latest;
    latest = *at;
    if (++missed == kMaxMissedCounted) {
      // Too many to count one by one (an `every` of seconds, down for months): the last one
      // due is a rhythm's step back from now.
      if (std::optional<TimeMs> last = next_occurrence(*trigger, activated_at, now - (latest - before) + 1);
          last && *last <= now && *last > latest) {
        latest = *last;
      }
      break;
    }
  }
  if (latest < 0) return Value();
  slot->missed_at = latest;
  return Value::object({{"flow", Value(std::string_view(slot->id))},
                        {"occurrences", Value(static_cast<long long>(missed))},
                        {"fires_for", Value(std::string_view(format_time(latest)))}});
}

}  // namespace flowrt
