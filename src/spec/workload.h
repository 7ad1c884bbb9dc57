// The AIWorkload model (../../../shared/SPEC.md, docs/spec.md): what `ParseWorkload` produces
// once shorthands are expanded and defaults filled. Every field keeps the source position it
// came from (`positions`) so later checks (admission, data, model) can point at the YAML.
#pragma once

#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "base/status.h"
#include "schema/schema.h"

namespace rsl::spec {

inline constexpr char kApiVersion[] = "aiengine.volc.com/v1";
inline constexpr char kKind[] = "AIWorkload";
inline constexpr char kDefaultNamespace[] = "default";

//! Device request. `gpu: "2"` is {count: 2}.
struct GpuRequest {
  int64_t count = 0;
  std::vector<std::string> capabilities;  //!< all must hold on the chosen device
  std::optional<int64_t> memory_bytes;    //!< minimum device memory
};

struct Autoscaling {
  int64_t target_utilization = 0;  //!< percent
  int64_t min_replicas = 1;
  int64_t max_replicas = 1;
  //! Scale down only when every recommendation of this window was lower (Kubernetes HPA's
  //! stabilization window, whose default this is).
  int64_t scale_down_delay_ms = 300'000;
};

//! When a serving step's replica takes traffic (Kubernetes' readinessProbe.httpGet): a GET of
//! `path` on the replica's port answers 2xx. `failure_threshold` failures in a row take a
//! ready replica out of rotation.
struct ReadinessProbe {
  std::string path = "/healthz";
  std::optional<int64_t> port;  //!< unset: the replica's RSL_PORT
  int64_t period_ms = 1'000;
  int64_t failure_threshold = 3;
};

//! Requests. Unset fields inherit from spec.resources (steps override field by field).
struct Resources {
  std::optional<int64_t> cpu_millis;    //!< "500m" = 500, "8" = 8000, 2.5 = 2500
  std::optional<int64_t> memory_bytes;  //!< "32Gi", "1G", plain bytes
  std::optional<GpuRequest> gpu;
  std::optional<Autoscaling> autoscaling;
};

struct Quality {
  std::optional<double> completeness;     //!< percent 0..100
  std::optional<double> uniqueness;       //!< percent 0..100
  std::optional<std::string> unique_key;  //!< explicit, or resolved by the default rule
  std::optional<int64_t> freshness_ms;
};

struct DataInput {
  std::string uri;
  std::string format;  //!< avro | csv | jsonl | parquet | "" (by extension / magic)
  std::string schema_text;
  std::optional<schema::Schema> schema;  //!< parsed schema_text
  Quality quality;
};

//! What a commit does to an output root that another run already committed to
//! (docs/engine.md "Two runs, one output root").
enum class OutputPolicy {
  kReplace,    //!< the later commit replaces the earlier one, which is recorded as superseded
  kRefuse,     //!< admission refuses a run while another run of the same root is in flight
  kVersioned,  //!< each run commits under <uri>/<run id>/; <uri>/latest moves to it
};
//! "replace" | "refuse" | "versioned".
const char* OutputPolicyName(OutputPolicy p);

struct DataOutput {
  std::string uri;
  OutputPolicy policy = OutputPolicy::kReplace;
  std::string schema_ref;  //!< "input" or ""
  std::vector<schema::FeatureDecl> features;
  std::optional<schema::Schema> schema;  //!< resolved: input schema + features
};

struct DataSpec {
  std::optional<DataInput> input;
  std::optional<DataOutput> output;
};

//! A tensor in a model signature or a step's declared outputs.
struct TensorSpec {
  std::string name;
  std::string dtype;                               //!< one of SPEC.md's dtypes
  std::vector<int64_t> shape;                      //!< -1 = any size (first dimension only)
  std::optional<std::pair<double, double>> range;  //!< constraints.range [lo, hi]
  //! constraints.range's ends when both are written as integers that fit int64: integer
  //! tensors are compared with these exactly (a double holds integers only up to 2^53).
  std::optional<std::pair<int64_t, int64_t>> int_range = std::nullopt;
};

//! "torch==2.1.2+cu118" -> {name: torch, version: 2.1.2+cu118}.
struct Dependency {
  std::string name;
  std::string version;
  std::string ToString() const { return name + "==" + version; }
};

struct ModelSpec {
  std::string framework;  //!< pytorch | tensorflow | onnx | sklearn | xgboost | custom
  std::string version;
  std::string build_fingerprint;  //!< "sha256:<64 hex>" or ""
  std::vector<Dependency> dependencies;
  std::vector<TensorSpec> inputs;
  std::vector<TensorSpec> outputs;
};

struct RetryPolicy {
  int64_t max_retries = 0;
  int64_t backoff_ms = 0;
  double backoff_factor = 1.0;  //!< delay(n) = backoff * factor^(n-1)
  std::optional<int64_t> max_backoff_ms;
};

struct EnvFrom {
  enum class Kind { kConfigMap, kSecret };
  Kind kind = Kind::kConfigMap;
  std::string name;
};

//! A header of a postProcess webhook: a literal value, or one key of a secret (resolved when
//! the request is sent; the value never enters events, logs or errors).
struct HookHeader {
  std::string name;
  std::string value;        //!< literal, when secret_name is ""
  std::string secret_name;  //!< {secretRef: <name>, key: <key>}
  std::string secret_key;
};

//! postProcess[].webhook defaults (docs/spec.md): a receiver that is briefly away gets three
//! more tries, 1 s, 2 s and 4 s apart; one try may take 10 s.
inline constexpr int64_t kDefaultHookRetries = 3;
inline constexpr int64_t kDefaultHookTimeoutMs = 10'000;

//! A hook run after a step ends (postProcess): a webhook sent when the step ended the way
//! `on` says and `when` holds.
struct PostProcess {
  std::string when;  //!< expression text; "" = always
  bool on_success = true;
  bool on_failure = false;
  //! A failed hook fails its step (POST_PROCESS_FAILED); only a succeeded step waits for it.
  bool required = false;
  std::string url;
  std::string method = "POST";
  std::vector<HookHeader> headers;
  std::string body;  //!< template: `{{ expr }}` replaced by the value as JSON-safe text
  int64_t retries = kDefaultHookRetries;
  int64_t timeout_ms = kDefaultHookTimeoutMs;  //!< one try
};

struct Step {
  std::string name;
  std::string image;                 //!< "" = the backend's default environment
  std::vector<std::string> command;  //!< empty = the image's entrypoint
  std::vector<std::string> args;
  std::map<std::string, std::string> env;  //!< plain environment variables
  std::vector<std::string> depends_on;
  std::string when;     //!< expression text; "" = always
  Resources resources;  //!< as written on the step (overrides)
  Resources effective;  //!< spec.resources merged with the step's overrides
  RetryPolicy retry;
  std::vector<EnvFrom> env_from;
  bool keep_on_failure = false;
  std::optional<int64_t> timeout_ms;
  std::vector<TensorSpec> outputs;  //!< tensors the step declares it writes
  std::vector<PostProcess> post_process;
  //! A long-running service (RSL extension `serving: true`; also implied for the only step of
  //! a pipeline that requests autoscaling). Autoscaling applies only to serving steps.
  bool serving = false;
  // Serving steps only (validation refuses them elsewhere):
  ReadinessProbe readiness;
  std::optional<int64_t> port;         //!< the endpoint's port; unset: RSL allocates one
  int64_t ready_timeout_ms = 300'000;  //!< minReplicas must be ready within this (readyTimeout)
};

struct Pipeline {
  bool atomic = true;
  std::vector<Step> steps;
};

struct Workload {
  std::string api_version;
  std::string kind;
  std::string name;
  std::string namespace_ = kDefaultNamespace;
  std::map<std::string, std::string> labels;
  std::map<std::string, std::string> annotations;
  Resources resources;
  DataSpec data;
  std::optional<ModelSpec> model;
  Pipeline pipeline;
  std::optional<int64_t> timeout_ms;  //!< spec.timeout or spec.pipeline.timeout
  //! spec.imagePullSecrets: secrets of the namespace holding registry credentials (keys
  //! REGISTRY, USERNAME, PASSWORD) for the steps' images (docs/image.md).
  std::vector<std::string> image_pull_secrets;

  std::string source_file;  //!< where it was parsed from (for messages)
  //! Field path ("spec.pipeline.steps[2].when") -> position of its value in the source.
  std::map<std::string, SourcePos> positions;

  const Step* FindStep(const std::string& step_name) const;
  //! Position of a path, or of its nearest known ancestor, or the file alone.
  SourcePos PosOf(const std::string& path) const;
};

//! The field path of step `index` of the pipeline: "spec.pipeline.steps[2]" (messages and
//! Workload::positions use it).
std::string StepPath(size_t index);

//! `over` applied field by field on `base` (inside gpu too: a step's gpu: "2" keeps the
//! workload's capability list and memory unless it sets its own).
Resources MergeResources(const Resources& base, const Resources& over);

}  // namespace rsl::spec
