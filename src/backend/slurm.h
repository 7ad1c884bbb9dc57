// The Slurm backend (issue 7): each attempt is one sbatch job. OWNER: the Slurm engineer.
#pragma once

#include <memory>

#include "backend/backend.h"
#include "backend/factory.h"
#include "base/status.h"

namespace rsl::backend {

Result<std::unique_ptr<Backend>> NewSlurmBackend(const BackendOptions& options);

}  // namespace rsl::backend
