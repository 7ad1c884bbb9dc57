// Step isolation at the backend (identity.h, docs/security.md): the supervisor runs each
// namespace's steps as that namespace's uid ("users", as root), or in a user and mount
// namespace that hides the state and runs directories ("namespace", unprivileged). The
// hostile-tenant test against a real controller is tests/security/isolation_test.cc.
#include "backend/identity.h"

#include <grp.h>
#include <gtest/gtest.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <unistd.h>

#include <condition_variable>
#include <filesystem>
#include <map>
#include <mutex>

#include "backend/local.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::backend {
namespace {

class Exits {
 public:
  void Attach(Backend* b) {
    b->on_exit = [this](const AttemptExit& e) {
      std::lock_guard<std::mutex> lock(mu_);
      exits_[e.attempt_id] = e;
      cv_.notify_all();
    };
  }
  std::optional<AttemptExit> Wait(const std::string& id) {
    std::unique_lock<std::mutex> lock(mu_);
    cv_.wait_for(lock, std::chrono::seconds(30), [&] { return exits_.count(id) > 0; });
    if (!exits_.count(id)) return std::nullopt;
    return exits_[id];
  }

 private:
  std::mutex mu_;
  std::condition_variable cv_;
  std::map<std::string, AttemptExit> exits_;
};

// A fresh directory that the steps' other uids may pass through (0755).
std::string PassableDir(const std::string& name) {
  std::string d = ::testing::TempDir() + "identity_test_" + name + "_" + std::to_string(getpid());
  std::filesystem::remove_all(d);
  std::filesystem::create_directories(d);
  chmod(d.c_str(), 0755);
  return d;
}

// The layout the engine makes: <dir>/state (private) and <dir>/runs/<run>/...
LaunchSpec Step(const std::string& dir, const std::string& ns, const std::string& id,
                const std::string& script) {
  LaunchSpec s;
  s.attempt_id = id;
  s.step = id;
  s.namespace_ = ns;
  s.argv = {"/bin/sh", "-c", script};
  std::string run = dir + "/runs/run-" + id;
  s.env = {{"PATH", "/usr/bin:/bin"},
           {"STATE", dir + "/state"},
           {"RUNS", dir + "/runs"},
           {"RSL_OUTPUT", run + "/staging/" + id}};
  s.workdir = run + "/work/" + id + ".1";
  s.make_dirs = {run + "/staging/" + id};
  s.log_path = run + "/attempts/" + id + ".1.log";
  s.exit_file = run + "/attempts/" + id + ".1.exit";
  return s;
}

int Mode(const std::string& path, uid_t* owner = nullptr) {
  struct stat st {};
  if (stat(path.c_str(), &st) != 0) return -1;
  if (owner) *owner = st.st_uid;
  return int(st.st_mode & 07777);
}

TEST(IsolationTest, ModesAreParsedAndRefusedWhereTheyCannotWork) {
  bool root = geteuid() == 0;
  auto automatic = ParseIsolation("auto");
  if (root) {
    ASSERT_TRUE(automatic.ok()) << automatic.error().ToString();
    EXPECT_EQ(automatic->mode, IsolationMode::kUsers);
    auto ns = ParseIsolation("namespace");
    ASSERT_FALSE(ns.ok());
    EXPECT_EQ(ns.error().code, "INVALID_ARGUMENT");
    auto nobody = ParseIsolation("user:nobody");
    ASSERT_TRUE(nobody.ok()) << nobody.error().ToString();
    EXPECT_EQ(nobody->mode, IsolationMode::kUser);
    EXPECT_NE(nobody->user_uid, 0u);
    EXPECT_EQ(ParseIsolation("user:root").error().hint,
              "steps must run unprivileged: name an unprivileged account");
  } else {
    auto users = ParseIsolation("users");
    ASSERT_FALSE(users.ok());
    EXPECT_NE(users.error().message.find("needs root"), std::string::npos);
  }
  auto unknown = ParseIsolation("sandbox");
  ASSERT_FALSE(unknown.ok());
  EXPECT_EQ(unknown.error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(unknown.error().value, "sandbox");
  EXPECT_EQ(ParseIsolation("user:no-such-user-rsl").error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(ParseIsolation("none")->mode, IsolationMode::kNone);
}

// A runs directory below a directory others may not pass (/root is 0700) would leave every
// isolated step unable to enter its working directory: refused at start, naming it.
TEST(IsolationTest, ARunsDirectoryStepsCannotReachIsRefusedAtStart) {
  std::string dir = PassableDir("reach");
  ASSERT_TRUE(MakeDirs(dir + "/closed/state").ok());
  chmod((dir + "/closed").c_str(), 0700);
  Isolation users;
  users.mode = IsolationMode::kUsers;
  Status st = CheckRunsDirReachable(dir + "/closed/state-runs", users);
  ASSERT_FALSE(st.ok());
  EXPECT_EQ(st.error().code, "INVALID_ARGUMENT");
  EXPECT_EQ(st.error().value, dir + "/closed");
  EXPECT_NE(st.error().message.find("mode 0700"), std::string::npos) << st.error().ToString();
  EXPECT_NE(st.error().hint.find("--runs-dir"), std::string::npos);
  // Passable parents (0711 here), or steps that run as ourselves: fine.
  chmod((dir + "/closed").c_str(), 0711);
  EXPECT_TRUE(CheckRunsDirReachable(dir + "/closed/state-runs", users).ok());
  chmod((dir + "/closed").c_str(), 0700);
  EXPECT_TRUE(CheckRunsDirReachable(dir + "/closed/state-runs", Isolation{}).ok());
  // user:NAME passes where the account owns the directory.
  Isolation one;
  one.mode = IsolationMode::kUser;
  one.user_uid = 4242;
  one.user_gid = 4242;
  if (geteuid() == 0) {
    ASSERT_EQ(chown((dir + "/closed").c_str(), 4242, 4242), 0);
    EXPECT_TRUE(CheckRunsDirReachable(dir + "/closed/state-runs", one).ok());
  }
}

TEST(IsolationTest, EachNamespaceGetsAUidOnceAndKeepsIt) {
  std::string dir = PassableDir("map");
  IdentityMap a(dir, 5000);
  EXPECT_EQ(a.For("team-a")->uid, 5000u);
  EXPECT_EQ(a.For("team-b")->uid, 5001u);
  EXPECT_EQ(a.For("team-a")->uid, 5000u);
  // Another process (a new map on the same file) sees the same, and allocates after them.
  IdentityMap b(dir, 5000);
  EXPECT_EQ(b.For("team-b")->gid, 5001u);
  EXPECT_EQ(b.For("team-c")->uid, 5002u);
  EXPECT_EQ(a.For("team-c")->uid, 5002u);
  EXPECT_EQ(*ReadFile(dir + "/step-identities"), "5000 team-a\n5001 team-b\n5002 team-c\n");
  EXPECT_EQ(Mode(dir + "/step-identities"), 0600);
  // A torn last line (a crash mid-append) is ignored, never half-used.
  ASSERT_TRUE(WriteFileAtomic(dir + "/step-identities", "5000 team-a\n50").ok());
  IdentityMap c(dir, 5000);
  EXPECT_EQ(c.For("team-z")->uid, 5001u);
}

// As root: two namespaces' steps, each its own uid, neither reaching the state directory
// nor the other's directories; their own directories are theirs (0700).
TEST(IsolationTest, UsersModeRunsEachNamespaceAsItsOwnUnprivilegedUid) {
  if (geteuid() != 0) {
    // Unprivileged, the mode is refused (checked above); nothing else to run here.
    EXPECT_FALSE(ParseIsolation("users").ok());
    return;
  }
  std::string dir = PassableDir("users");
  ASSERT_TRUE(MakePrivateDir(dir + "/state").ok());
  ASSERT_TRUE(WriteFileAtomic(dir + "/state/secret", "top-secret\n").ok());
  LocalOptions o;
  o.state_dir = dir + "/state";
  o.nvidia_smi = "";
  o.isolation = "users";
  o.shim_path = std::string(RSL_BINARY_DIR) + "/bin/rsl-shim";
  auto b = NewLocalBackend(o);
  ASSERT_TRUE(b.ok()) << b.error().ToString();
  Exits exits;
  exits.Attach(b->get());
  const char* probe =
      "echo uid=$(id -u) gid=$(id -g) groups=$(id -G); "
      "cat $STATE/secret 2>/dev/null || echo state:denied; "
      "ls $RUNS >/dev/null 2>&1 || echo runs:denied; "
      "echo mine > $RSL_OUTPUT/out && echo output:ok; "
      "touch here && echo workdir:ok; "
      "cat $OTHER/out 2>/dev/null || echo other:denied; "
      "touch $OTHER/planted 2>/dev/null || echo plant:denied";
  LaunchSpec a = Step(dir, "team-a", "a", probe);
  a.env["OTHER"] = "/nonexistent";
  ASSERT_TRUE((*b)->Launch(a).ok());
  auto ea = exits.Wait("a");
  ASSERT_TRUE(ea.has_value());
  EXPECT_EQ(ea->kind, ExitKind::kSucceeded) << ea->message << *ReadFile(a.log_path);
  LaunchSpec bb = Step(dir, "team-b", "b", probe);
  bb.env["OTHER"] = a.env["RSL_OUTPUT"];
  ASSERT_TRUE((*b)->Launch(bb).ok());
  auto eb = exits.Wait("b");
  ASSERT_TRUE(eb.has_value());

  std::string la = *ReadFile(a.log_path), lb = *ReadFile(bb.log_path);
  EXPECT_NE(la.find("uid=1879048192 gid=1879048192 groups=1879048192\n"), std::string::npos) << la;
  EXPECT_NE(lb.find("uid=1879048193 gid=1879048193 groups=1879048193\n"), std::string::npos) << lb;
  for (const std::string& log : {la, lb}) {
    for (const char* want : {"state:denied", "runs:denied", "output:ok", "workdir:ok"}) {
      EXPECT_NE(log.find(want), std::string::npos) << want << "\n" << log;
    }
  }
  EXPECT_NE(lb.find("other:denied"), std::string::npos) << lb;
  EXPECT_NE(lb.find("plant:denied"), std::string::npos) << lb;
  EXPECT_FALSE(PathExists(a.env["RSL_OUTPUT"] + "/planted"));
  uid_t owner = 0;
  EXPECT_EQ(Mode(a.env["RSL_OUTPUT"], &owner), 0700);
  EXPECT_EQ(owner, 1879048192u);
  EXPECT_EQ(Mode(a.workdir, &owner), 0700);
  EXPECT_EQ(owner, 1879048192u);
  EXPECT_EQ(Mode(dir + "/runs/run-a/attempts"), 0700);  // logs: ours alone
  EXPECT_EQ(Mode(dir + "/runs/run-a/work"), 0711);
  EXPECT_EQ(*ReadFile(dir + "/state/step-identities"), "1879048192 team-a\n1879048193 team-b\n");
}

// Unprivileged (as root, the test drops to nobody in a child first): the step runs as our
// user in a user and mount namespace where the state and runs directories are empty but
// for its own directories and, read-only, its dependency's output.
TEST(IsolationTest, NamespaceModeHidesTheStateAndRunsDirectories) {
  std::string dir = PassableDir("userns");
  std::string result = dir + "/result";
  pid_t pid = fork();
  ASSERT_GE(pid, 0);
  if (pid == 0) {
    auto fail = [&](const std::string& why) {
      (void)WriteFileAtomic(result, "FAIL " + why);
      _exit(1);
    };
    if (geteuid() == 0) {
      if (chown(dir.c_str(), 65534, 65534) != 0) fail("chown");
      if (setgroups(0, nullptr) != 0 || setresgid(65534, 65534, 65534) != 0 ||
          setresuid(65534, 65534, 65534) != 0) {
        fail("cannot become nobody");
      }
    }
    if (!UserNamespacesWork()) {
      // Refused with a reason, never a silent fallback.
      auto refused = ParseIsolation("namespace");
      (void)WriteFileAtomic(result,
                            refused.ok() ? "FAIL accepted" : "REFUSED " + refused.error().message);
      _exit(0);
    }
    if (!MakePrivateDir(dir + "/state").ok() ||
        !WriteFileAtomic(dir + "/state/secret", "top-secret\n").ok() ||
        !MakeDirs(dir + "/runs/run-a/staging/dep").ok() ||
        !WriteFileAtomic(dir + "/runs/run-a/staging/dep/data", "from-dep\n").ok() ||
        !MakeDirs(dir + "/runs/run-other/staging/x").ok() ||
        !WriteFileAtomic(dir + "/runs/run-other/staging/x/private", "other\n").ok()) {
      fail("setup");
    }
    LocalOptions o;
    o.state_dir = dir + "/state";
    o.nvidia_smi = "";
    o.isolation = "namespace";
    o.runs_dir = dir + "/runs";
    o.shim_path = std::string(RSL_BINARY_DIR) + "/bin/rsl-shim";
    auto b = NewLocalBackend(o);
    if (!b.ok()) fail(b.error().ToString());
    Exits exits;
    exits.Attach(b->get());
    LaunchSpec s = Step(dir, "team-a", "a",
                        "echo uid=$(id -u); "
                        "cat $STATE/secret 2>/dev/null || echo state:hidden; "
                        "ls $STATE | wc -l; "
                        "cat $RUNS/run-other/staging/x/private 2>/dev/null || echo other:hidden; "
                        "cat $DEP/data; "
                        "touch $DEP/planted 2>/dev/null || echo dep:readonly; "
                        "echo mine > $RSL_OUTPUT/out && echo output:ok; "
                        "touch here && echo workdir:ok; "
                        "umount $STATE 2>/dev/null || echo umount:refused");
    s.workdir = dir + "/runs/run-a/work/a.1";
    s.make_dirs = {dir + "/runs/run-a/staging/a"};
    s.env["RSL_OUTPUT"] = dir + "/runs/run-a/staging/a";
    s.env["DEP"] = dir + "/runs/run-a/staging/dep";
    s.read_dirs = {dir + "/runs/run-a/staging/dep"};
    if (!(*b)->Launch(s).ok()) fail("launch");
    auto e = exits.Wait("a");
    if (!e) fail("no exit");
    auto log = ReadFile(s.log_path);
    (void)WriteFileAtomic(
        result, "LOG " + (log.ok() ? *log : log.error().ToString()) + "EXIT " + e->message + "\n");
    _exit(0);
  }
  int status = 0;
  ASSERT_EQ(waitpid(pid, &status, 0), pid);
  std::string got = *ReadFile(result);
  ASSERT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << got;
  if (got.rfind("REFUSED ", 0) == 0) {
    // A kernel without unprivileged user namespaces: the mode is refused at start-up.
    EXPECT_NE(got.find("refuses unprivileged user namespaces"), std::string::npos) << got;
    return;
  }
  for (const char* want : {"state:hidden", "\n0\n", "other:hidden", "from-dep", "dep:readonly",
                           "output:ok", "workdir:ok", "umount:refused", "EXIT exit code 0"}) {
    EXPECT_NE(got.find(want), std::string::npos) << want << "\n" << got;
  }
  EXPECT_EQ(got.find("top-secret"), std::string::npos) << got;
  EXPECT_FALSE(PathExists(dir + "/runs/run-a/staging/dep/planted"));
  EXPECT_EQ(*ReadFile(dir + "/runs/run-a/staging/a/out"), "mine\n");
}

}  // namespace
}  // namespace rsl::backend
