#include "backend/slurm.h"

#include "base/codes.h"

namespace rsl::backend {

// Placeholder until the Slurm backend lands.
Result<std::unique_ptr<Backend>> NewSlurmBackend(const BackendOptions& options) {
  return Error(codes::kInvalidArgument, "the slurm backend is not built yet");
}

}  // namespace rsl::backend
