// `seedctl run` with a postProcess webhook, end to end: real seedctl processes, real step
// processes writing their metrics, a real HTTP receiver in this test. The second version's
// accuracy dropped by more than 5 %: it alerts (after a 503), the first and third do not.
#include <gtest/gtest.h>
#include <httplib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>
#include <filesystem>
#include <mutex>
#include <thread>

#include "base/file.h"
#include "base/strings.h"

namespace rsl {
namespace {

struct CmdOut {
  int exit_code = -1;
  std::string output;  // stdout + stderr
};

CmdOut Seedctl(const std::string& args) {
  std::string cmd = std::string(RSL_BINARY_DIR) + "/bin/seedctl " + args + " 2>&1";
  CmdOut r;
  FILE* p = popen(cmd.c_str(), "r");
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof(buf), p)) > 0) r.output.append(buf, n);
  int status = pclose(p);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : -1;
  return r;
}

TEST(SeedctlPostProcessTest, AlertsOnADropAfterARetryAndNotOtherwise) {
  std::string dir = ::testing::TempDir() + "seedctl_post_process_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);

  httplib::Server server;
  std::mutex mu;
  std::vector<std::string> bodies;
  int answered = 0;
  server.Post("/alert", [&](const httplib::Request& req, httplib::Response& res) {
    std::lock_guard<std::mutex> lock(mu);
    bodies.push_back(req.body);
    res.status = answered++ == 0 ? 503 : 200;  // the first try of the alert is refused
  });
  int port = server.bind_to_any_port("127.0.0.1");
  ASSERT_GT(port, 0);
  std::thread server_thread([&] { server.listen_after_bind(); });

  auto run = [&](const std::string& acc) {
    std::string path = dir + "/wl.yaml";
    std::string yaml =
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata: {name: alert}\nspec:\n"
        "  pipeline:\n"
        "    - name: validate\n"
        "      env: {ACC: \"" +
        acc +
        "\"}\n"
        "      command: [sh, -c, 'printf \"{\\\"acc\\\": %s}\" \"$ACC\" > \"$RSL_METRICS_FILE\"']\n"
        "      postProcess:\n"
        "        - when: \"output.validate.metrics.acc < previous.output.validate.metrics.acc * "
        "0.95\"\n"
        "          webhook:\n"
        "            url: http://127.0.0.1:" +
        std::to_string(port) +
        "/alert\n"
        "            headers: {X-Team: risk}\n"
        "            body: '{\"acc\": {{ output.validate.metrics.acc }}, \"run\": \"{{ run.id "
        "}}\"}'\n";
    EXPECT_TRUE(WriteFileAtomic(path, yaml).ok());
    return Seedctl("run -f " + path + " --state-dir " + dir + "/state --no-hooks");
  };

  CmdOut first = run("0.90");
  EXPECT_EQ(first.exit_code, 0) << first.output;
  EXPECT_NE(first.output.find("PostProcessSkipped"), std::string::npos) << first.output;
  EXPECT_NE(first.output.find("no earlier SUCCEEDED run of this workload"), std::string::npos)
      << first.output;

  CmdOut second = run("0.80");
  EXPECT_EQ(second.exit_code, 0) << second.output;
  EXPECT_NE(second.output.find("PostProcessSucceeded"), std::string::npos) << second.output;
  EXPECT_NE(second.output.find("answered 200 after 2 tries"), std::string::npos) << second.output;

  CmdOut third = run("0.79");
  EXPECT_EQ(third.exit_code, 0) << third.output;
  EXPECT_EQ(third.output.find("PostProcessSucceeded"), std::string::npos) << third.output;

  server.stop();
  server_thread.join();
  std::lock_guard<std::mutex> lock(mu);
  ASSERT_EQ(bodies.size(), 2u);  // the alert of the second version, tried twice
  EXPECT_EQ(bodies[0], bodies[1]);
  EXPECT_TRUE(StartsWith(bodies[1], "{\"acc\": 0.8, \"run\": \"run-")) << bodies[1];
}

}  // namespace
}  // namespace rsl
