// Syntax checks for the names and references a spec contains. Each returns "" when the text
// is well-formed, otherwise a one-line reason usable in an error message.
#pragma once

#include <string>
#include <string_view>
#include <vector>

namespace rsl::spec {

inline constexpr size_t kMaxLabelLength = 63;       // RFC 1123 label
inline constexpr size_t kMaxSubdomainLength = 253;  // RFC 1123 subdomain

//! DNS-1123 label: a-z 0-9 '-', starts and ends alphanumeric, <= 63 chars.
std::string CheckDns1123Label(const std::string& name);
//! DNS-1123 subdomain: labels joined by '.', <= 253 chars.
std::string CheckDns1123Subdomain(const std::string& name);
//! Kubernetes label key ([prefix/]name) and value.
std::string CheckLabelKey(const std::string& key);
std::string CheckLabelValue(const std::string& value);
//! "sha256:" followed by 64 lower-case hex digits.
std::string CheckSha256Digest(const std::string& text);
//! Environment variable name: [A-Za-z_][A-Za-z0-9_]*.
std::string CheckEnvName(const std::string& name);
//! The basic variables the engine passes from its own environment to every step (PATH, HOME,
//! LANG, LC_ALL, TZ, TMPDIR, USER, LOGNAME): EngineOptions::inherited_env by default.
const std::vector<std::string>& EngineBasicEnvNames();

//! A configmap or secret key: steps get it as an environment variable (envFrom), so it must
//! be an environment variable name (CheckEnvName) that RSL does not set itself: not RSL_*
//! (RSL's own variables, set after envFrom), not CUDA_VISIBLE_DEVICES (set to the GPUs the
//! step is placed on), and, for a secret, none of the basic variables the engine passes to
//! every step (EngineBasicEnvNames): a secret's value is
//! masked wherever it appears in a log, and there is nothing secret about a search path. A
//! configmap may set those, like a step's env. Returns "" when `key` is fine, else the reason,
//! with a one-line fix in `hint`.
std::string CheckEnvFromKey(const std::string& key, bool secret, std::string* hint);

//! Secret values shorter than this many bytes are not masked in logs: replacing a two-letter
//! value everywhere it occurs damages ordinary text ("about a cab" -> "***out a c***") and
//! says as much about the value as it hides. Creating such a secret returns a warning.
inline constexpr size_t kMinMaskedSecretBytes = 4;
//! True when `value` is long enough to be masked (kMinMaskedSecretBytes).
inline bool MaskedInLogs(const std::string& value) { return value.size() >= kMinMaskedSecretBytes; }

//! Semantic version MAJOR.MINOR.PATCH[-pre][+build] (a leading 'v' is not allowed).
std::string CheckSemver(const std::string& version);

//! The candidate a misspelled `word` most likely meant: base ClosestMatch, plus distance 2 for
//! words of 4+ characters (so a transposition like "trian" -> "train" is caught). "" if none.
std::string DidYouMean(const std::string& word, const std::vector<std::string>& candidates);

//! RSL_INPUT_<DEP>, the variable that hands a dependency's output to a step: the step name
//! upper-cased with every character other than A-Z and 0-9 turned into '_'.
std::string StepInputVariable(const std::string& step);
//! The variable the engine sets itself that StepInputVariable could also produce:
//! RSL_INPUT_URI (data.input's URI). A step whose name maps onto it is refused (names are
//! DNS-1123 labels, so only `uri` does).
bool IsReservedStepName(const std::string& step);

//! PEP 503: runs of '-', '_', '.' become one '-', and the name is lower-cased
//! ("Scikit_Learn" and "scikit-learn" are one project).
std::string NormalizePackageName(std::string_view name);

//! SPEC.md's tensor dtypes: bool, int8..int64, uint8..uint64, float16, bfloat16, float32,
//! float64, string; and the FP8 formats float8_e4m3fn and float8_e5m2 (RSL extension).
const std::vector<std::string>& Dtypes();
bool IsDtype(const std::string& dtype);

}  // namespace rsl::spec
