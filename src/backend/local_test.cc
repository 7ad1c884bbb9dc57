// The local backend with real processes: exit codes, logs (created at the first output),
// secrets masked, process groups stopped whole, memory limits (cgroups where writable, else
// rlimits), exit records (one journal per directory) that let a later backend reconcile an
// attempt it did not start, and the per-state-directory supervisor (shared, outliving its
// clients, its death reported as kNodeLost).
#include "backend/local.h"

#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <mutex>
#include <set>
#include <thread>

#include "base/file.h"
#include "base/strings.h"

namespace rsl::backend {
namespace {

class Collector {
 public:
  void Attach(Backend* b) {
    b->on_exit = [this](const AttemptExit& e) {
      std::lock_guard<std::mutex> lock(mu_);
      exits_[e.attempt_id] = e;
      cv_.notify_all();
    };
    b->on_event = [this](const AttemptEvent& e) {
      std::lock_guard<std::mutex> lock(mu_);
      events_.push_back(e);
    };
  }
  std::optional<AttemptExit> Wait(const std::string& id, int64_t timeout_ms = 20000) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::milliseconds(timeout_ms), [&] { return exits_.count(id) > 0; });
    if (!exits_.count(id)) return std::nullopt;
    return exits_[id];
  }
  std::vector<AttemptEvent> events() {
    std::lock_guard<std::mutex> lock(mu_);
    return events_;
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, AttemptExit> exits_;
  std::vector<AttemptEvent> events_;
};

std::string Dir(const std::string& name) {
  std::string d = ::testing::TempDir() + "local_test_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  return d;
}

LaunchSpec Spec(const std::string& dir, const std::string& id, std::vector<std::string> argv) {
  LaunchSpec s;
  s.attempt_id = id;
  s.step = id;
  s.argv = std::move(argv);
  s.env = {{"PATH", "/usr/local/bin:/usr/bin:/bin"}, {"RSL_STEP", id}};
  s.workdir = dir + "/" + id + "/work";
  s.log_path = dir + "/" + id + "/log";
  s.exit_file = dir + "/" + id + "/exit";
  return s;
}

// The supervisor's mechanics, with steps as our own user: they write into the test's
// directories. Isolation has tests of its own below.
std::unique_ptr<Backend> Make(const std::string& dir, const std::string& limits = "auto",
                              const std::string& isolation = "none") {
  LocalOptions o;
  o.state_dir = dir;
  o.limits = limits;
  o.isolation = isolation;
  o.nvidia_smi = "";
  o.grace_ms = 500;
  o.shim_path = std::string(RSL_BINARY_DIR) + "/bin/rsl-shim";
  auto b = NewLocalBackend(o);
  EXPECT_TRUE(b.ok()) << b.error().ToString();
  return std::move(*b);
}

// Running or sleeping; a zombie (Z) or a missing process is not alive.
bool Alive(pid_t pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return false;
  size_t p = stat->rfind(')');
  return p != std::string::npos && p + 2 < stat->size() && (*stat)[p + 2] != 'Z';
}

TEST(LocalBackendTest, ExitCodeLogAndUsage) {
  std::string dir = Dir("exit");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  auto spec = Spec(dir, "a", {"sh", "-c", "echo out-$RSL_STEP; echo err >&2; pwd; exit 3"});
  ASSERT_TRUE(b->Launch(spec).ok());
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kFailed);
  EXPECT_EQ(e->exit_code, 3);
  EXPECT_EQ(e->message, "exit code 3");
  EXPECT_GE(e->usage.wall_ms, 0);
  EXPECT_GT(e->usage.peak_memory_bytes, 0);
  EXPECT_EQ(*ReadFile(spec.log_path), "out-a\nerr\n" + spec.workdir + "\n");

  auto ok = Spec(dir, "b", {"true"});
  ASSERT_TRUE(b->Launch(ok).ok());
  EXPECT_EQ(c.Wait("b")->kind, ExitKind::kSucceeded);

  auto missing = Spec(dir, "c", {"no-such-command-rsl"});
  ASSERT_TRUE(b->Launch(missing).ok());
  auto m = c.Wait("c");
  EXPECT_EQ(m->exit_code, 127);
  EXPECT_NE(ReadFile(missing.log_path)->find("cannot run no-such-command-rsl"), std::string::npos);
}

TEST(LocalBackendTest, SecretsAreMaskedInTheLog) {
  std::string dir = Dir("mask");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  auto spec = Spec(dir, "a", {"sh", "-c", "echo token=$TOKEN; printf 'tail %s' \"$TOKEN\""});
  spec.env["TOKEN"] = "hunter2-secret";
  spec.secret_values = {"hunter2-secret"};
  ASSERT_TRUE(b->Launch(spec).ok());
  ASSERT_TRUE(c.Wait("a").has_value());
  EXPECT_EQ(*ReadFile(spec.log_path), "token=***\ntail ***");
}

TEST(LocalBackendTest, TimeoutStopsTheWholeProcessGroup) {
  std::string dir = Dir("group");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  // Two background children that ignore SIGTERM, and a parent waiting on them.
  auto spec = Spec(dir, "a",
                   {"sh", "-c",
                    "trap '' TERM; sleep 300 & echo $! > pids; sleep 300 & "
                    "echo $! >> pids; wait"});
  ASSERT_TRUE(b->Launch(spec).ok());
  std::string pids_file = spec.workdir + "/pids";
  for (int i = 0;
       i < 200 && Split(ReadFile(pids_file).ok() ? *ReadFile(pids_file) : "", '\n').size() < 3;
       ++i) {
    usleep(10000);
  }
  auto lines = Split(*ReadFile(pids_file), '\n');
  ASSERT_GE(lines.size(), 2u);
  pid_t p1 = atoi(lines[0].c_str()), p2 = atoi(lines[1].c_str());
  ASSERT_TRUE(Alive(p1));
  b->Stop("a", 500, /*timed_out=*/true);
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kTimedOut);
  // SIGKILL after the grace period reached every member. A killed process still shows as
  // running until the kernel schedules its exit, which on a loaded machine can come after
  // the report; so allow it a moment, far below the 300 s it would otherwise live.
  for (int i = 0; i < 200 && (Alive(p1) || Alive(p2)); ++i) usleep(10000);
  EXPECT_FALSE(Alive(p1));
  EXPECT_FALSE(Alive(p2));
}

TEST(LocalBackendTest, MemoryLimitIsEnforced) {
  std::string dir = Dir("oom");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  auto spec =
      Spec(dir, "a",
           {"/usr/bin/python3", "-c",
            "x = bytearray(400 * 1024 * 1024)\nfor i in range(0, len(x), 4096): x[i] = 1\n"});
  spec.memory_bytes = 64LL << 20;
  ASSERT_TRUE(b->Launch(spec).ok());
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  std::string mechanism = DetectLimitMechanism();
  auto events = c.events();
  ASSERT_FALSE(events.empty());
  EXPECT_EQ(events[0].reason, spec::EventReason::kLimitsApplied);
  EXPECT_EQ(events[0].message, "limits via " + mechanism);
  if (mechanism == "rlimit") {
    EXPECT_EQ(e->kind, ExitKind::kFailed);  // MemoryError: the allocation is refused
  } else {
    EXPECT_EQ(e->kind, ExitKind::kOomKilled) << e->message;
    EXPECT_NE(e->message.find("memory limit exceeded"), std::string::npos);
    EXPECT_LE(e->usage.peak_memory_bytes, (64LL << 20) + (1 << 20));
  }
}

TEST(LocalBackendTest, AnotherBackendReconcilesFromTheExitFileOrAdoptsTheLiveAttempt) {
  std::string dir = Dir("adopt");
  auto spec_done = Spec(dir, "done", {"sh", "-c", "exit 4"});
  auto spec_live = Spec(dir, "live", {"sh", "-c", "sleep 0.5; exit 0"});
  {
    auto first = Make(dir);
    Collector c;
    c.Attach(first.get());
    ASSERT_TRUE(first->Launch(spec_done).ok());
    ASSERT_TRUE(c.Wait("done").has_value());
    ASSERT_TRUE(first->Launch(spec_live).ok());
    first->on_exit = nullptr;
  }  // the first backend is gone; the supervisor keeps running "live"
  auto second = Make(dir);
  Collector c;
  c.Attach(second.get());
  second->Adopt(spec_done);
  second->Adopt(spec_live);
  auto lost = Spec(dir, "never-started", {"true"});
  second->Adopt(lost);
  auto d = c.Wait("done");
  ASSERT_TRUE(d.has_value());
  EXPECT_EQ(d->exit_code, 4);
  auto l = c.Wait("live");
  ASSERT_TRUE(l.has_value());
  EXPECT_EQ(l->kind, ExitKind::kSucceeded);
  auto n = c.Wait("never-started");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->kind, ExitKind::kNodeLost);
}

// The step's parent: the state directory's supervisor.
pid_t ParentOf(pid_t pid) {
  auto stat = ReadFile("/proc/" + std::to_string(pid) + "/stat");
  if (!stat.ok()) return -1;
  size_t p = stat->rfind(')');
  return p == std::string::npos ? -1 : atoi(stat->c_str() + p + 4);
}

// Waits for a file the step writes; its content, or "" after the timeout.
std::string WaitForFile(const std::string& path) {
  for (int i = 0; i < 1000; ++i) {
    auto text = ReadFile(path);
    if (text.ok() && !text->empty() && text->back() == '\n') return *text;
    usleep(10000);
  }
  return "";
}

TEST(LocalBackendTest, TheSupervisorOutlivesItsClientAndReportsToTheAdopter) {
  std::string dir = Dir("survive");
  auto spec = Spec(dir, "a", {"sh", "-c", "sleep 0.5; echo done > marker; exit 5"});
  {
    auto first = Make(dir);
    Collector c;
    c.Attach(first.get());
    ASSERT_TRUE(first->Launch(spec).ok());
    first->on_exit = nullptr;
  }  // destroyed mid-step: the step keeps running under the supervisor
  auto second = Make(dir);
  Collector c;
  c.Attach(second.get());
  second->Adopt(spec);
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kFailed);
  EXPECT_EQ(e->exit_code, 5);
  EXPECT_EQ(*ReadFile(spec.workdir + "/marker"), "done\n");
}

TEST(LocalBackendTest, ASupervisorFoundDeadAtAdoptionLeavesNothingRunning) {
  std::string dir = Dir("deadadopt");
  auto spec =
      Spec(dir, "a", {"sh", "-c", "sleep 300 & echo $! > bg; echo $$ > pid; exec sleep 300"});
  {
    auto first = Make(dir);
    Collector c;
    c.Attach(first.get());
    ASSERT_TRUE(first->Launch(spec).ok());
    first->on_exit = nullptr;
  }  // no backend connected from here on
  pid_t step = atoi(WaitForFile(spec.workdir + "/pid").c_str());
  pid_t bg = atoi(WaitForFile(spec.workdir + "/bg").c_str());
  ASSERT_GT(step, 0);
  ASSERT_GT(bg, 0);
  pid_t supervisor = ParentOf(step);
  ASSERT_GT(supervisor, 1);
  ASSERT_NE(supervisor, getpid());
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  for (int i = 0; i < 200 && Alive(step); ++i) usleep(10000);
  ASSERT_FALSE(Alive(step));  // PR_SET_PDEATHSIG
  ASSERT_TRUE(Alive(bg));     // ... which does not reach the background child
  auto second = Make(dir);
  Collector c;
  c.Attach(second.get());
  second->Adopt(spec);  // a new supervisor knows nothing of it: lost, and its leftovers killed
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kNodeLost);
  for (int i = 0; i < 200 && Alive(bg); ++i) usleep(10000);
  EXPECT_FALSE(Alive(bg));
}

TEST(LocalBackendTest, TwoBackendsOnOneStateDirectoryShareTheSupervisor) {
  std::string dir = Dir("share");
  auto b1 = Make(dir);
  auto b2 = Make(dir);
  Collector c1, c2;
  c1.Attach(b1.get());
  c2.Attach(b2.get());
  auto s1 = Spec(dir, "one", {"sh", "-c", "echo $PPID > ppid"});
  auto s2 = Spec(dir, "two", {"sh", "-c", "echo $PPID > ppid"});
  ASSERT_TRUE(b1->Launch(s1).ok());
  ASSERT_TRUE(b2->Launch(s2).ok());
  ASSERT_TRUE(c1.Wait("one").has_value());
  ASSERT_TRUE(c2.Wait("two").has_value());
  EXPECT_FALSE(c1.Wait("two", 100).has_value());  // each exit goes to its launcher only
  std::string p1 = *ReadFile(s1.workdir + "/ppid"), p2 = *ReadFile(s2.workdir + "/ppid");
  EXPECT_EQ(p1, p2);
  EXPECT_NE(atoi(p1.c_str()), getpid());
}

TEST(LocalBackendTest, BackendsStartingTogetherEndUpWithOneSupervisor) {
  std::string dir = Dir("race");
  constexpr int kBackends = 6;
  std::vector<std::unique_ptr<Backend>> backends(kBackends);
  std::vector<Collector> collectors(kBackends);
  std::vector<LaunchSpec> specs;
  for (int i = 0; i < kBackends; ++i) {
    specs.push_back(Spec(dir, "s" + std::to_string(i), {"sh", "-c", "echo $PPID > ppid"}));
  }
  std::vector<std::thread> threads;
  for (int i = 0; i < kBackends; ++i) {
    threads.emplace_back([&, i] {
      backends[i] = Make(dir);
      collectors[i].Attach(backends[i].get());
      EXPECT_TRUE(backends[i]->Launch(specs[i]).ok());
    });
  }
  for (auto& t : threads) t.join();
  std::set<std::string> parents;
  for (int i = 0; i < kBackends; ++i) {
    auto e = collectors[i].Wait(specs[i].attempt_id);
    ASSERT_TRUE(e.has_value());
    EXPECT_EQ(e->kind, ExitKind::kSucceeded) << e->message;
    parents.insert(*ReadFile(specs[i].workdir + "/ppid"));
  }
  EXPECT_EQ(parents.size(), 1u);
}

TEST(LocalBackendTest, AKilledSupervisorTakesItsStepsAlongAndIsReportedAsNodeLost) {
  std::string dir = Dir("killed");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  // A background child too, which PR_SET_PDEATHSIG does not reach.
  auto spec =
      Spec(dir, "a", {"sh", "-c", "sleep 300 & echo $! > bg; echo $$ > pid; exec sleep 300"});
  spec.env["RSL_SUPERVISED_ATTEMPT"] = "spoofed";  // the backend's own marker wins
  ASSERT_TRUE(b->Launch(spec).ok());
  pid_t step = atoi(WaitForFile(spec.workdir + "/pid").c_str());
  ASSERT_GT(step, 0);
  pid_t bg = atoi(WaitForFile(spec.workdir + "/bg").c_str());
  ASSERT_GT(bg, 0);
  ASSERT_TRUE(Alive(bg));
  // Read while `sleep` may still be between fork and exec: an execve in progress shows an
  // empty environ, so read until the marker's name is there (or 10 s have gone).
  const std::string proc_environ = "/proc/" + std::to_string(bg) + "/environ";
  auto environ_of_bg = ReadFile(proc_environ);
  for (int i = 0; i < 200 && environ_of_bg.ok() &&
                  environ_of_bg->find("RSL_SUPERVISED_ATTEMPT=") == std::string::npos;
       ++i) {
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    environ_of_bg = ReadFile(proc_environ);
  }
  ASSERT_TRUE(environ_of_bg.ok());
  // <supervisor socket>/<attempt id>: another state directory's attempt "a" is not ours.
  size_t marker = environ_of_bg->find("RSL_SUPERVISED_ATTEMPT=rsl-supervisor-");
  ASSERT_NE(marker, std::string::npos);
  EXPECT_EQ(environ_of_bg->substr(environ_of_bg->find('\0', marker) - spec.attempt_id.size() - 1,
                                  spec.attempt_id.size() + 2),
            "/" + spec.attempt_id + '\0');
  EXPECT_EQ(environ_of_bg->find("spoofed"), std::string::npos);
  // The same attempt id under another state directory (its own supervisor): not touched.
  std::string other_dir = Dir("killed-other");
  auto other = Make(other_dir);
  Collector other_c;
  other_c.Attach(other.get());
  auto other_spec = Spec(other_dir, "a", {"sh", "-c", "echo $$ > pid; exec sleep 300"});
  ASSERT_EQ(other_spec.attempt_id, spec.attempt_id);
  ASSERT_TRUE(other->Launch(other_spec).ok());
  pid_t other_step = atoi(WaitForFile(other_spec.workdir + "/pid").c_str());
  ASSERT_GT(other_step, 0);
  pid_t supervisor = ParentOf(step);
  ASSERT_GT(supervisor, 1);
  ASSERT_NE(supervisor, getpid());
  ASSERT_NE(supervisor, ParentOf(other_step));
  ASSERT_EQ(kill(supervisor, SIGKILL), 0);
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kNodeLost);
  EXPECT_EQ(e->message, "the attempt's supervisor is gone and left no exit record");
  for (int i = 0; i < 200 && (Alive(step) || Alive(bg)); ++i) usleep(10000);
  EXPECT_FALSE(Alive(step));  // PR_SET_PDEATHSIG: nothing runs unsupervised
  EXPECT_FALSE(Alive(bg));    // found by its RSL_SUPERVISED_ATTEMPT, killed when reported lost
  EXPECT_TRUE(Alive(other_step));
  other->Stop(other_spec.attempt_id, 500, /*timed_out=*/false);
  auto other_e = other_c.Wait("a");
  ASSERT_TRUE(other_e.has_value());
  EXPECT_EQ(other_e->kind, ExitKind::kCancelled);
  // The next launch starts a new supervisor.
  auto next = Spec(dir, "b", {"true"});
  ASSERT_TRUE(b->Launch(next).ok());
  auto n = c.Wait("b");
  ASSERT_TRUE(n.has_value());
  EXPECT_EQ(n->kind, ExitKind::kSucceeded);
}

TEST(LocalBackendTest, ExecFailureIsExitCode127AndDirectoriesAreMade) {
  std::string dir = Dir("exec");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  auto spec = Spec(dir, "a", {"/nonexistent/rsl-step"});
  spec.make_dirs = {dir + "/staging/a/out", dir + "/staging/b"};
  spec.log_path = dir + "/logs/deep/a.log";
  spec.exit_file = dir + "/exits/deep/a.exit";
  ASSERT_TRUE(b->Launch(spec).ok());
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kFailed);
  EXPECT_EQ(e->exit_code, 127);
  EXPECT_EQ(e->message, "exit code 127");
  EXPECT_EQ(*ReadFile(spec.log_path),
            "rsl-shim: cannot run /nonexistent/rsl-step: No such file or directory\n");
  // The working directory was made (left empty, it stays a spare for the next attempt).
  EXPECT_TRUE(std::filesystem::is_directory(spec.workdir));
  EXPECT_TRUE(std::filesystem::is_empty(spec.workdir));
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/staging/a/out"));
  EXPECT_TRUE(std::filesystem::is_directory(dir + "/staging/b"));
  EXPECT_EQ(ReadExitFile(spec.exit_file, "a")->exit_code, 127);
}

TEST(LocalBackendTest, AnExitRecordCutShortIsGarbled) {
  std::string dir = Dir("torn");
  ASSERT_TRUE(WriteFileAtomic(dir + "/exit", "exit_code=0\nsignal=0\nwall_ms=3\n").ok());
  auto e = ReadExitFile(dir + "/exit", "a");
  ASSERT_FALSE(e.ok());
  EXPECT_EQ(e.error().code, "INTERNAL");
  ASSERT_TRUE(WriteFileAtomic(dir + "/exit", "exit_code=0\nsignal=0\nwall_ms=3\nend=1\n").ok());
  EXPECT_EQ(ReadExitFile(dir + "/exit", "a")->kind, ExitKind::kSucceeded);
}

// The log is created at the first byte of output: a silent step leaves no file at all,
// only its directories (its exit record goes to the directory's journal).
TEST(LocalBackendTest, ASilentStepCreatesNoFile) {
  std::string dir = Dir("silent");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  auto spec = Spec(dir, "a", {"true"});
  spec.make_dirs = {dir + "/a/staging"};
  ASSERT_TRUE(b->Launch(spec).ok());
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kSucceeded);
  EXPECT_FALSE(PathExists(spec.log_path));
  EXPECT_FALSE(PathExists(spec.exit_file));
  std::set<std::string> names;
  for (const auto& f : std::filesystem::directory_iterator(dir + "/a")) {
    names.insert(f.path().filename().string());
  }
  // Only directories: the working directory (empty, a spare for the next attempt), the
  // staging directory and the exit journal's directory.
  ASSERT_EQ(names.size(), 3u);
  EXPECT_TRUE(names.count("exits") && names.count("staging")) << *names.begin();
  EXPECT_TRUE(std::filesystem::is_empty(spec.workdir));
  EXPECT_EQ(ReadExitFile(spec.exit_file, "a")->kind, ExitKind::kSucceeded);

  // Output without a final newline is not held back; stdout and stderr share the log.
  auto some = Spec(dir, "b", {"sh", "-c", "printf out; printf err >&2"});
  ASSERT_TRUE(b->Launch(some).ok());
  ASSERT_TRUE(c.Wait("b").has_value());
  EXPECT_EQ(*ReadFile(some.log_path), "outerr");

  // A secret step that prints nothing has no log either.
  auto quiet = Spec(dir, "c", {"true"});
  quiet.secret_values = {"hunter2-secret"};
  ASSERT_TRUE(b->Launch(quiet).ok());
  ASSERT_TRUE(c.Wait("c").has_value());
  EXPECT_FALSE(PathExists(quiet.log_path));
}

// The exit says whether the step left its working directory empty: the engine then does not
// look for the metrics and progress files that would be in it. A step that wrote a file
// there is reported as not empty, whatever its exit code.
TEST(LocalBackendTest, TheExitSaysWhetherTheWorkingDirectoryWasLeftEmpty) {
  std::string dir = Dir("workdir-empty");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  auto silent = Spec(dir, "a", {"true"});
  ASSERT_TRUE(b->Launch(silent).ok());
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_TRUE(e->workdir_empty);
  auto writes = Spec(dir, "b", {"sh", "-c", "echo '{\"loss\": 1}' > .rsl-metrics.json"});
  ASSERT_TRUE(b->Launch(writes).ok());
  e = c.Wait("b");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kSucceeded);
  EXPECT_FALSE(e->workdir_empty);
  EXPECT_TRUE(PathExists(writes.workdir + "/.rsl-metrics.json"));
  // A failed one too: its exit code does not matter.
  auto fails = Spec(dir, "c", {"sh", "-c", "touch x; exit 3"});
  ASSERT_TRUE(b->Launch(fails).ok());
  e = c.Wait("c");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->exit_code, 3);
  EXPECT_FALSE(e->workdir_empty);
}

// Directory creation is the costly part of a launch on ext4 without a journal (every recently
// deleted inode is skipped one by one), so a working directory its step left empty becomes
// the next attempt's directory by rename: the same inode, empty, under the new name. One
// with files in it stays where it is.
TEST(LocalBackendTest, EmptyWorkingDirectoriesAreReusedByTheNextAttempt) {
  std::string dir = Dir("reuse");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  auto spec = [&](const std::string& id, std::vector<std::string> argv) {
    LaunchSpec s = Spec(dir, id, std::move(argv));
    s.workdir = dir + "/run/work/" + id;
    s.make_dirs = {dir + "/run/staging/" + id};
    s.log_path = dir + "/run/attempts/" + id + ".log";
    s.exit_file = dir + "/run/attempts/" + id + ".exit";
    return s;
  };
  auto first = spec("s.1", {"true"});
  ASSERT_TRUE(b->Launch(first).ok());
  ASSERT_TRUE(c.Wait("s.1").has_value());
  // Left empty, it stays where it is, a spare.
  struct stat st {};
  ASSERT_EQ(stat(first.workdir.c_str(), &st), 0);

  // The next attempt runs in that inode, empty, under its own name (one rename: the first
  // one's directory is gone), and has its staging directory too.
  auto second = spec("s.2", {});
  second.argv = {"sh", "-c", "ls -A; stat -c %i .; pwd; test -d " + second.make_dirs[0]};
  ASSERT_TRUE(b->Launch(second).ok());
  auto e = c.Wait("s.2");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kSucceeded) << *ReadFile(second.log_path);
  EXPECT_EQ(*ReadFile(second.log_path), std::to_string(st.st_ino) + "\n" + second.workdir + "\n");
  EXPECT_FALSE(PathExists(first.workdir));

  // A step that leaves a file keeps its working directory.
  auto third = spec("s.3", {"sh", "-c", "echo x > scratch"});
  ASSERT_TRUE(b->Launch(third).ok());
  ASSERT_TRUE(c.Wait("s.3").has_value());
  EXPECT_EQ(*ReadFile(third.workdir + "/scratch"), "x\n");

  // A launch whose working directory is itself a spare keeps it, and no later launch takes
  // it away while it runs.
  auto four = spec("s.4", {"true"});
  auto five = spec("s.5", {"sleep", "0.2"});
  ASSERT_TRUE(b->Launch(four).ok());
  ASSERT_TRUE(b->Launch(five).ok());
  ASSERT_TRUE(c.Wait("s.4").has_value());
  ASSERT_TRUE(c.Wait("s.5").has_value());  // spares now: s.4's, then s.5's directory
  auto again = spec("s.4-again", {"sh", "-c", "sleep 0.3; echo y > mine"});
  again.workdir = four.workdir;
  auto six = spec("s.6", {"true"});
  ASSERT_TRUE(b->Launch(again).ok());
  ASSERT_TRUE(b->Launch(six).ok());
  ASSERT_TRUE(c.Wait("s.4-again").has_value());
  ASSERT_TRUE(c.Wait("s.6").has_value());
  auto mine = ReadFile(four.workdir + "/mine");
  ASSERT_TRUE(mine.ok()) << "the running attempt's directory was taken";
  EXPECT_EQ(*mine, "y\n");
  EXPECT_FALSE(PathExists(six.workdir + "/mine"));
  EXPECT_FALSE(PathExists(five.workdir));  // s.6 took s.5's

  // A spare removed behind the supervisor's back is dropped: the next attempt gets a new one.
  ASSERT_EQ(rmdir(six.workdir.c_str()), 0);
  auto seven = spec("s.7", {"sh", "-c", "pwd"});
  ASSERT_TRUE(b->Launch(seven).ok());
  auto e7 = c.Wait("s.7");
  ASSERT_TRUE(e7.has_value());
  EXPECT_EQ(e7->kind, ExitKind::kSucceeded);
  EXPECT_EQ(*ReadFile(seven.log_path), seven.workdir + "\n");
}

// argv and environment reach the step byte for byte through the supervisor's JSON protocol:
// quotes, backslashes, control characters and UTF-8; a byte that is not UTF-8 becomes U+FFFD.
TEST(LocalBackendTest, TheCommandIsFoundInTheStepsPathLikeExecvp) {
  // The supervisor looks the command up itself (no failed execve per PATH entry); what it
  // finds must be what execvp would run.
  std::string dir = Dir("path");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  auto script = [](const std::string& path, const std::string& text, int mode) {
    std::filesystem::create_directories(std::filesystem::path(path).parent_path());
    ASSERT_TRUE(WriteFileAtomic(path, text).ok());
    ASSERT_EQ(chmod(path.c_str(), mode_t(mode)), 0);
  };
  script(dir + "/bin1/rsl-prog", "#!/bin/sh\necho not-executable\n", 0644);
  std::filesystem::create_directories(dir + "/bin2/rsl-prog");  // a directory: passed over
  script(dir + "/bin3/rsl-prog", "#!/bin/sh\necho found \"$0\" \"$1\"\n", 0755);
  script(dir + "/bin4/rsl-prog", "#!/bin/sh\necho too-late\n", 0755);
  script(dir + "/bin4/rsl-plain", "echo no-shebang-runs-with-sh\n", 0755);  // ENOEXEC
  auto found = Spec(dir, "a", {"rsl-prog", "x y"});
  found.env["PATH"] = dir + "/bin1:" + dir + "/bin2:" + dir + "/bin3:" + dir + "/bin4";
  ASSERT_TRUE(b->Launch(found).ok());
  EXPECT_EQ(c.Wait("a")->exit_code, 0);
  EXPECT_EQ(*ReadFile(found.log_path), "found " + dir + "/bin3/rsl-prog x y\n");

  auto plain = Spec(dir, "b", {"rsl-plain"});
  plain.env["PATH"] = dir + "/bin4";
  ASSERT_TRUE(b->Launch(plain).ok());
  EXPECT_EQ(c.Wait("b")->exit_code, 0);
  EXPECT_EQ(*ReadFile(plain.log_path), "no-shebang-runs-with-sh\n");

  // A relative entry (and an empty one) is relative to the step's working directory.
  auto rel = Spec(dir, "c", {"rsl-rel"});
  script(rel.workdir + "/tools/rsl-rel", "#!/bin/sh\necho relative \"$0\"\n", 0755);
  rel.env["PATH"] = "/nonexistent::tools";
  ASSERT_TRUE(b->Launch(rel).ok());
  EXPECT_EQ(c.Wait("c")->exit_code, 0);
  EXPECT_EQ(*ReadFile(rel.log_path), "relative tools/rsl-rel\n");  // as execvp passes it

  auto missing = Spec(dir, "d", {"rsl-prog"});
  missing.env["PATH"] = dir + "/bin1:" + dir + "/bin2";  // only a non-executable file
  ASSERT_TRUE(b->Launch(missing).ok());
  EXPECT_EQ(c.Wait("d")->exit_code, 127);
  EXPECT_EQ(*ReadFile(missing.log_path), "rsl-shim: cannot run rsl-prog: Permission denied\n");
}

TEST(LocalBackendTest, ArgvAndEnvironmentArriveIntact) {
  std::string dir = Dir("argv");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  std::string tricky = "a\"b\\c\nd\te\xC3\xA9\x01/{}[],:";
  auto spec = Spec(
      dir, "a",
      {"sh", "-c", "printf '%s|%s|%s' \"$1\" \"$X\" \"$2\"", "sh", tricky, std::string("bad\xFF")});
  spec.env["X"] = tricky + "=x";
  ASSERT_TRUE(b->Launch(spec).ok());
  auto e = c.Wait("a");
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kSucceeded);
  EXPECT_EQ(*ReadFile(spec.log_path), tricky + "|" + tricky + "=x|bad\xEF\xBF\xBD");
}

TEST(LocalBackendTest, LargeOutputIsLoggedCompletely) {
  std::string dir = Dir("large");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  // 5 MB of random bytes, some of them newlines, written in one go and read back whole.
  auto spec = Spec(dir, "a", {"sh", "-c", "head -c 5242880 /dev/urandom > data; cat data"});
  ASSERT_TRUE(b->Launch(spec).ok());
  auto e = c.Wait("a", 60000);
  ASSERT_TRUE(e.has_value());
  EXPECT_EQ(e->kind, ExitKind::kSucceeded) << e->message;
  std::string want = *ReadFile(spec.workdir + "/data");
  ASSERT_EQ(want.size(), 5242880u);
  std::string got = *ReadFile(spec.log_path);
  EXPECT_EQ(got.size(), want.size());
  EXPECT_TRUE(got == want);  // not EXPECT_EQ: 5 MB of binary in a failure message
}

// Several attempts recording in one directory: one journal, each record read back by its
// exit file's name, no exit file created.
TEST(LocalBackendTest, ExitRecordsOfOneDirectoryShareAJournal) {
  std::string dir = Dir("journal");
  auto b = Make(dir);
  Collector c;
  c.Attach(b.get());
  std::vector<LaunchSpec> specs;
  for (int i = 0; i < 4; ++i) {
    std::string id = "s." + std::to_string(i);
    auto spec = Spec(dir, id, {"sh", "-c", "exit " + std::to_string(i)});
    spec.exit_file = dir + "/attempts/" + id + ".exit";
    spec.log_path = dir + "/attempts/" + id + ".log";
    specs.push_back(spec);
  }
  // Two at once, then two more after they ended (the journal is closed and reopened).
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(b->Launch(specs[size_t(i)]).ok());
  for (int i = 0; i < 2; ++i) ASSERT_TRUE(c.Wait(specs[size_t(i)].attempt_id).has_value());
  for (int i = 2; i < 4; ++i) ASSERT_TRUE(b->Launch(specs[size_t(i)]).ok());
  for (int i = 2; i < 4; ++i) ASSERT_TRUE(c.Wait(specs[size_t(i)].attempt_id).has_value());
  for (int i = 0; i < 4; ++i) {
    const auto& s = specs[size_t(i)];
    EXPECT_FALSE(PathExists(s.exit_file));
    EXPECT_FALSE(PathExists(s.log_path));
    auto e = ReadExitFile(s.exit_file, s.attempt_id);
    ASSERT_TRUE(e.ok()) << e.error().ToString();
    EXPECT_EQ(e->exit_code, i);
    EXPECT_EQ(e->attempt_id, s.attempt_id);
  }
  std::string journal = *ReadFile(dir + "/attempts/exits");
  for (int i = 0; i < 4; ++i) {
    EXPECT_NE(journal.find("\nattempt=s." + std::to_string(i) +
                           ".exit\nexit_code=" + std::to_string(i) + "\n"),
              std::string::npos)
        << journal;
  }
  // A later backend reconciles an ended attempt from the journal.
  auto later = Make(dir);
  Collector lc;
  lc.Attach(later.get());
  later->Adopt(specs[3]);
  auto adopted = lc.Wait(specs[3].attempt_id);
  ASSERT_TRUE(adopted.has_value());
  EXPECT_EQ(adopted->exit_code, 3);
  auto missing = ReadExitFile(dir + "/attempts/s.9.exit", "s.9");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, "IO_ERROR");
  EXPECT_EQ(ReadExitFile(dir + "/nowhere/s.9.exit", "s.9").error().code, "IO_ERROR");
}

std::string JournalRecord(const std::string& key, int exit_code) {
  return "\nattempt=" + key + "\nexit_code=" + std::to_string(exit_code) +
         "\nsignal=0\nwall_ms=3\nend=1\n";
}

TEST(LocalBackendTest, ATornJournalRecordIsIgnored) {
  std::string dir = Dir("torn_journal");
  std::string journal = JournalRecord("a.1.exit", 1);
  // A retry's record torn by a crash: the complete one before it counts.
  journal += "\nattempt=a.1.exit\nexit_code=5\nsignal=0\nwall";
  // A record torn after its key line only; then zeros, as a power loss may leave.
  journal += "\nattempt=b.1.exit\nexit_code=0\nsig";
  journal += std::string(100, '\0');
  // Records written after the torn ones are read.
  journal += JournalRecord("c.1.exit", 7) + JournalRecord("d.1.exit", 0);
  // The last complete record of a key counts; a torn last record is ignored.
  journal += JournalRecord("d.1.exit", 2) + "\nattempt=d.1.exit\nexit_code=9\nsignal=0\nen";
  ASSERT_TRUE(WriteFileAtomic(dir + "/exits", journal).ok());
  EXPECT_EQ(ReadExitFile(dir + "/a.1.exit", "a")->exit_code, 1);
  auto b = ReadExitFile(dir + "/b.1.exit", "b");
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, "INTERNAL");
  EXPECT_EQ(ReadExitFile(dir + "/c.1.exit", "c")->exit_code, 7);
  EXPECT_EQ(ReadExitFile(dir + "/d.1.exit", "d")->exit_code, 2);
  // A key that merely starts like another is another key.
  EXPECT_FALSE(ReadExitFile(dir + "/c.1", "c").ok());
  EXPECT_FALSE(ReadExitFile(dir + "/c.1.exit.x", "c").ok());
}

TEST(LocalBackendTest, AnExistingExitFileWinsOverTheJournal) {
  std::string dir = Dir("prefer_file");
  ASSERT_TRUE(WriteFileAtomic(dir + "/exits", JournalRecord("a.1.exit", 0)).ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/a.1.exit", "exit_code=9\nsignal=0\nwall_ms=3\nend=1\n").ok());
  EXPECT_EQ(ReadExitFile(dir + "/a.1.exit", "a")->exit_code, 9);
  // A garbled exit file is garbled, whatever the journal says.
  ASSERT_TRUE(WriteFileAtomic(dir + "/a.1.exit", "exit_code=9\n").ok());
  EXPECT_EQ(ReadExitFile(dir + "/a.1.exit", "a").error().code, "INTERNAL");
}

TEST(LocalBackendTest, UnknownLimitsModeAndMissingShimAreClearErrors) {
  LocalOptions o;
  o.limits = "cgroups";
  o.shim_path = std::string(RSL_BINARY_DIR) + "/bin/rsl-shim";
  auto b = NewLocalBackend(o);
  ASSERT_FALSE(b.ok());
  EXPECT_EQ(b.error().code, "INVALID_ARGUMENT");
  o.limits = "auto";
  o.shim_path = "/nonexistent/rsl-shim";
  auto m = NewLocalBackend(o);
  ASSERT_FALSE(m.ok());
  EXPECT_EQ(m.error().hint, "install rsl-shim next to seedctl/rsl-controller, or set RSL_SHIM");
}

}  // namespace
}  // namespace rsl::backend
