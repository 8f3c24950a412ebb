// A write to `flowrt serve` with a durable store is answered once its change is durable,
// and without a thread waiting for it (server/durable_reply.h): while the disk is full the
// client has no answer though the change is committed in memory; once the store writes it
// the answer comes; and when the store is given up the answer is a 503 naming the failure
// (not a 201 for a change that will be lost, nor a 400 as if the request were wrong).
// The disk is the fault-injecting VFS (tests/store/fault_vfs.h) made SQLite's default.
#include <gtest/gtest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <condition_variable>
#include <future>
#include <mutex>
#include <thread>

#include "runtime/engine_core.h"
#include "runtime/journal.h"
#include "runtime/perturb.h"
#include "tests/server/server_fixture.h"
#include "tests/store/fault_vfs.h"
#include "tests/support/test_support.h"

namespace flowrt::testing_http {
namespace {

const std::string kBody = R"({"sys_id": "i1", "number": "INC0001"})";
const std::string kInsert =
    "POST /api/tables/incident/records HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\nContent-Length: " +
    std::to_string(kBody.size()) + "\r\n\r\n" + kBody;

class DurableReplyTest : public ServerFixture {
 protected:
  // Serves the fixture's project with `give_up_ms` (0: the store is retried without end)
  // and config.json's text `config` ("" for none).
  void serve_giving_up_after(int64_t give_up_ms, const std::string& config = "", int64_t drain_ms = 10000,
                             int io_threads = 2) {
    dir_ = fs::path(test_support::temp_path("flowrt-serve-" + test_support::current_test_file_name()));
    fs::remove_all(dir_);
    fs::create_directories(dir_ / "flows");
    for (const auto& f : kFlows) std::ofstream(dir_ / "flows" / f[0]) << f[1];
    if (!config.empty()) std::ofstream(dir_ / "config.json") << config;
    server::ServeOptions options;
    options.dir = dir_.string();
    options.listen = "127.0.0.1:0";
    options.log_level = "off";
    options.store_give_up_ms = give_up_ms;
    options.drain_ms = drain_ms;
    options.io_threads = io_threads;
    auto s = server::Service::open(options);
    ASSERT_TRUE(s) << s.error().describe();
    service_ = std::move(s).value();
    port_ = service_->port();
    client_ = std::make_unique<HttpClient>(port_);
  }
  Journal& journal() { return *engine().core().journal; }
  // Waits (no time limit of its own: the test's) until the insert is committed and the
  // journal's write of it has failed.
  void wait_committed_and_failing() {
    while (engine().record("incident", "i1").is_null()) std::this_thread::yield();
    while (journal().failure().is_ok()) std::this_thread::yield();
  }
  uint16_t port_ = 0;
  bool answered_now() {
    pollfd readable{client().socket().native_handle(), POLLIN, 0};
    return poll(&readable, 1, 0) == 1;
  }
  // Whether a new connection to the server is taken (false once it drains).
  bool accepting() {
    const int fd = ::socket(AF_INET, SOCK_STREAM, 0);
    sockaddr_in address{};
    address.sin_family = AF_INET;
    address.sin_port = htons(port_);
    address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
    const bool connected = ::connect(fd, reinterpret_cast<const sockaddr*>(&address), sizeof address) == 0;
    ::close(fd);
    return connected;
  }
  std::optional<HttpReply> answer_within_30s() {
    pollfd readable{client().socket().native_handle(), POLLIN, 0};
    if (poll(&readable, 1, 30000) != 1) return std::nullopt;
    return client().read_reply();
  }
  // A keyed call refused (400) while the disk is full: answered, and again from memory.
  void expect_keyed_refusal_answered_while_the_disk_is_full(testing::FaultVfs& vfs) {
    vfs.set_space(0);
    const std::string call = "POST /api/flows/greet/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                             "Idempotency-Key: greet-nobody\r\nContent-Length: 2\r\n\r\n{}";
    client().write_raw(call);
    std::optional<HttpReply> answered = answer_within_30s();
    ASSERT_TRUE(answered) << "no answer within 30 s";
    EXPECT_EQ(answered->status, 400) << answered->body;
    EXPECT_LT(journal().durable(), journal().appended()) << "the kept answer was written: the disk was not full";
    client().write_raw(call);
    std::optional<HttpReply> again = answer_within_30s();
    ASSERT_TRUE(again);
    EXPECT_EQ(again->status, 400);
    EXPECT_EQ(again->body, answered->body);
    EXPECT_EQ(again->header("Idempotent-Replayed"), "true");
    vfs.set_space(std::nullopt);
    EXPECT_TRUE(journal().wait_durable(journal().appended()).is_ok());
  }
  // A keyed call answered 503 because its start was not durable in time, sent again with its
  // key to the same server: told that it was applied and which context it started, while the
  // disk is still full and once it has room, and the flow ran once (API.md, "Sent again").
  // Without `gives_up` the store is retried and the answer is "not written yet" after
  // durable_answer_ms; with it the store is given up and the answer names the failure.
  void expect_a_keyed_call_answered_503_is_told_its_context_when_sent_again(testing::FaultVfs& vfs, bool gives_up) {
    const std::string body = R"({"name": "Ada"})";
    vfs.set_space(0);
    client().write_raw("POST /api/flows/greet/call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                       "Idempotency-Key: greet-ada\r\nContent-Length: " + std::to_string(body.size()) + "\r\n\r\n" +
                       body);
    std::optional<HttpReply> answered = answer_within_30s();
    ASSERT_TRUE(answered) << "no answer within 30 s";
    ASSERT_EQ(answered->status, 503) << answered->body;
    const std::vector<ContextRecord> contexts = engine().contexts("greet");
    ASSERT_EQ(contexts.size(), 1u) << "the call started no context, or more than one";
    const Value started(contexts[0].id());

    auto expect_told = [&](const char* when) {
      HttpReply again = client().post_keyed("/api/flows/greet/call", body, "greet-ada");
      EXPECT_EQ(again.status, 200) << when << ": " << again.body;
      EXPECT_EQ(again.json()["applied"], Value(true)) << when << ": " << again.body;
      EXPECT_EQ(again.json()["context_id"], started) << when << ": " << again.body;
      EXPECT_EQ(again.header("Idempotent-Replayed"), "true") << when;
    };
    expect_told("the disk still full");
    vfs.set_space(std::nullopt);
    if (!gives_up) {
      ASSERT_TRUE(journal().wait_durable(journal().appended()).is_ok());
      expect_told("the disk with room");
    }
    EXPECT_EQ(engine().contexts("greet").size(), 1u) << "the call ran once";
  }
};

TEST_F(DurableReplyTest, AnInsert_IsAnsweredOnceItIsDurable_NotBefore) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(0);
  vfs.set_space(0);
  client().write_raw(kInsert);
  wait_committed_and_failing();
  EXPECT_FALSE(answered_now()) << "answered while its change could not be written";

  vfs.set_space(std::nullopt);  // the journal's next try writes it
  std::optional<HttpReply> answered = answer_within_30s();
  ASSERT_TRUE(answered) << "no answer within 30 s of the disk having room";
  EXPECT_EQ(answered->status, 201) << answered->body;
  EXPECT_EQ(answered->json()["sys_id"], Value("i1"));
  EXPECT_GE(journal().durable(), 1u);
  service_.reset();
}

TEST_F(DurableReplyTest, AnInsertTheStoreNeverWrites_IsAnswered503_NamingTheFailure) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(200);
  vfs.set_space(0);
  client().write_raw(kInsert);
  std::optional<HttpReply> answered = answer_within_30s();  // once the store is given up
  ASSERT_TRUE(answered) << "no answer within 30 s";
  EXPECT_EQ(answered->status, 503) << answered->body;
  const std::string error(answered->json()["error"].as_string());
  EXPECT_NE(error.find("(the disk is full)"), std::string::npos) << error;
  EXPECT_NE(error.find("in memory"), std::string::npos) << error;
  service_.reset();
}

// While the store cannot write, a lifecycle change (publish, activate, deactivate) is
// refused with a 503 naming why, as other writes are, and changes nothing; once the disk
// has room the engine goes on and the same change is taken.
TEST_F(DurableReplyTest, ALifecycleChangeWhileTheStoreCannotWrite_Is503_AndChangesNothing) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(0);
  vfs.set_space(0);
  client().write_raw(kInsert);
  wait_committed_and_failing();
  HttpClient other(port_);
  const Value before = other.get("/api/flows/greet").json();
  HttpReply refused = other.post("/api/flows/greet/deactivate", "");
  EXPECT_EQ(refused.status, 503) << refused.body;
  EXPECT_NE(refused.json()["error"].as_string().find("cannot write its state"), std::string::npos) << refused.body;
  EXPECT_EQ(other.get("/api/flows/greet").json()["state"], Value("active"));
  EXPECT_EQ(other.get("/api/flows/greet").json()["revision"], before["revision"]);

  vfs.set_space(std::nullopt);
  std::optional<HttpReply> answered = answer_within_30s();
  ASSERT_TRUE(answered) << "no answer within 30 s of the disk having room";
  EXPECT_EQ(answered->status, 201) << answered->body;
  HttpReply taken = other.post("/api/flows/greet/deactivate", "");
  EXPECT_EQ(taken.status, 200) << taken.body;
  EXPECT_EQ(taken.json()["state"], Value("inactive"));
  service_.reset();
}

// The store is retried without end (a single server's default), so the writer never ends
// the wait: past durable_answer_ms the client is told the change is not written yet, and
// no I/O thread blocks on the disk. The change is still written once the disk has room.
TEST_F(DurableReplyTest, AnInsertNotWrittenWithinDurableAnswerMs_IsAnswered503_NotYetWritten) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(0, R"({"server": {"limits": {"durable_answer_ms": 300}}})");
  vfs.set_space(0);
  client().write_raw(kInsert);
  std::optional<HttpReply> answered = answer_within_30s();
  ASSERT_TRUE(answered) << "no answer within 30 s of a 300 ms durable_answer_ms";
  EXPECT_EQ(answered->status, 503) << answered->body;
  const std::string error(answered->json()["error"].as_string());
  EXPECT_NE(error.find("not written to the store yet; it may still be"), std::string::npos) << error;

  // The server goes on: another connection is served while the disk is still full.
  HttpClient other(port_);
  EXPECT_EQ(other.get("/healthz").status, 200);

  vfs.set_space(std::nullopt);
  EXPECT_TRUE(journal().wait_durable(journal().appended()).is_ok());
  EXPECT_FALSE(engine().record("incident", "i1").is_null());
  service_.reset();
}

// A keyed write's answer is given once its kept copy is durable, but not held for the disk
// past min(durable_answer_ms, 5 s): here a refusal (nothing committed, so the copy is the
// only change) while the disk is full is answered within the limit, though its copy is not
// written, and the same request sent again gets it from memory meanwhile.
TEST_F(DurableReplyTest, AKeyedAnswerWhoseKeptCopyIsNotWritten_IsGivenWithinDurableAnswerMs) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(0, R"({"server": {"limits": {"durable_answer_ms": 300}}})");
  expect_keyed_refusal_answered_while_the_disk_is_full(vfs);
  service_.reset();
}

// With a durable_answer_ms longer than 5 s (here an hour), the kept copy is waited for
// 5 s at most: the answer comes within the 30 s this test waits, not after an hour.
TEST_F(DurableReplyTest, AKeyedAnswerWhoseKeptCopyIsNotWritten_IsGivenWithinFiveSeconds_ThoughDurableAnswerMsIsLonger) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(0, R"({"server": {"limits": {"durable_answer_ms": 3600000}}})");
  expect_keyed_refusal_answered_while_the_disk_is_full(vfs);
  service_.reset();
}

// A call that waits for its context has its own wait instead of durable_answer_ms: when
// the start is not written by then, that is the answer (not a 202 for a start that may be
// lost, nor a wait of an hour).
TEST_F(DurableReplyTest, ACallWaitingForItsContext_WhoseStartIsNotWrittenInItsWait_IsAnswered503) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(0);
  vfs.set_space(0);
  const std::string body = R"({"name": "Ada"})";
  client().write_raw("POST /api/flows/greet/call?wait=300ms HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     "Content-Length: " + std::to_string(body.size()) + "\r\n\r\n" + body);
  std::optional<HttpReply> answered = answer_within_30s();
  ASSERT_TRUE(answered) << "no answer within 30 s of a 300 ms wait";
  EXPECT_EQ(answered->status, 503) << answered->body;
  const std::string error(answered->json()["error"].as_string());
  EXPECT_NE(error.find("not written to the store yet"), std::string::npos) << error;
  vfs.set_space(std::nullopt);
  EXPECT_TRUE(journal().wait_durable(journal().appended()).is_ok());
  service_.reset();
}

TEST_F(DurableReplyTest, AKeyedCallNotWrittenWithinDurableAnswerMs_SentAgain_IsToldItsOneContext) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(0, R"({"server": {"limits": {"durable_answer_ms": 300}}})");
  expect_a_keyed_call_answered_503_is_told_its_context_when_sent_again(vfs, /*gives_up=*/false);
  service_.reset();
}

TEST_F(DurableReplyTest, AKeyedCallWhoseStoreIsGivenUp_SentAgain_IsToldItsOneContext) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(200);
  expect_a_keyed_call_answered_503_is_told_its_context_when_sent_again(vfs, /*gives_up=*/true);
  service_.reset();
}

// A write still waiting for the disk when the drain begins (SIGTERM) is answered once the
// store has written it: the drain does not cut it off with an error (API.md, the drain).
TEST_F(DurableReplyTest, AnInsertWaitingForTheDiskWhenTheDrainBegins_IsAnsweredOnceWritten) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(0);
  vfs.set_space(0);
  client().write_raw(kInsert);
  wait_committed_and_failing();

  std::thread drain([this] { service_->stop(); });
  while (accepting()) std::this_thread::yield();  // the drain has begun
  EXPECT_FALSE(answered_now()) << "answered during the drain while its change could not be written";
  vfs.set_space(std::nullopt);
  std::optional<HttpReply> answered = answer_within_30s();
  drain.join();
  ASSERT_TRUE(answered) << "no answer within 30 s of the disk having room";
  EXPECT_EQ(answered->status, 201) << answered->body;
  service_.reset();
}

// The disk stays full through the drain: the write is answered 503 within the drain's
// time, saying it may be lost, and the server stops (a full disk does not keep it running).
TEST_F(DurableReplyTest, AnInsertWaitingForTheDiskThroughTheDrain_IsAnswered503_AndTheServerStops) {
  testing::FaultVfs vfs("flowrt-fault-serve", /*make_default=*/true);
  serve_giving_up_after(0, "", /*drain_ms=*/400);
  vfs.set_space(0);
  client().write_raw(kInsert);
  wait_committed_and_failing();

  std::promise<void> stopped;
  std::thread drain([this, &stopped] {
    service_->stop();
    stopped.set_value();
  });
  std::optional<HttpReply> answered = answer_within_30s();
  // Bounded: a drain that waited for the disk would hang the test; it fails instead (and
  // then frees the disk so that the drain ends).
  const bool drain_ended = stopped.get_future().wait_for(std::chrono::seconds(30)) == std::future_status::ready;
  if (!drain_ended) vfs.set_space(std::nullopt);
  drain.join();
  EXPECT_TRUE(drain_ended) << "the drain did not end within 30 s of a 400 ms drain_ms with the disk full";
  ASSERT_TRUE(answered) << "no answer within 30 s";
  EXPECT_EQ(answered->status, 503) << answered->body;
  const std::string error(answered->json()["error"].as_string());
  EXPECT_NE(error.find("the server is stopping"), std::string::npos) << error;
  EXPECT_NE(error.find("lost unless"), std::string::npos) << error;
  service_.reset();
}

// The store's writer held before its next write (runtime/perturb.h) until let go: the
// writes committed meanwhile are not durable, and nothing fails, so none is refused.
struct HeldWriter {
  static inline std::mutex mu;
  static inline std::condition_variable cv;
  static inline bool holding = false;  // guarded by mu
  static inline int held = 0;          // writes held so far, guarded by mu
  static void hook(PerturbPoint point) {
    if (point != PerturbPoint::kBeforeStoreWrite) return;
    std::unique_lock lock(mu);
    ++held;
    cv.notify_all();
    cv.wait(lock, [] { return !holding; });
  }
  HeldWriter() {
    std::lock_guard lock(mu);
    holding = true;
    held = 0;
    set_perturb_hook(&hook);
  }
  void wait_held() {
    std::unique_lock lock(mu);
    cv.wait(lock, [] { return held > 0; });
  }
  void let_go() {
    {
      std::lock_guard lock(mu);
      holding = false;
    }
    cv.notify_all();
  }
  ~HeldWriter() {
    let_go();
    set_perturb_hook(nullptr);
  }
};

// Writes waiting for the store on one I/O thread when the drain begins, the store's
// writer held through it: each is answered 503 within the drain's time. The replies share
// one drain deadline: until 2026-12-06 each waited three quarters of the drain on its own,
// one after another on their thread, so the drain's time ran out while the second waited,
// and the third connection was closed without an answer.
TEST_F(DurableReplyTest, WritesWaitingForTheStoreOnOneIoThread_AreEachAnswered503_WithinOneDrain) {
  serve_giving_up_after(0, "", /*drain_ms=*/2000, /*io_threads=*/1);
  ASSERT_TRUE(journal().wait_durable(journal().appended()).is_ok());
  HeldWriter writer;
  std::vector<std::unique_ptr<HttpClient>> clients;
  for (int i = 0; i < 3; ++i) {
    const std::string body = R"({"sys_id": "d)" + std::to_string(i) + R"("})";
    clients.push_back(std::make_unique<HttpClient>(port_));
    clients.back()->write_raw("POST /api/tables/incident/records HTTP/1.1\r\nHost: x\r\nContent-Type: "
                              "application/json\r\nContent-Length: " +
                              std::to_string(body.size()) + "\r\n\r\n" + body);
    while (engine().record("incident", "d" + std::to_string(i)).is_null()) std::this_thread::yield();
  }
  writer.wait_held();

  std::thread drain([this] { service_->stop(); });
  for (size_t i = 0; i < clients.size(); ++i) {
    pollfd readable{clients[i]->socket().native_handle(), POLLIN, 0};
    EXPECT_EQ(poll(&readable, 1, 30000), 1) << "write " << i << ": nothing within 30 s";
    std::optional<HttpReply> answered = clients[i]->read_reply();
    EXPECT_TRUE(answered) << "write " << i << ": the connection closed without an answer";
    if (answered) {
      EXPECT_EQ(answered->status, 503) << answered->body;
    }
  }
  writer.let_go();  // the engine stops after the server: its writer must be let go to end
  drain.join();
  service_.reset();
}

}  // namespace
}  // namespace flowrt::testing_http
