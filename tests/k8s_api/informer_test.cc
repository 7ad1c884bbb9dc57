// List+watch against the double: every transition in order, a cut stream resumed without
// losing or repeating an event, 410 Gone (status and ERROR event) answered by a relist, and a
// malformed line survived.
#include <gtest/gtest.h>

#include <atomic>
#include <mutex>
#include <thread>

#include "base/codes.h"
#include "harness.h"
#include "k8s/watch.h"

namespace rsl::k8stest {
namespace {

using k8s::Informer;
using k8s::WatchEventType;

// Runs an informer on a thread and records "TYPE name phase" per change.
class Watcher {
 public:
  Watcher(k8s::ApiClient* client, const std::string& selector, int watch_timeout_s = 300)
      : informer_(client, kPods, selector, [this](const Informer::Change& c) {
          std::lock_guard<std::mutex> lock(mu_);
          std::string phase = c.object.contains("status")
                                  ? c.object["status"].value("phase", std::string("-"))
                                  : "-";
          log_.push_back(std::string(k8s::Name(c.type)) + " " +
                         c.object["metadata"]["name"].get<std::string>() + " " + phase);
        }) {
    informer_.set_watch_timeout_seconds(watch_timeout_s);
    thread_ = std::thread([this] { status_ = informer_.Run(&stop_, 1000, 20); });
  }
  ~Watcher() { Stop(); }
  void Stop() {
    stop_ = true;
    if (thread_.joinable()) thread_.join();
  }
  std::vector<std::string> log() {
    std::lock_guard<std::mutex> lock(mu_);
    return log_;
  }
  bool WaitForCount(size_t n) {
    return WaitFor([&] { return log().size() >= n; });
  }
  Informer& informer() { return informer_; }
  Status status() const { return status_; }

 private:
  std::mutex mu_;
  std::vector<std::string> log_;
  std::atomic<bool> stop_{false};
  Informer informer_;
  Status status_;
  std::thread thread_;
};

void Transitions(FakeApiServer* s, const std::string& name) {
  s->SetPodPhase("risk", name, PodPhase::kPending);
  s->SetPodPhase("risk", name, PodPhase::kRunning);
  s->SetPodPhase("risk", name, PodPhase::kSucceeded);
}

TEST_F(DoubleTest, ListThenWatchSeesEveryTransitionInOrder) {
  k8s::ApiClient client = Client();
  server_->Add("pods", "risk", PodObject("before"));
  server_->Add("pods", "risk", PodObject("other", {{"rsl.dev/run", "run-2"}}));
  Watcher w(&client, "rsl.dev/run=run-1");
  ASSERT_TRUE(WaitFor([&] { return w.informer().synced(); }));
  ASSERT_TRUE(client.Create(kPods, PodObject("p")).ok());
  Transitions(server_.get(), "p");
  server_->SetPodPhase("risk", "other", PodPhase::kRunning);  // not selected
  server_->SetPodPhase("risk", "p", PodPhase::kFailed);       // (a test double may go back)
  server_->DeleteObject("pods", "risk", "p");
  ASSERT_TRUE(w.WaitForCount(7)) << ::testing::PrintToString(w.log());
  EXPECT_EQ(w.log(), (std::vector<std::string>{"ADDED before Pending", "ADDED p Pending",
                                               "MODIFIED p Pending", "MODIFIED p Running",
                                               "MODIFIED p Succeeded", "MODIFIED p Failed",
                                               "DELETED p Failed"}));
  auto snap = w.informer().Snapshot();
  EXPECT_EQ(snap.size(), 1u);
  EXPECT_TRUE(snap.count("before"));
  EXPECT_EQ(w.informer().resource_version(), std::to_string(server_->resource_version()));
  w.Stop();
  EXPECT_TRUE(w.status().ok()) << w.status().ToString();
  EXPECT_EQ(w.informer().stats().lists.load(), 1);
}

TEST_F(DoubleTest, ACutWatchResumesWithoutLosingOrRepeatingEvents) {
  k8s::ApiClient client = Client();
  server_->Add("pods", "risk", PodObject("p"));
  server_->CutNextWatchAfter(1);  // the first watch: one event, half of the next, then cut
  Watcher w(&client, "");
  ASSERT_TRUE(WaitFor([&] { return w.informer().synced(); }));
  Transitions(server_.get(), "p");
  server_->Add("pods", "risk", PodObject("q"));
  server_->SetPodPhase("risk", "q", PodPhase::kOomKilled);
  ASSERT_TRUE(w.WaitForCount(6)) << ::testing::PrintToString(w.log());
  std::this_thread::sleep_for(std::chrono::milliseconds(200));  // nothing more may come
  EXPECT_EQ(w.log(), (std::vector<std::string>{"ADDED p Pending", "MODIFIED p Pending",
                                               "MODIFIED p Running", "MODIFIED p Succeeded",
                                               "ADDED q Pending", "MODIFIED q Failed"}));
  EXPECT_GE(w.informer().stats().watches.load(), 2);
  EXPECT_EQ(w.informer().stats().lists.load(), 1);  // resumed, never relisted
}

// The informer's watch ends (timeoutSeconds 1) while the double refuses watches (503), so it
// misses what happens meanwhile; the history is compacted, and its next watch from the old
// resourceVersion is told 410. It relists and reports what changed as changes.
void GoneThenRelist(FakeApiServer* server, k8s::ApiClient* client, bool as_event) {
  server->set_gone_as_event(as_event);
  server->Add("pods", "risk", PodObject("a"));
  server->Add("pods", "risk", PodObject("b"));
  Watcher w(client, "", 1);
  ASSERT_TRUE(WaitFor([&] { return w.informer().synced(); }));
  ASSERT_TRUE(w.WaitForCount(2));
  int watches = server->requests("GET", "?watch");
  server->InjectFault({"GET", "?watch", 503, "ServiceUnavailable", "", 100000});
  ASSERT_TRUE(WaitFor([&] { return server->requests("GET", "?watch") >= watches + 3; }));
  server->DeleteObject("pods", "risk", "a");
  server->SetPodPhase("risk", "b", PodPhase::kRunning);
  server->Add("pods", "risk", PodObject("c"));
  server->Compact();
  server->ClearFaults();
  ASSERT_TRUE(w.WaitForCount(5)) << ::testing::PrintToString(w.log());
  EXPECT_EQ(w.log(),
            (std::vector<std::string>{"ADDED a Pending", "ADDED b Pending", "DELETED a Pending",
                                      "MODIFIED b Running", "ADDED c Pending"}));
  EXPECT_EQ(w.informer().stats().lists.load(), 2);
  EXPECT_EQ(w.informer().stats().gone.load(), 1);
  EXPECT_EQ(w.informer().Snapshot().size(), 2u);
  // After the relist it watches again and sees new changes.
  server->SetPodPhase("risk", "c", PodPhase::kEvicted);
  ASSERT_TRUE(w.WaitForCount(6));
  EXPECT_EQ(w.log()[5], "MODIFIED c Failed");
}

TEST_F(DoubleTest, GoneStatusMeansRelist) {
  k8s::ApiClient client = Client();
  GoneThenRelist(server_.get(), &client, false);
}

TEST_F(DoubleTest, GoneErrorEventMeansRelist) {
  k8s::ApiClient client = Client();
  GoneThenRelist(server_.get(), &client, true);
}

TEST_F(DoubleTest, AMalformedLineDropsTheStreamNotTheInformer) {
  k8s::ApiClient client = Client();
  server_->SendMalformedInNextWatch("{\"type\":\"MODIFIED\",\"object\":{\"kind\":\"Po");
  Watcher w(&client, "");
  ASSERT_TRUE(WaitFor([&] { return w.informer().stats().malformed.load() == 1; }));
  server_->Add("pods", "risk", PodObject("p"));
  ASSERT_TRUE(w.WaitForCount(1));
  EXPECT_EQ(w.log()[0], "ADDED p Pending");
  EXPECT_EQ(w.informer().stats().lists.load(), 1);
}

TEST_F(DoubleTest, AFirstListThatFailsIsReturned) {
  k8s::ApiClient client(ClientConnection(*server_), {1});
  server_->InjectFault({"GET", kPods, 403, "Forbidden", "", 1});
  std::atomic<bool> stop{false};
  Informer informer(&client, kPods, "", nullptr);
  Status st = informer.Run(&stop);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.code(), codes::kForbidden);
}

}  // namespace
}  // namespace rsl::k8stest
