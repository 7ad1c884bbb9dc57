// Steps run in their container images, as a user meets it: the real rsl-controller and seedctl
// (tests/api/harness.h), the local backend's real rsl-shim, real runc, and images pushed with
// skopeo to Debian's docker-registry on loopback. Each image holds a static busybox (Debian's
// busybox-static) as its shell and /etc/rsl-image-marker, which the host does not have.
#include <dirent.h>
#include <gtest/gtest.h>
#include <signal.h>
#include <sys/stat.h>
#include <sys/sysmacros.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdlib>
#include <fstream>
#include <iostream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <thread>

#include "harness.h"
#include "image/testing.h"

namespace rsl::image {
namespace {

using apitest::CmdResult;
using apitest::Controller;
using apitest::IdFromSubmit;
using apitest::WriteText;
using nlohmann::json;
using testing::LocalRegistry;

constexpr char kMarker[] = "/etc/rsl-image-marker";

std::string Slurp(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

// A process that exists and is not a zombie (a zombie left to a non-reaping init is gone).
bool Alive(pid_t pid) {
  std::string stat = Slurp("/proc/" + std::to_string(pid) + "/stat");
  size_t paren = stat.rfind(')');
  return paren != std::string::npos && paren + 2 < stat.size() && stat[paren + 2] != 'Z';
}

// Live pids whose command line contains every one of `parts` (NUL-separated argv).
std::vector<pid_t> PidsWith(const std::vector<std::string>& parts) {
  std::vector<pid_t> out;
  DIR* d = opendir("/proc");
  if (d == nullptr) return out;
  while (dirent* e = readdir(d)) {
    pid_t pid = atoi(e->d_name);
    if (pid <= 0 || pid == getpid()) continue;
    std::string cmd = Slurp("/proc/" + std::string(e->d_name) + "/cmdline");
    bool all = !cmd.empty();
    for (const auto& p : parts) all = all && cmd.find(p) != std::string::npos;
    if (all && Alive(pid)) out.push_back(pid);
  }
  closedir(d);
  return out;
}

class ImageRunTest : public ::testing::Test {
 protected:
  void SetUp() override {
    ASSERT_NE(access("/bin/busybox", X_OK), 0 - 1) << "busybox-static is needed (scripts/deps)";
    ASSERT_NE(access(kMarker, F_OK), 0) << "the host must not have " << kMarker;
    ASSERT_FALSE(registry_.host().empty()) << registry_.Log();
    unsetenv("RSL_CONTAINER_RUNTIME");
    ASSERT_TRUE(c_.Start()) << c_.Log();
    token_ = c_.CreateToken("risk", "editor", "eddie");
  }

  // Pushes host/volc/run:TAG holding busybox and the marker `marker`; returns its digest.
  std::string Push(const std::string& tag, const std::string& marker) {
    std::string why;
    std::string digest = registry_.Push("volc/run", tag, "linux/amd64",
                                        {"bin/busybox=@/bin/busybox", "bin/sh=@/bin/busybox",
                                         std::string(kMarker + 1) + "=" + marker},
                                        &why);
    EXPECT_FALSE(digest.empty()) << why;
    return digest;
  }

  std::string Image(const std::string& tag) { return registry_.host() + "/volc/run:" + tag; }

  // One step in `image` running `script` (busybox sh), with `memory` as its limit.
  // `spec_extra`: more spec lines ("  imagePullSecrets: [regcred]\n"); an empty `image`: a
  // host step (no image) running `script` with the host's /bin/sh.
  std::string Submit(const std::string& name, const std::string& image, const std::string& script,
                     const std::string& memory = "256Mi", const std::string& spec_extra = "") {
    std::string yaml =
        "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: " + name +
        "\n  namespace: risk\nspec:\n" + spec_extra +
        "  resources: {cpu: \"250m\", memory: " + memory + "}\n  pipeline:\n    - name: train\n" +
        (image.empty() ? "      command: [\"/bin/sh\", \"-c\", " + json(script).dump() + "]\n"
                       : "      image: \"" + image +
                             "\"\n      command: [\"/bin/busybox\", \"sh\", \"-c\", " +
                             json(script).dump() + "]\n");
    WriteText(c_.work_dir() + "/" + name + ".yaml", yaml);
    CmdResult r = c_.Seedctl(token_, {"workload", "submit", "-f", name + ".yaml"});
    EXPECT_EQ(r.exit_code, 0) << r.out << r.err;
    return IdFromSubmit(r.out);
  }

  json Describe(const std::string& id) {
    CmdResult r = c_.Seedctl(token_, {"workload", "describe", "--id", id, "-o", "json"});
    EXPECT_EQ(r.exit_code, 0) << r.err;
    return json::parse(r.out, nullptr, false);
  }

  std::string Logs(const std::string& id) {
    return c_.Seedctl(token_, {"workload", "logs", "--id", id, "--step", "train"}).out;
  }

  static std::string Events(const json& d) {
    std::string out;
    for (const auto& e : d["events"]) {
      out += e.value("reason", "") + ": " + e.value("message", "") + "\n";
    }
    return out;
  }

  std::string RuncList() {
    std::string out;
    testing::RunCommand({"runc", "--root", c_.state_dir() + "/runc", "list", "-q"},
                        c_.work_dir() + "/runc-list.out", &out);
    return out;
  }

  LocalRegistry registry_;
  Controller c_;
  std::string token_;
};

// The step sees the image's files, not the host's, at the documented container paths; the
// recorded digest is what runs, also for a rollback after the tag moved.
TEST_F(ImageRunTest, AStepRunsInItsImageAndARollbackRunsTheRecordedDigest) {
  std::string first = Push("v1", "first-image");
  std::string id = Submit(
      "in-image", Image("v1"),
      "echo marker=$(cat /etc/rsl-image-marker); echo output=$RSL_OUTPUT; echo pwd=$(pwd); "
      "echo pid1=$(cat /proc/1/cmdline | tr '\\0' ' '); test -e /usr/bin/cmake || echo no-host; "
      "echo data > $RSL_OUTPUT/out.txt");
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(token_, id, 60000), "SUCCEEDED") << c_.Log() << Describe(id).dump(2);
  std::string logs = Logs(id);
  EXPECT_NE(logs.find("marker=first-image"), std::string::npos) << logs;
  EXPECT_NE(logs.find("output=/rsl/output"), std::string::npos) << logs;
  EXPECT_NE(logs.find("pwd=/rsl/work"), std::string::npos) << logs;
  EXPECT_NE(logs.find("pid1=/.rsl/init /bin/busybox sh -c"), std::string::npos) << logs;
  EXPECT_NE(logs.find("no-host"), std::string::npos) << logs;
  json d = Describe(id);
  std::string events = Events(d);
  EXPECT_NE(events.find("Started: container rsl-"), std::string::npos) << events;
  EXPECT_NE(events.find("@" + first), std::string::npos) << events;

  // The cache holds the digest's bundle; nothing is in use any more.
  CmdResult ls = apitest::RunCmd(
      {apitest::SeedctlPath(), "image", "ls", "--state-dir", c_.state_dir(), "-o", "json"}, {});
  ASSERT_EQ(ls.exit_code, 0) << ls.err;
  json cached = json::parse(ls.out, nullptr, false);
  ASSERT_TRUE(cached.is_array()) << ls.out;
  ASSERT_EQ(cached.size(), 1u) << ls.out;
  EXPECT_EQ(cached[0]["digest"], first);
  EXPECT_EQ(cached[0]["inUse"], false);

  // The tag moves; a rollback runs the recorded digest, a new submission the new one.
  std::string second = Push("v1", "second-image");
  ASSERT_NE(second, first);
  CmdResult rollback = c_.Seedctl(token_, {"rollback", "--id", id});
  ASSERT_EQ(rollback.exit_code, 0) << rollback.err;
  std::string rid = IdFromSubmit(rollback.out);
  ASSERT_FALSE(rid.empty()) << rollback.out;
  ASSERT_EQ(c_.WaitPhase(token_, rid, 60000), "SUCCEEDED") << c_.Log();
  EXPECT_NE(Logs(rid).find("marker=first-image"), std::string::npos) << Logs(rid);
  std::string fresh = Submit("in-image", Image("v1"), "echo marker=$(cat /etc/rsl-image-marker)");
  ASSERT_EQ(c_.WaitPhase(token_, fresh, 60000), "SUCCEEDED") << c_.Log();
  EXPECT_NE(Logs(fresh).find("marker=second-image"), std::string::npos) << Logs(fresh);
  EXPECT_EQ(RuncList(), "");
}

// GPUs in containers (docs/image.md): a node file declares 4 GPUs, RSL_GPU_DEVICE_DIR holds
// fake nodes nvidia0..3 and nvidiactl (clones of /dev/null, char 1:3); a step asking for 2
// sees exactly its two placed nodes at their host names and nvidiactl, can write to them,
// and numbers them 0,1.
TEST_F(ImageRunTest, AStepSeesExactlyItsPlacedGpus) {
  std::string dev = c_.work_dir() + "/fake-dev";
  ASSERT_EQ(mkdir(dev.c_str(), 0755), 0);
  for (const char* n : {"nvidia0", "nvidia1", "nvidia2", "nvidia3", "nvidiactl"}) {
    std::string node = dev + "/" + n;
    ASSERT_EQ(mknod(node.c_str(), S_IFCHR | 0666, makedev(1, 3)), 0) << node << ": " << errno;
    ASSERT_EQ(chmod(node.c_str(), 0666), 0);
  }
  WriteText(c_.work_dir() + "/nodes.yaml",
            "nodes:\n  - name: local\n    gpus:\n      - {model: A10, count: 4}\n");
  setenv("RSL_GPU_DEVICE_DIR", dev.c_str(), 1);  // the controller inherits it
  ASSERT_EQ(c_.Terminate(), 0) << c_.Log();
  c_.UseArgs({"--node-file", c_.work_dir() + "/nodes.yaml"});
  bool started = c_.Start();
  unsetenv("RSL_GPU_DEVICE_DIR");
  ASSERT_TRUE(started) << c_.Log();
  Push("v1", "gpu-image");
  std::string script =
      "for i in 0 1 2 3; do test -e /dev/nvidia$i && echo has:nvidia$i; done; "
      "test -e /dev/nvidiactl && echo has:nvidiactl; "
      "(IFS=,; for i in $RSL_GPU_HOST_INDICES; do echo x > /dev/nvidia$i && echo wrote:$i; done); "
      "echo x > /dev/nvidiactl && echo wrote:ctl; "
      "echo cvd=$CUDA_VISIBLE_DEVICES host=$RSL_GPU_HOST_INDICES nv=$NVIDIA_VISIBLE_DEVICES";
  std::string yaml =
      "apiVersion: aiengine.volc.com/v1\nkind: AIWorkload\nmetadata:\n  name: gpus\n"
      "  namespace: risk\nspec:\n  resources: {cpu: \"250m\", memory: 256Mi, gpu: \"2\"}\n"
      "  pipeline:\n    - name: train\n      image: \"" +
      Image("v1") + "\"\n      command: [\"/bin/busybox\", \"sh\", \"-c\", " + json(script).dump() +
      "]\n";
  WriteText(c_.work_dir() + "/gpus.yaml", yaml);
  CmdResult r = c_.Seedctl(token_, {"workload", "submit", "-f", "gpus.yaml"});
  ASSERT_EQ(r.exit_code, 0) << r.out << r.err;
  std::string id = IdFromSubmit(r.out);
  ASSERT_FALSE(id.empty()) << r.out;
  ASSERT_EQ(c_.WaitPhase(token_, id, 60000), "SUCCEEDED") << c_.Log() << Describe(id).dump(2);
  std::string logs = Logs(id);
  size_t at = logs.find("host=");
  ASSERT_NE(at, std::string::npos) << logs;
  std::string host = logs.substr(at + 5, logs.find(' ', at) - at - 5);
  ASSERT_EQ(host.size(), 3u) << logs;  // "a,b"
  std::set<std::string> placed = {host.substr(0, 1), host.substr(2, 1)};
  ASSERT_EQ(placed.size(), 2u) << logs;
  for (int i = 0; i < 4; ++i) {
    std::string n = std::to_string(i);
    bool want = placed.count(n) > 0;
    EXPECT_EQ(logs.find("has:nvidia" + n + "\n") != std::string::npos, want) << logs;
    EXPECT_EQ(logs.find("wrote:" + n + "\n") != std::string::npos, want) << logs;
  }
  EXPECT_NE(logs.find("has:nvidiactl\n"), std::string::npos) << logs;
  EXPECT_NE(logs.find("wrote:ctl\n"), std::string::npos) << logs;
  EXPECT_NE(logs.find("cvd=0,1 host=" + host + " nv=" + host), std::string::npos) << logs;
  std::string events = Events(Describe(id));
  EXPECT_NE(events.find("GPUs " + host + " as 0,1: /dev/nvidia"), std::string::npos) << events;
  EXPECT_EQ(RuncList(), "");
}

// The step's memory limit holds inside the container: OOMKilled, as for a host step.
TEST_F(ImageRunTest, TheMemoryLimitIsEnforcedInTheContainer) {
  Push("v1", "oom");
  std::string id = Submit("hog", Image("v1"),
                          "x=$(head -c 400000000 /dev/zero | tr '\\0' a); echo survived", "64Mi");
  ASSERT_FALSE(id.empty());
  std::string phase = c_.WaitPhase(token_, id, 90000);
  json d = Describe(id);
  EXPECT_EQ(phase, "FAILED") << d.dump(2);
  std::string events = Events(d);
  EXPECT_NE(events.find("OOMKilled"), std::string::npos) << events;
  EXPECT_EQ(Logs(id).find("survived"), std::string::npos) << Logs(id);
  EXPECT_EQ(RuncList(), "");
}

// rsl-shim SIGKILLed while a container runs: the container's processes go with it at once;
// what runc kept of it is removed by the next supervisor, before the step runs again.
TEST_F(ImageRunTest, AKilledSupervisorLeavesNoContainerBehind) {
  Push("v1", "sleeper");
  std::string id = Submit("sleeper", Image("v1"), "exec /bin/busybox sleep 3177");
  ASSERT_FALSE(id.empty());
  std::vector<pid_t> sleepers;
  for (int i = 0; i < 600 && sleepers.empty(); ++i) {
    sleepers = PidsWith({"sleep", "3177"});
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  ASSERT_FALSE(sleepers.empty()) << c_.Log() << Describe(id).dump(2);
  EXPECT_NE(RuncList(), "");
  std::vector<pid_t> shims = PidsWith({"rsl-shim", "--serve", c_.state_dir()});
  ASSERT_EQ(shims.size(), 1u);
  ASSERT_EQ(kill(shims[0], SIGKILL), 0);
  bool gone = false;
  for (int i = 0; i < 100 && !gone; ++i) {
    gone = true;
    for (pid_t p : sleepers) gone = gone && !Alive(p);
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(gone) << "the container's process outlived its supervisor";
  // The controller starts a new supervisor for the rescheduled attempt, which removes the
  // stale container first; cancelling the run ends the new one.
  CmdResult cancel = c_.Seedctl(token_, {"workload", "cancel", "--id", id});
  EXPECT_EQ(cancel.exit_code, 0) << cancel.err;
  c_.WaitPhase(token_, id, 60000);
  std::string left = "x";
  for (int i = 0; i < 200 && !left.empty(); ++i) {
    left = RuncList();
    if (!left.empty()) std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_EQ(left, "") << "runc still lists containers";
  std::vector<pid_t> after;
  for (int i = 0; i < 100; ++i) {
    after = PidsWith({"sleep", "3177"});
    if (after.empty()) break;
    std::this_thread::sleep_for(std::chrono::milliseconds(100));
  }
  EXPECT_TRUE(after.empty()) << Events(Describe(id));
}

// A registry that wants a login: the image is pulled with the login of the secret
// spec.imagePullSecrets names (skopeo gets it in a 0600 authfile removed after the pull),
// and the password is in no answer, event, log or file of the controller.
TEST_F(ImageRunTest, APrivateImageIsPulledWithThePullSecret) {
  LocalRegistry locked(LocalRegistry::Auth::kBasic);
  ASSERT_FALSE(locked.host().empty()) << locked.Log();
  std::string why;
  std::string digest =
      locked.Push("volc/private", "v1", "linux/amd64",
                  {"bin/busybox=@/bin/busybox", std::string(kMarker + 1) + "=private-image"}, &why);
  ASSERT_FALSE(digest.empty()) << why;
  CmdResult secret = c_.Seedctl(
      token_, {"secret", "create", "regcred", "--from-literal", "REGISTRY=" + locked.host(),
               "--from-literal", std::string("USERNAME=") + LocalRegistry::kUser, "--from-literal",
               std::string("PASSWORD=") + LocalRegistry::kPassword, "-n", "risk"});
  ASSERT_EQ(secret.exit_code, 0) << secret.err;
  std::string id = Submit("private", locked.host() + "/volc/private:v1",
                          "echo marker=$(cat /etc/rsl-image-marker)", "256Mi",
                          "  imagePullSecrets: [regcred]\n");
  ASSERT_FALSE(id.empty());
  ASSERT_EQ(c_.WaitPhase(token_, id, 90000), "SUCCEEDED") << c_.Log() << Describe(id).dump(2);
  EXPECT_NE(Logs(id).find("marker=private-image"), std::string::npos) << Logs(id);
  json d = Describe(id);
  std::string events = Events(d);
  // (The registry's host is masked in events: it is a value of the secret.)
  EXPECT_NE(events.find("ImagePulling: pulling "), std::string::npos) << events;
  EXPECT_NE(events.find("/volc/private@" + digest + " into the image cache"), std::string::npos)
      << events;
  EXPECT_NE(events.find("ImagePulled: pulled and unpacked"), std::string::npos) << events;
  EXPECT_EQ(d.dump().find(LocalRegistry::kPassword), std::string::npos);
  EXPECT_EQ(c_.Log().find(LocalRegistry::kPassword), std::string::npos);
  // No authfile is left, and no file of the run or the cache holds the password (the
  // secret itself is in the store's database, sealed or not, by design: not searched).
  std::string found;
  testing::RunCommand({"find", c_.state_dir(), c_.state_dir() + "-runs", "-name", "auth.json"},
                      c_.work_dir() + "/find.out", &found);
  EXPECT_EQ(found, "");
  testing::RunCommand({"grep", "-rl", "--exclude=*.db*", LocalRegistry::kPassword, c_.state_dir(),
                       c_.state_dir() + "-runs"},
                      c_.work_dir() + "/grep.out", &found);
  EXPECT_EQ(found, "");
}

// The first pull of an image happens off the launch path: while a slow pull runs (a proxy
// holds skopeo's blob downloads for 20 s), another workload's host step starts and ends.
TEST_F(ImageRunTest, ASlowFirstPullDoesNotDelayAnotherStep) {
  Push("slow", "slow-image");
  std::string proxy_log = c_.work_dir() + "/proxy.log";
  pid_t proxy =
      testing::Spawn({"python3", std::string(RSL_SOURCE_DIR) + "/tests/image/slow_proxy.py",
                      registry_.host(), "20"},
                     proxy_log);
  std::string port = testing::WaitForMatch(proxy_log, "^([0-9]+)\n");
  ASSERT_FALSE(port.empty()) << Slurp(proxy_log);
  std::string slow = Submit("slow-pull", "127.0.0.1:" + port + "/volc/run:slow",
                            "echo marker=$(cat /etc/rsl-image-marker)");
  ASSERT_FALSE(slow.empty());
  std::string events;
  for (int i = 0; i < 600 && events.find("ImagePulling") == std::string::npos; ++i) {
    events = Events(Describe(slow));
    if (events.find("ImagePulling") == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ASSERT_NE(events.find("ImagePulling: pulling 127.0.0.1:" + port), std::string::npos)
      << events << c_.Log();

  auto t0 = std::chrono::steady_clock::now();
  std::string host = Submit("host-step", "", "echo host-ran");
  ASSERT_EQ(c_.WaitPhase(token_, host, 60000), "SUCCEEDED") << c_.Log();
  double host_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_NE(Logs(host).find("host-ran"), std::string::npos);
  events = Events(Describe(slow));
  // Synchronous pulls would have launched the container before the host step could start.
  EXPECT_EQ(events.find("Started: container"), std::string::npos) << events;
  EXPECT_EQ(events.find("ImagePulled"), std::string::npos)
      << "the host step waited for the pull (" << host_s << " s)\n"
      << events;
  std::cout << "host step submitted to SUCCEEDED during the slow pull: " << host_s << " s\n";

  ASSERT_EQ(c_.WaitPhase(token_, slow, 120000), "SUCCEEDED") << c_.Log();
  events = Events(Describe(slow));
  EXPECT_NE(events.find("ImagePulled: pulled and unpacked"), std::string::npos) << events;
  EXPECT_NE(Logs(slow).find("marker=slow-image"), std::string::npos) << Logs(slow);
  kill(proxy, SIGTERM);
  waitpid(proxy, nullptr, 0);
}

// Cancelling a step that waits for its image ends it at once, without starting it.
TEST_F(ImageRunTest, ACancelWhileTheImageIsPulledEndsTheStepAtOnce) {
  Push("cancel", "never-runs");
  std::string proxy_log = c_.work_dir() + "/proxy.log";
  pid_t proxy =
      testing::Spawn({"python3", std::string(RSL_SOURCE_DIR) + "/tests/image/slow_proxy.py",
                      registry_.host(), "20"},
                     proxy_log);
  std::string port = testing::WaitForMatch(proxy_log, "^([0-9]+)\n");
  ASSERT_FALSE(port.empty()) << Slurp(proxy_log);
  std::string id =
      Submit("cancel-pull", "127.0.0.1:" + port + "/volc/run:cancel", "echo started-anyway");
  ASSERT_FALSE(id.empty());
  std::string events;
  for (int i = 0; i < 600 && events.find("ImagePulling") == std::string::npos; ++i) {
    events = Events(Describe(id));
    if (events.find("ImagePulling") == std::string::npos) {
      std::this_thread::sleep_for(std::chrono::milliseconds(100));
    }
  }
  ASSERT_NE(events.find("ImagePulling"), std::string::npos) << events << c_.Log();
  auto t0 = std::chrono::steady_clock::now();
  CmdResult cancel = c_.Seedctl(token_, {"workload", "cancel", "--id", id});
  ASSERT_EQ(cancel.exit_code, 0) << cancel.err;
  EXPECT_EQ(c_.WaitPhase(token_, id, 60000), "CANCELLED") << Events(Describe(id));
  double took = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  EXPECT_LT(took, 15.0) << "the cancel waited for the pull";
  events = Events(Describe(id));
  EXPECT_EQ(events.find("Started: container"), std::string::npos) << events;
  EXPECT_EQ(Logs(id).find("started-anyway"), std::string::npos);
  kill(proxy, SIGTERM);
  waitpid(proxy, nullptr, 0);
}

}  // namespace
}  // namespace rsl::image
