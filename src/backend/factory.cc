#include "backend/factory.h"

#include "backend/local.h"
#include "backend/slurm.h"
#include "base/codes.h"
#include "base/strings.h"

namespace rsl::backend {

const char* ExitKindName(ExitKind kind) {
  switch (kind) {
    case ExitKind::kSucceeded:
      return "Succeeded";
    case ExitKind::kFailed:
      return "Failed";
    case ExitKind::kOomKilled:
      return "OOMKilled";
    case ExitKind::kTimedOut:
      return "TimedOut";
    case ExitKind::kCancelled:
      return "Cancelled";
    case ExitKind::kNodeLost:
      return "NodeLost";
  }
  return "Unknown";
}

Result<std::unique_ptr<Backend>> MakeBackend(const std::string& name,
                                             const BackendOptions& options) {
  if (name == "local") return NewLocalBackend(options);
  if (name == "slurm") return NewSlurmBackend(options);
  if (name == "k8s") {
    return Error(codes::kInvalidArgument, "the k8s backend is made by the runtime")
        .Value(name)
        .Hint("use runtime::MakeAnyBackend (seedctl run and rsl-controller do)");
  }
  std::vector<std::string> known = {"local", "slurm", "k8s"};
  return Error(codes::kInvalidArgument, "unknown backend " + Quote(name))
      .Value(name)
      .Hint(ClosestHint(name, known, "use --backend local, slurm or k8s"));
}

}  // namespace rsl::backend
