// The local backend running attempts in their container images, below the engine: the real
// rsl-shim, real runc and rsl-cinit, images pushed with skopeo to Debian's docker-registry on
// loopback (image/testing.h), each holding a static busybox and /etc/rsl-image-marker (which
// the host does not have). tests/image/image_run_test.cc checks the same through the
// controller and seedctl.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <unistd.h>

#include <chrono>
#include <condition_variable>
#include <mutex>
#include <optional>
#include <thread>

#include "backend/local.h"
#include "base/test_util.h"
#include "image/testing.h"

namespace rsl::backend {
namespace {

using image::testing::LocalRegistry;
using image::testing::ReadAll;

constexpr char kMarker[] = "/etc/rsl-image-marker";
// The sleeping step's command line: "sleep" NUL "4247".
const std::string kSleeper(
    "sleep\0"
    "4247",
    10);

bool Alive(pid_t pid) {
  std::string stat = ReadAll("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// Live pids whose command line holds `needle`.
std::vector<pid_t> PidsWith(const std::string& needle) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  while (d != nullptr) {
    dirent* e = readdir(d);
    if (e == nullptr) break;
    pid_t pid = atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::string cmd = ReadAll("/proc/" + std::string(e->d_name) + "/cmdline");
    if (cmd.find(needle) != std::string::npos && Alive(pid)) out.push_back(pid);
  }
  if (d != nullptr) closedir(d);
  return out;
}

class ContainerTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_EQ(access("/bin/busybox", X_OK), 0) << "busybox-static is needed (scripts/deps)";
    ASSERT_NE(access(kMarker, F_OK), 0) << "the host must not have " << kMarker;
    ASSERT_FALSE(registry_.host().empty()) << registry_.Log();
    unsetenv("RSL_CONTAINER_RUNTIME");
    setenv("RSL_CINIT", (std::string(RSL_BINARY_DIR) + "/bin/rsl-cinit").c_str(), 1);
    LocalOptions o;
    o.state_dir = dir_.Sub("state");
    o.shim_path = std::string(RSL_BINARY_DIR) + "/bin/rsl-shim";
    o.isolation = "none";
    auto b = NewLocalBackend(o);
    ASSERT_TRUE(b.ok()) << b.error().ToString();
    backend_ = std::move(*b);
    backend_->on_event = [this](const AttemptEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_ += e.message + "\n";
    };
    backend_->on_exit = [this](const AttemptExit& e) {
      std::lock_guard<std::mutex> lock(mu_);
      exits_[e.attempt_id] = e;
      cv_.notify_all();
    };
  }

  std::string Push(const std::string& tag, const std::string& marker) {
    std::string why;
    std::string digest = registry_.Push(
        "volc/run", tag, "linux/amd64",
        {"bin/busybox=@/bin/busybox", std::string(kMarker + 1) + "=" + marker}, &why);
    EXPECT_FALSE(digest.empty()) << why;
    return digest;
  }

  // Launches `script` (busybox sh) in volc/run:TAG pinned to `digest`.
  std::string Launch(const std::string& name, const std::string& digest, const std::string& script,
                     int64_t memory = 0) {
    LaunchSpec s;
    s.attempt_id = "run-1/" + name + "/1";
    s.argv = {"/bin/busybox", "sh", "-c", script};
    std::string a = dir_.Sub("runs/" + name);
    s.workdir = a + "/work";
    s.make_dirs = {a + "/out"};
    s.log_path = a + "/logs/" + name + ".log";
    s.exit_file = a + "/logs/" + name + ".exit";
    s.env = {{"PATH", "/usr/bin:/bin"},
             {"RSL_OUTPUT", a + "/out"},
             {"RSL_IMAGE", registry_.host() + "/volc/run:v1"},
             {"RSL_IMAGE_DIGEST", digest}};
    s.memory_bytes = memory;
    Status st = backend_->Launch(s);
    EXPECT_TRUE(st.ok()) << st.error().ToString();
    return s.attempt_id;
  }

  std::optional<AttemptExit> Wait(const std::string& id, int seconds = 60) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(seconds), [&] { return exits_.count(id) > 0; });
    if (!exits_.count(id)) return std::nullopt;
    return exits_[id];
  }

  std::string Log(const std::string& name) {
    return ReadAll(dir_.Sub("runs/" + name + "/logs/" + name + ".log"));
  }

  std::string RuncList() {
    std::string out;
    image::testing::RunCommand({"runc", "--root", dir_.Sub("state/runc"), "list", "-q"},
                               dir_.Sub("runc-list.out"), &out);
    return out;
  }

  LocalRegistry registry_;
  rsl::testing::TempDir dir_{"rsl-container"};
  std::unique_ptr<Backend> backend_;
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, AttemptExit> exits_;
  std::string events_;
};

TEST_F(ContainerTest, RunsTheRecordedDigestInItsImageAtTheFixedPaths) {
  std::string first = Push("v1", "first-image");
  std::string second = Push("v1", "second-image");  // the tag moved: the digest still wins
  ASSERT_NE(first, second);
  std::string id = Launch("inimage", first,
                          "echo marker=$(cat /etc/rsl-image-marker) out=$RSL_OUTPUT pwd=$(pwd); "
                          "test -e /usr/bin/runc || echo no-host; echo x > $RSL_OUTPUT/f");
  auto e = Wait(id);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kSucceeded) << e->message << Log("inimage");
  std::string log = Log("inimage");
  EXPECT_NE(log.find("marker=first-image out=/rsl/output pwd=/rsl/work"), std::string::npos) << log;
  EXPECT_NE(log.find("no-host"), std::string::npos) << log;
  EXPECT_EQ(ReadAll(dir_.Sub("runs/inimage/out/f")), "x\n");
  EXPECT_NE(events_.find("container rsl-run-1_inimage_1 (runc) from " + registry_.host() +
                         "/volc/run@" + first),
            std::string::npos)
      << events_;
  EXPECT_EQ(RuncList(), "");
}

TEST_F(ContainerTest, TheMemoryLimitHoldsAndIsReportedAsOomKilled) {
  std::string digest = Push("v1", "oom");
  std::string id = Launch("hog", digest,
                          "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo survived", 64 << 20);
  auto e = Wait(id, 120);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kOomKilled) << e->message << Log("hog");
  EXPECT_EQ(Log("hog").find("survived"), std::string::npos);
  EXPECT_EQ(RuncList(), "");
}

TEST_F(ContainerTest, AKilledSupervisorLeavesNoContainerBehind) {
  std::string digest = Push("v1", "sleeper");
  std::string id = Launch("sleeper", digest, "exec /bin/busybox sleep 4247");
  std::vector<pid_t> sleepers;
  for (int i = 0; i < 300 && sleepers.empty(); ++i) {
    sleepers = PidsWith(kSleeper);
    if (sleepers.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(sleepers.empty());
  EXPECT_EQ(RuncList(), "rsl-run-1_sleeper_1\n");
  std::vector<pid_t> shims = PidsWith(dir_.Sub("state"));
  pid_t shim = -1;
  for (pid_t p : shims) {
    if (ReadAll("/proc/" + std::to_string(p) + "/cmdline").find("rsl-shim") != std::string::npos) {
      shim = p;
    }
  }
  ASSERT_GT(shim, 0);
  ASSERT_EQ(kill(shim, SIGKILL), 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = true;
    for (pid_t p : sleepers) gone = gone && !Alive(p);
    if (!gone) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "a container process outlived its supervisor";
  auto e = Wait(id);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kNodeLost) << e->message;
  // What runc kept is removed by the next supervisor before it runs anything.
  std::string next = Launch("after", digest, "true");
  auto after = Wait(next);
  ASSERT_TRUE(after.has_value());
  EXPECT_EQ(after->kind, ExitKind::kSucceeded) << after->message << Log("after");
  EXPECT_EQ(RuncList(), "");
  EXPECT_TRUE(PidsWith(kSleeper).empty());
}

}  // namespace
}  // namespace rsl::backend
