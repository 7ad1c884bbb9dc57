// The Slurm backend: each attempt is one sbatch job.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/factory.h"
#include "base/status.h"

namespace rsl::backend {

Result<std::unique_ptr<Backend>> NewSlurmBackend(const BackendOptions& options);

}  // namespace rsl::backend
