// Pod statuses in the shapes the API server reports them (core/v1 PodStatus: phase, reason,
// message, conditions, containerStatuses[].state.{waiting,running,terminated}), mapped to
// the attempt outcome the engine sees.
#include "k8s/pod_status.h"

#include <gtest/gtest.h>

#include "base/codes.h"

namespace rsl::k8s {
namespace {

using backend::ExitKind;
using State = PodOutcome::State;

struct Case {
  const char* name;
  const char* pod;  // JSON
  bool node_lost;
  State state;
  ExitKind kind;
  int exit_code;
  std::string code;
  std::string message;
};

TEST(PodStatus, Table) {
  const std::vector<Case> cases = {
      {"pending, unscheduled",
       R"({"status":{"phase":"Pending","conditions":[{"type":"PodScheduled","status":"False",
          "reason":"Unschedulable","message":"0/3 nodes are available: 3 Insufficient nvidia.com/gpu."}]}})",
       false, State::kPending, ExitKind::kFailed, -1, "", ""},
      {"container creating",
       R"({"spec":{"nodeName":"n1"},"status":{"phase":"Pending","containerStatuses":[{"name":"main",
          "image":"r/x:1","ready":false,"restartCount":0,"state":{"waiting":{"reason":"ContainerCreating"}}}]}})",
       false, State::kPending, ExitKind::kFailed, -1, "", ""},
      {"running",
       R"({"spec":{"nodeName":"n1"},"status":{"phase":"Running","containerStatuses":[{"name":"main",
          "ready":true,"restartCount":0,"state":{"running":{"startedAt":"2026-12-02T10:00:00Z"}}}]}})",
       false, State::kRunning, ExitKind::kFailed, -1, "", ""},
      {"succeeded",
       R"({"spec":{"nodeName":"n1"},"status":{"phase":"Succeeded","containerStatuses":[{"name":"main",
          "state":{"terminated":{"exitCode":0,"reason":"Completed","startedAt":"2026-12-02T10:00:00Z",
          "finishedAt":"2026-12-02T10:01:00Z"}}}]}})",
       false, State::kEnded, ExitKind::kSucceeded, 0, "", "exit code 0"},
      {"failed exit 3 with termination message",
       R"({"spec":{"nodeName":"n1"},"status":{"phase":"Failed","containerStatuses":[{"name":"main",
          "state":{"terminated":{"exitCode":3,"reason":"Error","message":"loss is NaN"}}}]}})",
       false, State::kEnded, ExitKind::kFailed, 3, "", "container main: exit code 3; loss is NaN"},
      {"failed init container",
       R"({"status":{"phase":"Failed","initContainerStatuses":[{"name":"fetch",
          "state":{"terminated":{"exitCode":2,"reason":"Error"}}}],"containerStatuses":[{"name":"main",
          "state":{"waiting":{"reason":"PodInitializing"}}}]}})",
       false, State::kEnded, ExitKind::kFailed, 2, "", "container fetch: exit code 2"},
      {"killed by signal",
       R"({"status":{"phase":"Failed","containerStatuses":[{"name":"main",
          "state":{"terminated":{"exitCode":137,"signal":9,"reason":"Error"}}}]}})",
       false, State::kEnded, ExitKind::kFailed, 137, "", "container main: killed by signal 9"},
      {"oom killed",
       R"({"spec":{"nodeName":"gpu-2"},"status":{"phase":"Failed","containerStatuses":[{"name":"main",
          "state":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}})",
       false, State::kEnded, ExitKind::kOomKilled, 137, "",
       "memory limit exceeded, OOM-killed (container main: exit code 137)"},
      {"deadline exceeded",
       R"({"status":{"phase":"Failed","reason":"DeadlineExceeded",
          "message":"Pod was active on the node longer than the specified deadline"}})",
       false, State::kEnded, ExitKind::kTimedOut, -1, "",
       "stopped: time limit exceeded (activeDeadlineSeconds): Pod was active on the node longer "
       "than the specified deadline"},
      {"evicted",
       R"({"spec":{"nodeName":"n3"},"status":{"phase":"Failed","reason":"Evicted",
          "message":"The node was low on resource: memory. ","containerStatuses":[{"name":"main",
          "state":{"terminated":{"exitCode":137,"reason":"ContainerStatusUnknown"}}}]}})",
       false, State::kEnded, ExitKind::kNodeLost, -1, "",
       "pod evicted on node n3: The node was low on resource: memory. "},
      {"disruption target",
       R"({"spec":{"nodeName":"n3"},"status":{"phase":"Failed","conditions":[{"type":"DisruptionTarget",
          "status":"True","reason":"DeletionByTaintManager","message":"Taint manager: deleting due to NoExecute taint"}],
          "containerStatuses":[{"name":"main","state":{"terminated":{"exitCode":143,"reason":"Error"}}}]}})",
       false, State::kEnded, ExitKind::kNodeLost, -1, "",
       "pod disrupted on node n3 (DeletionByTaintManager: Taint manager: deleting due to "
       "NoExecute taint)"},
      {"phase unknown", R"({"spec":{"nodeName":"n4"},"status":{"phase":"Unknown"}})", false,
       State::kEnded, ExitKind::kNodeLost, -1, "",
       "node lost on node n4: the pod's state is unknown"},
      {"running on a lost node", R"({"spec":{"nodeName":"n5"},"status":{"phase":"Running"}})", true,
       State::kEnded, ExitKind::kNodeLost, -1, "",
       "node lost on node n5: the pod's state is unknown"},
      {"succeeded before the node was lost",
       R"({"status":{"phase":"Succeeded","containerStatuses":[{"name":"main",
          "state":{"terminated":{"exitCode":0,"reason":"Completed"}}}]}})",
       true, State::kEnded, ExitKind::kSucceeded, 0, "", "exit code 0"},
      {"image pull back-off",
       R"({"status":{"phase":"Pending","containerStatuses":[{"name":"main","image":"r.example/x:v9",
          "state":{"waiting":{"reason":"ImagePullBackOff","message":"Back-off pulling image \"r.example/x:v9\""}}}]}})",
       false, State::kBlocked, ExitKind::kFailed, -1, codes::kImageNotFound,
       "container main: ImagePullBackOff (image \"r.example/x:v9\"): Back-off pulling image "
       "\"r.example/x:v9\""},
      {"err image pull",
       R"({"status":{"phase":"Pending","containerStatuses":[{"name":"main","image":"r.example/x:v9",
          "state":{"waiting":{"reason":"ErrImagePull","message":"rpc error: code = NotFound desc = failed to pull and unpack image \"r.example/x:v9\": not found"}}}]}})",
       false, State::kBlocked, ExitKind::kFailed, -1, codes::kImageNotFound,
       "container main: ErrImagePull (image \"r.example/x:v9\"): rpc error: code = NotFound desc "
       "= failed to pull and unpack image \"r.example/x:v9\": not found"},
      {"invalid image name",
       R"({"status":{"phase":"Pending","containerStatuses":[{"name":"main","image":"X Y",
          "state":{"waiting":{"reason":"InvalidImageName","message":"couldn't parse image reference \"X Y\""}}}]}})",
       false, State::kBlocked, ExitKind::kFailed, -1, codes::kImageReferenceInvalid,
       "container main: InvalidImageName (image \"X Y\"): couldn't parse image reference \"X Y\""},
      {"missing secret",
       R"({"status":{"phase":"Pending","containerStatuses":[{"name":"main","image":"r/x:1",
          "state":{"waiting":{"reason":"CreateContainerConfigError","message":"secret \"db-creds\" not found"}}}]}})",
       false, State::kBlocked, ExitKind::kFailed, -1, codes::kK8sContainerConfig,
       "container main: CreateContainerConfigError: secret \"db-creds\" not found"},
      {"empty object", R"({})", false, State::kPending, ExitKind::kFailed, -1, "", ""},
      {"not even an object", R"([1,2])", false, State::kPending, ExitKind::kFailed, -1, "", ""},
      {"wrong types everywhere",
       R"({"spec":5,"status":{"phase":7,"containerStatuses":"x","conditions":{"a":1}}})", false,
       State::kPending, ExitKind::kFailed, -1, "", ""},
  };
  for (const auto& c : cases) {
    auto pod = nlohmann::json::parse(c.pod);
    PodOutcome o = ClassifyPod(pod, c.node_lost);
    EXPECT_EQ(Name(o.state), std::string(Name(c.state))) << c.name;
    if (o.state == State::kEnded || o.state == State::kBlocked) {
      EXPECT_EQ(backend::ExitKindName(o.exit.kind), std::string(backend::ExitKindName(c.kind)))
          << c.name;
      EXPECT_EQ(o.exit.exit_code, c.exit_code) << c.name;
      EXPECT_EQ(o.exit.code, c.code) << c.name;
      EXPECT_EQ(o.exit.message, c.message) << c.name;
    }
  }
}

TEST(PodStatus, NodeAndReasonAreKept) {
  auto pod = nlohmann::json::parse(
      R"({"spec":{"nodeName":"gpu-2"},"status":{"phase":"Failed","containerStatuses":[{"name":"main",
          "state":{"terminated":{"exitCode":137,"reason":"OOMKilled"}}}]}})");
  PodOutcome o = ClassifyPod(pod);
  EXPECT_EQ(o.exit.node, "gpu-2");
  EXPECT_EQ(o.reason, "OOMKilled");
}

}  // namespace
}  // namespace rsl::k8s
