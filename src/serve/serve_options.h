// How serving steps run (serve/replica_set.h): the HAProxy executable, where the endpoint and
// the replicas listen, and the timings. Apart from the replica set so that what builds the
// stack (runtime.h) does not depend on its internals.
#pragma once

#include <cstdint>
#include <string>

#include "serve/autoscaler.h"
#include "serve/haproxy.h"

namespace rsl::serve {

struct ServeOptions {
  std::string haproxy = kDefaultHaproxy;
  std::string bind_host = "0.0.0.0";  //!< where the endpoint listens
  std::string replica_host =
      "127.0.0.1";        //!< where local replicas listen (and the endpoint's URL host)
  int64_t tick_ms = 100;  //!< how often the loop looks at replicas
  int64_t evaluate_period_ms = kEvaluatePeriodMs;
  //! A draining replica is stopped once HAProxy shows no session on it, or after this.
  int64_t drain_timeout_ms = 30'000;
  int64_t restart_backoff_ms = 1'000;  //!< first restart; doubles per restart of a replica
  int64_t max_restart_backoff_ms = 30'000;
  //! Replicas' SIGTERM -> SIGKILL grace when scaled down.
  int64_t stop_grace_ms = 10'000;
  //! Where a serving step requests GPUs, its replicas' utilization is their devices' GPU
  //! utilization from this nvidia-smi (gpu_utilization.h), else their CPU use. "" = CPU only.
  std::string nvidia_smi = "nvidia-smi";
};

}  // namespace rsl::serve
