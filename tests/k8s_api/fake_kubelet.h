#pragma once

// A "fake kubelet" beside the API-server double (tests only): every Pod created in the
// watched namespace is bound to a node, then its container's command RUNS as a real local
// process with the Pod's environment (env values, and secretKeyRef values read from the
// Secret the backend created), its stdout+stderr appended to the Pod's log; the Pod's status
// then follows the real exit (Succeeded, Failed with the exit code). The pod's emptyDir
// /rsl/work is a local directory; file:// staging paths are local already.
//
// Injections, per step name (label rsl.dev/step), consumed by the next Pod of that step:
//   kOom: the process is killed and the Pod reported OOMKilled;
//   kEvict: the Pod is reported Evicted (node pressure) while it runs;
//   kNodeDown: the Pod's node turns NotReady while it runs (the process is killed);
//   kHoldRunning: the Pod stays Running, its process not started (tests that restart).
// Deployments (serving steps) run no process: with ReadyDeployments(true) every Deployment
// in the namespace is reported with all of its spec.replicas ready (status.readyReplicas) and
// of its current template (a new template is rolled out at once), as the Deployment and
// ReplicaSet controllers and passing readiness probes would make it.
// activeDeadlineSeconds is enforced (process killed, Pod DeadlineExceeded); a deleted Pod's
// process is killed (SIGTERM).

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

#include "base/file.h"
#include "fake_apiserver.h"

namespace rsl::k8stest {

enum class Inject { kNone, kOom, kEvict, kNodeDown, kHoldRunning };

inline nlohmann::json NodeObject(const std::string& name, bool ready) {
  return {{"apiVersion", "v1"},
          {"kind", "Node"},
          {"metadata", {{"name", name}, {"labels", {{"kubernetes.io/hostname", name}}}}},
          {"status",
           {{"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
            {"capacity", {{"cpu", "8"}, {"memory", "32Gi"}, {"pods", "110"}}},
            {"conditions",
             nlohmann::json::array({{{"type", "Ready"}, {"status", ready ? "True" : "False"}}})}}}};
}

class FakeKubelet {
 public:
  FakeKubelet(FakeApiServer* server, std::string ns, std::string work_root)
      : server_(server), ns_(std::move(ns)), root_(std::move(work_root)) {
    server_->Add("nodes", "", NodeObject("node-1", true));
    server_->Add("nodes", "", NodeObject("node-2", true));
    thread_ = std::thread([this] { Loop(); });
  }
  ~FakeKubelet() {
    stop_ = true;
    thread_.join();
    std::lock_guard<std::mutex> lock(mu_);
    for (auto& [name, p] : pods_) {
      if (p.pid > 0) {
        ::kill(-p.pid, SIGKILL);
        ::waitpid(p.pid, nullptr, 0);
      }
      if (p.reader.joinable()) p.reader.join();
    }
  }

  void InjectNext(const std::string& step, Inject what) {
    std::lock_guard<std::mutex> lock(mu_);
    inject_[step] = what;
  }
  //! Pods started so far (any state), by name.
  std::vector<std::string> Started() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [n, p] : pods_) out.push_back(n);
    return out;
  }
  //! From now on (true), every Deployment's spec.replicas are reported ready.
  void ReadyDeployments(bool on) { ready_deployments_ = on; }
  //! Lets held pods run their process from now on.
  void Release() { hold_released_ = true; }

 private:
  struct Proc {
    pid_t pid = -1;
    int out_fd = -1;
    std::thread reader;
    Inject inject = Inject::kNone;
    int64_t deadline_ms = 0;  // 0 = none
    bool ended = false;
    bool held = false;
    std::string node = "node-1";
  };

  static int64_t Now() {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::steady_clock::now().time_since_epoch())
        .count();
  }

  std::string SecretValue(const std::string& name, const std::string& key) {
    auto secret = server_->Get("secrets", ns_, name);
    if (secret.is_null()) return "";
    if (secret.contains("stringData") && secret["stringData"].contains(key)) {
      return secret["stringData"][key];
    }
    return "";
  }

  // Starts the Pod's container as a process (REQUIRES: mu_ held).
  void Start(const std::string& name, const nlohmann::json& pod, Proc* p) {
    const auto& c = pod["spec"]["containers"][0];
    std::string work = root_ + "/" + name;
    (void)MakeDirs(work);
    std::vector<std::string> env = {"PATH=/usr/local/bin:/usr/bin:/bin"};
    for (const auto& e : c.value("env", nlohmann::json::array())) {
      std::string v;
      if (e.contains("value")) {
        v = e["value"];
      } else if (e.contains("valueFrom")) {
        const auto& ref = e["valueFrom"]["secretKeyRef"];
        v = SecretValue(ref["name"], ref["key"]);
      }
      if (v.rfind("/rsl/work", 0) == 0) v = work + v.substr(9);  // the emptyDir
      env.push_back(e["name"].get<std::string>() + "=" + v);
    }
    std::vector<std::string> argv = c["command"];
    // Built before fork: the child of a threaded process must not allocate (a lock another
    // thread held at the fork, e.g. malloc's, stays locked in the child, which then hangs:
    // its Pod stayed Running forever, now and then, under load).
    std::vector<char*> a, en;
    for (auto& s : argv) a.push_back(s.data());
    a.push_back(nullptr);
    for (auto& s : env) en.push_back(s.data());
    en.push_back(nullptr);
    int fds[2];
    if (::pipe(fds) != 0) return;
    pid_t pid = ::fork();
    if (pid == 0) {
      ::setpgid(0, 0);
      ::dup2(fds[1], 1);
      ::dup2(fds[1], 2);
      ::close(fds[0]);
      ::close(fds[1]);
      if (::chdir(work.c_str()) != 0) _exit(126);
      ::execvpe(a[0], a.data(), en.data());
      _exit(127);
    }
    ::close(fds[1]);
    p->pid = pid;
    p->out_fd = fds[0];
    p->reader = std::thread([this, name, fd = fds[0]] {
      char buf[4096];
      ssize_t n;
      while ((n = ::read(fd, buf, sizeof buf)) > 0) {
        server_->AppendPodLog(ns_, name, std::string(buf, size_t(n)));
      }
      ::close(fd);
    });
  }

  void Loop() {
    while (!stop_) {
      std::set<std::string> present;
      for (const auto& pod : server_->List("pods", ns_)) {
        const std::string name = pod["metadata"]["name"];
        present.insert(name);
        std::lock_guard<std::mutex> lock(mu_);
        auto it = pods_.find(name);
        if (it == pods_.end()) {
          Proc& p = pods_[name];
          std::string step = pod["metadata"]["labels"].value("rsl.dev/step", "");
          if (auto in = inject_.find(step); in != inject_.end()) {
            p.inject = in->second;
            inject_.erase(in);
          }
          if (p.inject == Inject::kNodeDown) p.node = "node-2";  // the node that goes away
          if (pod["spec"].contains("activeDeadlineSeconds")) {
            p.deadline_ms = Now() + pod["spec"]["activeDeadlineSeconds"].get<int64_t>() * 1000;
          }
          server_->SetPodPhase(ns_, name, PodPhase::kRunning, p.node);
          if (p.inject == Inject::kHoldRunning && !hold_released_) {
            p.held = true;
            continue;
          }
          Start(name, pod, &p);
          if (p.inject == Inject::kEvict) {
            Kill(&p);
            server_->SetPodPhase(ns_, name, PodPhase::kEvicted, p.node);
          } else if (p.inject == Inject::kNodeDown) {
            Kill(&p);
            server_->Add("nodes", "", NodeObject(p.node, false));
          }
          continue;
        }
        Proc& p = it->second;
        if (p.ended) continue;
        if (p.held) {
          if (!hold_released_) continue;
          p.held = false;
          Start(name, pod, &p);
          continue;
        }
        if (p.pid <= 0) continue;
        if (p.deadline_ms > 0 && Now() > p.deadline_ms) {
          Kill(&p);
          server_->SetPodPhase(ns_, name, PodPhase::kDeadlineExceeded, p.node);
          continue;
        }
        int status = 0;
        if (::waitpid(p.pid, &status, WNOHANG) != p.pid) continue;
        p.pid = -1;
        if (p.reader.joinable()) p.reader.join();  // every byte of the log first
        p.ended = true;
        int code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
        if (p.inject == Inject::kOom) {
          server_->SetPodPhase(ns_, name, PodPhase::kOomKilled, p.node);
        } else if (code == 0) {
          server_->SetPodPhase(ns_, name, PodPhase::kSucceeded, p.node);
        } else {
          server_->SetPodPhase(ns_, name, PodPhase::kFailed, p.node, code);
        }
      }
      if (ready_deployments_) {
        for (const auto& d : server_->List("deployments", ns_)) {
          int want = d["spec"].value("replicas", 1);
          const auto& st = d.value("status", nlohmann::json::object());
          // A new template (a rollout: generation moved on) is rolled out at once.
          bool stale = st.value("observedGeneration", 0) != d["metadata"].value("generation", 1);
          if (stale || st.value("readyReplicas", 0) != want || st.value("replicas", 0) != want) {
            server_->SetDeploymentReplicas(ns_, d["metadata"]["name"], want, want);
          }
        }
      }
      {
        // Deleted pods: their processes go (SIGTERM; the grace period is not modelled).
        std::lock_guard<std::mutex> lock(mu_);
        for (auto& [name, p] : pods_) {
          if (!present.count(name) && !p.ended) Kill(&p);
        }
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
  }

  void Kill(Proc* p) {  // REQUIRES: mu_ held
    p->ended = true;
    if (p->pid <= 0) return;
    ::kill(-p->pid, SIGKILL);
    ::waitpid(p->pid, nullptr, 0);
    p->pid = -1;
    if (p->reader.joinable()) p->reader.join();
  }

  FakeApiServer* server_;
  std::string ns_;
  std::string root_;
  std::atomic<bool> stop_{false};
  std::atomic<bool> hold_released_{false};
  std::atomic<bool> ready_deployments_{false};
  std::mutex mu_;
  std::map<std::string, Proc> pods_;
  std::map<std::string, Inject> inject_;
  std::thread thread_;
};

}  // namespace rsl::k8stest
