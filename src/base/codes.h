// The stable error codes (../../docs/errors.md lists what each means). The CLI prints the code
// of the first error on its last line and exits non-zero.
#pragma once

namespace rsl::codes {

inline constexpr char kSpecParseError[] = "SPEC_PARSE_ERROR";
inline constexpr char kSpecInvalid[] = "SPEC_INVALID";
inline constexpr char kExpressionInvalid[] = "EXPRESSION_INVALID";
inline constexpr char kDataSourceNotFound[] = "DATA_SOURCE_NOT_FOUND";
inline constexpr char kDataSourceUnreachable[] = "DATA_SOURCE_UNREACHABLE";
inline constexpr char kDataSchemaMismatch[] = "DATA_SCHEMA_MISMATCH";
inline constexpr char kDataConstraintViolation[] = "DATA_CONSTRAINT_VIOLATION";
inline constexpr char kDataCompleteness[] = "DATA_QUALITY_COMPLETENESS_BELOW_THRESHOLD";
inline constexpr char kDataUniqueness[] = "DATA_QUALITY_UNIQUENESS_BELOW_THRESHOLD";
inline constexpr char kDataFreshness[] = "DATA_QUALITY_FRESHNESS_EXCEEDED";
inline constexpr char kDataFormatError[] = "DATA_FORMAT_ERROR";  // corrupt/truncated file
inline constexpr char kImageNotFound[] = "IMAGE_NOT_FOUND";
inline constexpr char kImageReferenceInvalid[] = "IMAGE_REFERENCE_INVALID";
inline constexpr char kImagePullFailed[] = "IMAGE_PULL_FAILED";       // pull or unpack for running
inline constexpr char kGpuDeviceNotFound[] = "GPU_DEVICE_NOT_FOUND";  // a placed GPU's node
inline constexpr char kModelDependencyMismatch[] = "MODEL_DEPENDENCY_MISMATCH";
inline constexpr char kModelFingerprintMismatch[] = "MODEL_FINGERPRINT_MISMATCH";
inline constexpr char kOutputSchemaMismatch[] = "OUTPUT_SCHEMA_MISMATCH";
inline constexpr char kOutputConflict[] = "OUTPUT_CONFLICT";
inline constexpr char kOutputSuperseded[] = "OUTPUT_SUPERSEDED";
inline constexpr char kInsufficientResources[] = "INSUFFICIENT_RESOURCES";
inline constexpr char kStepFailed[] = "STEP_FAILED";
inline constexpr char kStepOomKilled[] = "STEP_OOM_KILLED";
inline constexpr char kStepTimedOut[] = "STEP_TIMED_OUT";
inline constexpr char kPostProcessFailed[] = "POST_PROCESS_FAILED";  // a required hook failed
inline constexpr char kWorkloadTimedOut[] = "WORKLOAD_TIMED_OUT";
inline constexpr char kWorkloadCancelled[] = "WORKLOAD_CANCELLED";
inline constexpr char kNodeLost[] = "NODE_LOST";
inline constexpr char kServingPortInUse[] = "SERVING_PORT_IN_USE";
inline constexpr char kServingProxyMissing[] = "SERVING_PROXY_MISSING";
inline constexpr char kServingNotReady[] = "SERVING_NOT_READY";
inline constexpr char kUnauthenticated[] = "UNAUTHENTICATED";
inline constexpr char kForbidden[] = "FORBIDDEN";
inline constexpr char kNotFound[] = "NOT_FOUND";
inline constexpr char kConflict[] = "CONFLICT";
inline constexpr char kTooManyRequests[] = "TOO_MANY_REQUESTS";  // a client over its share
inline constexpr char kInternal[] = "INTERNAL";
inline constexpr char kIoError[] = "IO_ERROR";
inline constexpr char kInvalidArgument[] = "INVALID_ARGUMENT";  // bad CLI flag or API body
// A config file (rsl-controller --config, seedctl's contexts): unknown key, wrong type, bad YAML.
inline constexpr char kConfigInvalid[] = "CONFIG_INVALID";
// The state directory's database has schema versions this binary does not know: a newer RSL
// wrote it (a package downgraded, an older seedctl pointed at a newer controller's state).
inline constexpr char kStateSchemaTooNew[] = "STATE_SCHEMA_TOO_NEW";
// Kubernetes (src/k8s): the connection and the API server's answers.
inline constexpr char kKubeconfigInvalid[] = "KUBECONFIG_INVALID";
inline constexpr char kK8sApiError[] = "K8S_API_ERROR";  // 5xx after retries, malformed answer
inline constexpr char kK8sGone[] = "K8S_GONE";           // 410: resourceVersion too old
inline constexpr char kK8sInvalid[] = "K8S_INVALID";     // 422: the object was refused
inline constexpr char kK8sContainerConfig[] = "K8S_CONTAINER_CONFIG_ERROR";

}  // namespace rsl::codes
