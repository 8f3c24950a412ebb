// advance on a real clock: it cannot move the clock, so it sleeps until real time reaches
// the target (the timer thread fires what falls due meanwhile), then waits until nothing
// can run. The real clock is the thing under test, so these take bounded real time
// (a few hundred milliseconds each) and measure the calling thread's CPU time to tell a
// sleep from a busy spin.
#include <time.h>

#include <chrono>
#include <thread>

#include "testing/flow_test.h"

namespace flowrt {
namespace {

using namespace flowrt::testing;

// CPU time of the calling thread, in milliseconds.
double ThreadCpuMs() {
  timespec ts;
  clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
  return static_cast<double>(ts.tv_sec) * 1000 + static_cast<double>(ts.tv_nsec) / 1e6;
}

double RealMs() {
  return std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

class RealClockAdvanceTest : public FlowTest {
 protected:
  EngineOptions Options() const override {
    EngineOptions o = FlowTest::Options();
    o.virtual_clock = false;
    return o;
  }
};

TEST_F(RealClockAdvanceTest, Advance_SleepsUntilRealTimeReachesTheTarget) {
  const TimeMs before = engine().now();
  const double real = RealMs();
  Status s = engine().advance(300);
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_GE(engine().now(), before + 300) << "returned before real time reached the target";
  EXPECT_LT(RealMs() - real, 5000);
}

TEST_F(RealClockAdvanceTest, Advance_LeavesTimersToTheTimerThread_AndDoesNotSpin) {
  ASSERT_TRUE(Load(R"({"id": "w", "trigger": {"type": "api"}, "actions": [
    {"action": "wait", "inputs": {"duration": "150ms"}},
    {"action": "log", "inputs": {"message": "woke"}}]})"));
  const std::string early = CallFlow("w");
  const double cpu = ThreadCpuMs();
  const double real = RealMs();
  Status s = engine().advance(400);
  const double used = ThreadCpuMs() - cpu;
  const double took = RealMs() - real;
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_THAT(ContextById(early), HasStatus("completed")) << "the wait fell due within the advance";
  EXPECT_THAT(ContextById(early), HasLog("woke"));
  EXPECT_GE(took, 390);
  EXPECT_LT(used, 0.25 * took) << "advance used " << used << " ms of CPU in " << took << " ms: it spun";
}

TEST_F(RealClockAdvanceTest, Advance_ReturnsEarlyWhenAStopIsRequested) {
  std::thread stopper([&] {
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
    engine().request_stop();
  });
  const double real = RealMs();
  Status s = engine().advance(60000);
  const double took = RealMs() - real;
  stopper.join();
  EXPECT_TRUE(s.is_ok()) << s.message();
  EXPECT_LT(took, 5000) << "an advance of 60s went on after the stop was requested";
}

}  // namespace
}  // namespace flowrt
