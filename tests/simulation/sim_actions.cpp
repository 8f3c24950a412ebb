#include "tests/simulation/sim_actions.h"

#include <pthread.h>

#include <cstring>
#include <stdexcept>
#include <string>

#include "runtime/engine_core.h"

namespace flowrt::sim {
namespace {

// The calling thread's run clock (sim_slow moves it), and whether it is an engine worker.
thread_local double t_run_offset = 0;
thread_local int t_worker = -1;  // -1 not looked yet

bool is_worker() {
  if (t_worker < 0) {
    char name[16] = {};
    pthread_getname_np(pthread_self(), name, sizeof name);
    t_worker = std::strcmp(name, "flowrt-worker") == 0 ? 1 : 0;
  }
  return t_worker == 1;
}

std::string upper(std::string_view s) {
  std::string out(s);
  for (char& c : out) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
  return out;
}

}  // namespace

SimActions::SimActions(bool threads) : threads_(threads), state_(std::make_shared<State>()) {}

std::function<double()> SimActions::run_clock() {
  if (!threads_) return [] { return t_run_offset; };  // contexts run on the driving thread
  std::shared_ptr<State> st = state_;
  return [st] { return is_worker() ? t_run_offset : st->watchdog_ms.load(std::memory_order_acquire); };
}

std::vector<CustomActionType> SimActions::types() {
  std::vector<CustomActionType> out;
  CustomActionType echo;
  echo.name = "sim_echo";
  echo.inputs = {{"text", ParamType::kString, true}};
  echo.outputs = {{"out", ParamType::kString, false}};
  echo.run = [](CustomActionContext& c) -> Result<Value> {
    return Value::object({{"out", Value(std::string_view(upper(c.input("text").as_string())))}});
  };
  out.push_back(echo);

  CustomActionType stamp;
  stamp.name = "sim_stamp";
  stamp.inputs = {{"tag", ParamType::kString, true}};
  stamp.outputs = {{"sys_id", ParamType::kString, false}};
  stamp.run = [](CustomActionContext& c) -> Result<Value> {
    Result<Value> r = c.host().create_record(
        Value("sink"), Value::object({{"tag", c.input("tag")}, {"by", c.context_id()}}), Value());
    if (!r) return r.error();
    return Value::object({{"sys_id", (*r)["sys_id"]}});
  };
  out.push_back(stamp);

  CustomActionType thrower;
  thrower.name = "sim_throw";
  thrower.run = [](CustomActionContext&) -> Result<Value> { throw std::runtime_error("boom on purpose"); };
  out.push_back(thrower);

  CustomActionType slow;
  slow.name = "sim_slow";
  slow.run = [](CustomActionContext&) -> Result<Value> {
    t_run_offset += 1000.0 * 3600 * 24 * 365;  // past any max_run_time the simulation sets
    return Value::empty_object();
  };
  out.push_back(slow);

  CustomActionType hang;
  hang.name = "sim_hang";
  std::shared_ptr<State> st = state_;
  hang.run = [st](CustomActionContext&) -> Result<Value> {
    std::unique_lock lock(st->mu);
    ++st->entered;
    st->watchdog_ms.store(1e15, std::memory_order_release);  // every deadline has passed
    st->cv.wait(lock, [&] { return st->open; });
    ++st->left;
    st->cv.notify_all();
    return Value::empty_object();
  };
  out.push_back(hang);
  return out;
}

void SimActions::release_hung() {
  std::unique_lock lock(state_->mu);
  state_->open = true;
  state_->cv.notify_all();
  state_->cv.wait(lock, [&] { return state_->left == state_->entered; });
}

int SimActions::hung() const {
  std::unique_lock lock(state_->mu);
  return state_->entered;
}

}  // namespace flowrt::sim
