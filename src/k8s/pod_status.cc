#include "k8s/pod_status.h"

#include "base/codes.h"
#include "k8s/json_fields.h"

namespace rsl::k8s {

namespace {

using backend::ExitKind;
using json = nlohmann::json;

const json& Field(const json& j, const char* key) {
  static const json kNull;
  if (!j.is_object()) return kNull;
  auto it = j.find(key);
  return it == j.end() ? kNull : *it;
}

bool ConditionTrue(const json& status, const char* type) {
  const json& conds = Field(status, "conditions");
  if (!conds.is_array()) return false;
  for (const auto& c : conds) {
    if (Str(c, "type") == type && Str(c, "status") == "True") return true;
  }
  return false;
}

std::string ConditionMessage(const json& status, const char* type) {
  for (const auto& c :
       Field(status, "conditions").is_array() ? Field(status, "conditions") : json::array()) {
    if (Str(c, "type") == type) {
      std::string r = Str(c, "reason"), m = Str(c, "message");
      return r + (m.empty() ? "" : ": " + m);
    }
  }
  return "";
}

// The container statuses, init containers first (a failed init container fails the pod).
std::vector<const json*> Containers(const json& status) {
  std::vector<const json*> out;
  for (const char* key : {"initContainerStatuses", "containerStatuses"}) {
    const json& list = Field(status, key);
    if (!list.is_array()) continue;
    for (const auto& c : list) out.push_back(&c);
  }
  return out;
}

PodOutcome Ended(ExitKind kind, int exit_code, std::string message, std::string reason) {
  PodOutcome o;
  o.state = PodOutcome::State::kEnded;
  o.exit.kind = kind;
  o.exit.exit_code = exit_code;
  o.exit.message = std::move(message);
  o.reason = std::move(reason);
  return o;
}

}  // namespace

const char* Name(PodOutcome::State state) {
  switch (state) {
    case PodOutcome::State::kPending:
      return "Pending";
    case PodOutcome::State::kRunning:
      return "Running";
    case PodOutcome::State::kEnded:
      return "Ended";
    case PodOutcome::State::kBlocked:
      return "Blocked";
  }
  return "?";
}

PodOutcome ClassifyPod(const json& pod, bool node_lost) {
  const json& status = Field(pod, "status");
  const std::string phase = Str(status, "phase");
  const std::string pod_reason = Str(status, "reason");
  const std::string pod_message = Str(status, "message");
  const std::string node = Str(Field(pod, "spec"), "nodeName");
  const std::string where = node.empty() ? "" : " on node " + node;
  PodOutcome out;

  // Node loss first: an evicted or disrupted pod's containers were killed by the cluster, not
  // by their own failure, whatever exit code they show.
  if (pod_reason == "Evicted" || (phase == "Failed" && ConditionTrue(status, "DisruptionTarget"))) {
    std::string why =
        pod_reason == "Evicted"
            ? "evicted" + where + (pod_message.empty() ? "" : ": " + pod_message)
            : "disrupted" + where + " (" + ConditionMessage(status, "DisruptionTarget") + ")";
    out = Ended(ExitKind::kNodeLost, -1, "pod " + why,
                pod_reason.empty() ? "DisruptionTarget" : pod_reason);
  } else if (phase == "Unknown" || (node_lost && phase != "Succeeded" && phase != "Failed")) {
    out = Ended(ExitKind::kNodeLost, -1, "node lost" + where + ": the pod's state is unknown",
                phase == "Unknown" ? "Unknown" : "NodeLost");
  } else if (pod_reason == "DeadlineExceeded") {
    out = Ended(ExitKind::kTimedOut, -1,
                "stopped: time limit exceeded (activeDeadlineSeconds" +
                    (pod_message.empty() ? ")" : "): " + pod_message),
                pod_reason);
  } else if (phase == "Succeeded" || phase == "Failed") {
    // The first container that did not succeed says why (init containers first).
    const json* failed = nullptr;
    const json* any = nullptr;
    for (const json* c : Containers(status)) {
      const json& term = Field(Field(*c, "state"), "terminated");
      if (!term.is_object()) continue;
      if (!any) any = c;
      if (Field(term, "exitCode").is_number() && Field(term, "exitCode").get<int>() != 0) {
        failed = c;
        break;
      }
      if (Str(term, "reason") == "OOMKilled") {
        failed = c;
        break;
      }
    }
    const json* c = failed ? failed : any;
    const json& term = c ? Field(Field(*c, "state"), "terminated") : json();
    int code = Field(term, "exitCode").is_number() ? Field(term, "exitCode").get<int>()
                                                   : (phase == "Succeeded" ? 0 : -1);
    int sig = Field(term, "signal").is_number() ? Field(term, "signal").get<int>() : 0;
    std::string reason = Str(term, "reason");
    std::string container = c ? Str(*c, "name") : "";
    std::string in = container.empty() ? "" : "container " + container + ": ";
    std::string term_message = Str(term, "message");
    if (reason == "OOMKilled") {
      out = Ended(
          ExitKind::kOomKilled, code,
          "memory limit exceeded, OOM-killed (" + in + "exit code " + std::to_string(code) + ")",
          reason);
    } else if (phase == "Succeeded") {
      out = Ended(ExitKind::kSucceeded, 0, "exit code 0", reason.empty() ? "Completed" : reason);
    } else {
      std::string msg = in + (sig ? "killed by signal " + std::to_string(sig)
                                  : "exit code " + std::to_string(code));
      if (!term_message.empty()) msg += "; " + term_message.substr(0, 1024);
      if (!c && !pod_message.empty()) msg = pod_message;
      out = Ended(ExitKind::kFailed, code, msg, reason.empty() ? pod_reason : reason);
    }
    out.exit.signal = sig;
  } else {
    out.state = phase == "Running" ? PodOutcome::State::kRunning : PodOutcome::State::kPending;
    for (const json* c : Containers(status)) {
      const json& waiting = Field(Field(*c, "state"), "waiting");
      std::string reason = Str(waiting, "reason");
      std::string message = Str(waiting, "message");
      const char* code = nullptr;
      if (reason == "ErrImagePull" || reason == "ImagePullBackOff")
        code = codes::kImageNotFound;
      else if (reason == "InvalidImageName")
        code = codes::kImageReferenceInvalid;
      else if (reason == "CreateContainerConfigError")
        code = codes::kK8sContainerConfig;
      if (!code) continue;
      out.state = PodOutcome::State::kBlocked;
      out.reason = reason;
      out.exit.kind = ExitKind::kFailed;
      out.exit.code = code;
      std::string image = Str(*c, "image");
      out.exit.message =
          "container " + Str(*c, "name") + ": " + reason +
          (reason == "CreateContainerConfigError" || image.empty() ? ""
                                                                   : " (image \"" + image + "\")") +
          (message.empty() ? "" : ": " + message);
      break;
    }
  }
  out.exit.node = node;
  return out;
}

}  // namespace rsl::k8s
