// postProcess webhooks on a real rsl-controller (label `api`): the secret header reaches the
// receiver and no output, file or log; a hook whose receiver was away when the controller
// was killed is sent by the restarted controller (at least once).
#include <gtest/gtest.h>
#include <httplib.h>

#include <atomic>
#include <chrono>
#include <functional>
#include <mutex>
#include <thread>

#include "harness.h"

namespace rsl::apitest {
namespace {

const char kSecret[] = "hook-t0ken-Value-77";

// A receiver on a free port: refuses with 503 until `accept` is set.
class Receiver {
 public:
  Receiver() {
    server_.Post("/alert", [this](const httplib::Request& req, httplib::Response& res) {
      std::lock_guard<std::mutex> lock(mu_);
      tokens_.push_back(req.get_header_value("X-Token"));
      bodies_.push_back(req.body);
      res.status = accept ? 200 : 503;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
  }
  ~Receiver() {
    server_.stop();
    thread_.join();
  }
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_) + "/alert"; }
  size_t count() {
    std::lock_guard<std::mutex> lock(mu_);
    return bodies_.size();
  }
  std::vector<std::string> tokens() {
    std::lock_guard<std::mutex> lock(mu_);
    return tokens_;
  }
  std::atomic<bool> accept{true};

 private:
  httplib::Server server_;
  int port_ = 0;
  std::thread thread_;
  std::mutex mu_;
  std::vector<std::string> tokens_, bodies_;
};

bool WaitFor(const std::function<bool()>& ready, int timeout_ms) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return ready();
}

std::string HookYaml(const std::string& url, int retries) {
  return "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\n"
         "metadata: {name: hooked, namespace: risk}\nspec:\n  pipeline:\n"
         "    - name: validate\n"
         "      command: [sh, -c, 'echo {\\\"acc\\\": 0.8} > $RSL_METRICS_FILE']\n"
         "      postProcess:\n"
         "        - webhook:\n"
         "            url: " +
         url +
         "\n"
         "            headers: {X-Token: {secretRef: alert-creds, key: token}}\n"
         "            body: '{\"acc\": {{ output.validate.metrics.acc }}, \"run\": \"{{ run.id "
         "}}\"}'\n"
         "            retries: " +
         std::to_string(retries) + "\n            timeout: 5s\n";
}

class PostProcessControllerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_TRUE(c_.Start()) << c_.Log();
    editor_ = c_.CreateToken("risk", "editor", "eddie");
    CmdResult created = c_.Seedctl(editor_, {"secret", "create", "alert-creds", "--from-literal",
                                             std::string("token=") + kSecret});
    ASSERT_EQ(created.exit_code, 0) << created.err;
  }
  std::string Submit(const std::string& yaml) {
    WriteText(c_.work_dir() + "/hook.yaml", yaml);
    CmdResult r = c_.Seedctl(editor_, {"workload", "submit", "-f", "hook.yaml"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return IdFromSubmit(r.out);
  }
  std::string Events(const std::string& id) {
    return c_.Seedctl(editor_, {"workload", "events", "--id", id}).out;
  }
  Controller c_;
  std::string editor_;
};

TEST_F(PostProcessControllerTest, TheSecretHeaderReachesTheReceiverAndNothingElse) {
  Receiver rx;
  std::string id = Submit(HookYaml(rx.url(), 3));
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(editor_, id), "SUCCEEDED") << c_.Log();
  ASSERT_TRUE(
      WaitFor([&] { return Events(id).find("PostProcessSucceeded") != std::string::npos; }, 30'000))
      << Events(id);
  ASSERT_EQ(rx.tokens().size(), 1u);
  EXPECT_EQ(rx.tokens()[0], kSecret);
  std::vector<CmdResult> outputs = {
      c_.Seedctl(editor_, {"workload", "describe", "--id", id}),
      c_.Seedctl(editor_, {"workload", "describe", "--id", id, "-o", "json"}),
      c_.Seedctl(editor_, {"workload", "events", "--id", id, "-o", "json"}),
      c_.Seedctl(editor_, {"workload", "logs", "--id", id}),
  };
  EXPECT_NE(outputs[1].out.find("alert-creds"), std::string::npos) << outputs[1].out;
  for (const auto& r : outputs) {
    EXPECT_EQ(r.exit_code, 0) << r.err;
    EXPECT_EQ(r.out.find(kSecret), std::string::npos) << r.out;
    EXPECT_EQ(r.err.find(kSecret), std::string::npos) << r.err;
  }
  for (const auto& f : FilesUnder(c_.state_dir())) {
    if (f.find("rsl.db") != std::string::npos) continue;
    EXPECT_EQ(ReadText(f).find(kSecret), std::string::npos) << f;
  }
  EXPECT_EQ(c_.Log().find(kSecret), std::string::npos);
}

TEST_F(PostProcessControllerTest, AnUnsentHookIsSentAfterTheControllerRestarts) {
  Receiver rx;
  rx.accept = false;
  std::string id = Submit(HookYaml(rx.url(), 10));
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(editor_, id), "SUCCEEDED") << c_.Log();
  ASSERT_TRUE(WaitFor([&] { return rx.count() >= 1; }, 30'000));
  c_.Kill9();  // while the hook waits to be tried again
  size_t before = rx.count();
  rx.accept = true;
  ASSERT_TRUE(c_.Start()) << c_.Log();
  ASSERT_TRUE(
      WaitFor([&] { return Events(id).find("PostProcessSucceeded") != std::string::npos; }, 30'000))
      << Events(id) << c_.Log();
  EXPECT_GT(rx.count(), before);
  EXPECT_EQ(rx.tokens().back(), kSecret);
}

}  // namespace
}  // namespace rsl::apitest
