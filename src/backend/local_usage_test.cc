// Live usage of running attempts (on_usage): the supervisor samples an attempt's cgroup, or
// /proc of its process group when it has none, about every second, and reports it before
// the exit.
#include <gtest/gtest.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>

#include "backend/local.h"

namespace rsl::backend {
namespace {

// Holds 80 MiB (written, so resident) and burns CPU until killed.
const std::vector<std::string> kHog = {"/usr/bin/python3", "-c",
                                       "x = b'a' * (80 << 20)\nwhile True: pass\n"};
constexpr int64_t kHeldBytes = 80LL << 20;

class UsageCollector {
 public:
  void Attach(Backend* b) {
    b->on_exit = [this](const AttemptExit& e) {
      std::lock_guard<std::mutex> lock(mu_);
      exited_ = true;
      exit_ = e;
      cv_.notify_all();
    };
    b->on_usage = [this](const AttemptUsage& u) {
      std::lock_guard<std::mutex> lock(mu_);
      if (exited_) usage_after_exit_ = true;
      last_ = u;
      cv_.notify_all();
    };
  }
  // The first sample that shows the hog's memory and some CPU time, while it still runs.
  std::optional<AttemptUsage> WaitForBusySample(int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] {
      return exited_ || (last_ && last_->usage.cpu_ms >= 300 &&
                         last_->usage.peak_memory_bytes >= kHeldBytes * 3 / 4);
    });
    if (exited_) return std::nullopt;
    return last_;
  }
  std::optional<AttemptUsage> last() {
    std::lock_guard<std::mutex> lock(mu_);
    return last_;
  }
  std::optional<AttemptExit> WaitExit(int64_t timeout_ms) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return exited_; });
    if (!exited_) return std::nullopt;
    return exit_;
  }
  bool usage_after_exit() {
    std::lock_guard<std::mutex> lock(mu_);
    return usage_after_exit_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::optional<AttemptUsage> last_;
  AttemptExit exit_;
  bool exited_ = false;
  bool usage_after_exit_ = false;
};

class LiveUsageTest : public ::testing::TestWithParam<bool> {
 protected:
  void SetUp() override {
    dir_ = ::testing::TempDir() + "local_usage_test_" + std::to_string(GetParam()) + "_" +
           std::to_string(getpid());
    std::filesystem::remove_all(dir_);
    std::filesystem::create_directories(dir_);
    LocalOptions o;
    o.state_dir = dir_;
    o.nvidia_smi = "";
    o.grace_ms = 500;
    // The supervisor's sampling, with steps as our own user in the test's directories (the
    // controller test StatusShowsTheUseOfARunningStep samples isolated steps).
    o.isolation = "none";
    o.shim_path = std::string(RSL_BINARY_DIR) + "/bin/rsl-shim";
    auto b = NewLocalBackend(o);
    ASSERT_TRUE(b.ok()) << b.error().ToString();
    backend_ = std::move(*b);
  }
  LaunchSpec Spec(const std::string& id) {
    LaunchSpec s;
    s.attempt_id = id;
    s.step = id;
    s.argv = kHog;
    s.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}};
    s.workdir = dir_ + "/" + id + "/work";
    s.log_path = dir_ + "/" + id + "/log";
    s.exit_file = dir_ + "/" + id + "/exit";
    return s;
  }

  std::string dir_;
  std::unique_ptr<Backend> backend_;
};

// Limited (GetParam): its cgroup where one is writable (this machine: v1 memory, CPU from
// /proc); unlimited: no cgroup, /proc of its process group.
TEST_P(LiveUsageTest, MemoryAndCpuAreReportedWhileTheStepRuns) {
  UsageCollector c;
  c.Attach(backend_.get());
  LaunchSpec spec = Spec("hog");
  if (GetParam()) spec.memory_bytes = 256LL << 20;
  ASSERT_TRUE(backend_->Launch(spec).ok());
  auto sample = c.WaitForBusySample(30'000);
  ASSERT_TRUE(sample.has_value()) << "no busy sample before the exit; last: cpu "
                                  << (c.last() ? c.last()->usage.cpu_ms : -1) << " ms, peak "
                                  << (c.last() ? c.last()->usage.peak_memory_bytes : -1);
  EXPECT_EQ(sample->attempt_id, "hog");
  EXPECT_GE(sample->usage.wall_ms, 1000);  // the first sample comes after a second
  EXPECT_LE(sample->usage.cpu_ms, sample->usage.wall_ms * 2 + 1000);  // at most 2 cores here
  if (GetParam() && DetectLimitMechanism() != "rlimit") {
    EXPECT_LE(sample->usage.peak_memory_bytes, spec.memory_bytes);
  }
  backend_->Stop("hog", 500, /*timed_out=*/false);
  auto e = c.WaitExit(20'000);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kCancelled);
  EXPECT_FALSE(c.usage_after_exit());
}

// The CPU peak is the highest rate between two samples (1 s apart): a step that burns a core
// for 3 s and then sleeps 3 s peaks well above its average whatever the machine's load (the
// share of a core it gets while busy is still about twice its average over both parts).
TEST_P(LiveUsageTest, CpuPeakOfABurstyStepIsAboveItsAverage) {
  UsageCollector c;
  c.Attach(backend_.get());
  LaunchSpec spec = Spec("burst");
  spec.argv = {"/usr/bin/python3", "-c",
               "import time\nt = time.time()\nwhile time.time() - t < 3: pass\ntime.sleep(3)\n"};
  if (GetParam()) spec.memory_bytes = 256LL << 20;
  ASSERT_TRUE(backend_->Launch(spec).ok());
  auto e = c.WaitExit(60'000);
  ASSERT_TRUE(e.has_value());
  ASSERT_EQ(e->kind, ExitKind::kSucceeded) << e->message;
  ASSERT_GT(e->usage.wall_ms, 0);
  int64_t average = e->usage.cpu_ms * 1000 / e->usage.wall_ms;
  EXPECT_GT(e->usage.peak_cpu_millicores, 0);
  EXPECT_GT(e->usage.peak_cpu_millicores * 2, average * 3)
      << "peak " << e->usage.peak_cpu_millicores << "m, average " << average << "m";
  EXPECT_LE(e->usage.peak_cpu_millicores, 1300);  // one thread: a core, and sampling jitter
  auto live = c.last();                           // the live samples carry the peak so far
  ASSERT_TRUE(live.has_value());
  EXPECT_GT(live->usage.peak_cpu_millicores, 0);
}

INSTANTIATE_TEST_SUITE_P(LimitedAndNot, LiveUsageTest, ::testing::Bool(),
                         [](const auto& info) { return info.param ? "Limited" : "Unlimited"; });

// A step shorter than the sampling interval is never sampled: nothing is sent for it.
TEST(LiveUsageShortStepTest, AShortStepSendsNoSample) {
  std::string dir = ::testing::TempDir() + "local_usage_short_" + std::to_string(getpid());
  std::filesystem::remove_all(dir);
  std::filesystem::create_directories(dir);
  LocalOptions o;
  o.state_dir = dir;
  o.nvidia_smi = "";
  o.shim_path = std::string(RSL_BINARY_DIR) + "/bin/rsl-shim";
  auto b = NewLocalBackend(o);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  UsageCollector c;
  c.Attach(b->get());
  LaunchSpec s;
  s.attempt_id = "quick";
  s.argv = {"true"};
  s.workdir = dir + "/quick/work";
  s.exit_file = dir + "/quick/exit";
  ASSERT_TRUE((*b)->Launch(s).ok());
  ASSERT_TRUE(c.WaitExit(20'000).has_value());
  EXPECT_FALSE(c.last().has_value());
}

}  // namespace
}  // namespace rsl::backend
