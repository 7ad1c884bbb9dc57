#pragma once

// A plain HTTPS client for the Kubernetes API: JSON in and out on a resource path
// (`/api/v1/namespaces/NS/pods/NAME`), no generated types. Authentication and TLS come from a
// Connection (kubeconfig.h): CA data, client certificate and key from memory, bearer token.
//
// Errors carry the API's Status object (reason, code, message) as an Error:
//   404 NotFound -> NOT_FOUND; 409 AlreadyExists / Conflict -> CONFLICT; 410 Gone / Expired ->
//   K8S_GONE; 422 Invalid -> K8S_INVALID; 401 -> UNAUTHENTICATED; 403 -> FORBIDDEN;
//   429 after the retries -> TOO_MANY_REQUESTS; 5xx after the retries, or an answer that is not
//   JSON -> K8S_API_ERROR; no answer -> IO_ERROR.
// The message reads `POST /api/v1/namespaces/a/pods: AlreadyExists: pods "x" already exists
// (HTTP 409)`; the Error's value is the API's reason (`AlreadyExists`), so that a caller can
// tell AlreadyExists from Conflict. The bearer token never appears in an error or a log.
//
// Retries (bounded by RetryPolicy): 429 waits for Retry-After (seconds, capped) or the
// backoff, whichever is longer; 5xx and no answer wait for an exponential backoff. A create
// retried after a 5xx may answer 409 AlreadyExists for the object the first try made: callers
// that name objects deterministically treat that as success.
//
// Threading: every call uses its own curl handle; one ApiClient serves many threads.

#include <atomic>
#include <cstdint>
#include <functional>
#include <string>
#include <string_view>

#include <nlohmann/json.hpp>

#include "base/status.h"
#include "k8s/kubeconfig.h"

namespace rsl::k8s {

struct RetryPolicy {
  int max_attempts = 5;              //!< tries of one request (1 = no retry)
  int64_t initial_backoff_ms = 200;  //!< doubled after each try
  int64_t max_backoff_ms = 5'000;
  //! A server asking for longer (Retry-After) is waited for this long at most: a client
  //! should not hang for minutes on one call; the caller retries later.
  int64_t max_retry_after_ms = 30'000;
};

struct DeleteOptions {
  int64_t grace_period_seconds = -1;  //!< -1: the object's default
  std::string propagation_policy;     //!< "" | Foreground | Background | Orphan
};

//! What the client did (for tests and `--verbose`): counts since construction.
struct ApiStats {
  std::atomic<int64_t> requests{0};   //!< HTTP requests sent (retries included)
  std::atomic<int64_t> retries{0};    //!< tries after the first
  std::atomic<int64_t> waited_ms{0};  //!< time slept before retries
};

class ApiClient {
 public:
  explicit ApiClient(Connection conn, RetryPolicy retry = {});

  const Connection& connection() const { return conn_; }
  const ApiStats& stats() const { return stats_; }

  //! GET `path` (with its query): the object or List.
  Result<nlohmann::json> Get(const std::string& path);
  //! POST `object` to the collection `path`: the created object.
  Result<nlohmann::json> Create(const std::string& path, const nlohmann::json& object);
  //! DELETE `path` with a DeleteOptions body: the deleted object or a Status.
  Result<nlohmann::json> Delete(const std::string& path, const DeleteOptions& options = {});
  //! PATCH `path` with a JSON merge patch (RFC 7386): the patched object.
  Result<nlohmann::json> MergePatch(const std::string& path, const nlohmann::json& patch);

  //! GET `path` and hand the body to `on_data` as it arrives (watch streams, pods/log with
  //! follow). Returns when the server ends the response (OK), when `on_data` returns false or
  //! `*stop` becomes true (OK: stopped by the caller), or on an error: an HTTP error status
  //! (typed as above, e.g. K8S_GONE) before any data, or IO_ERROR when the stream is cut
  //! (connection closed mid-response). No retries: the caller resumes (watch.h).
  Status Stream(const std::string& path, const std::function<bool(std::string_view)>& on_data,
                const std::atomic<bool>* stop = nullptr);

 private:
  struct Reply {
    long status = 0;
    std::string body;
    std::string retry_after;
  };
  Result<nlohmann::json> Call(const std::string& method, const std::string& path,
                              const std::string& body, const std::string& content_type);
  Result<Reply> SendOnce(const std::string& method, const std::string& path,
                         const std::string& body, const std::string& content_type);

  Connection conn_;
  RetryPolicy retry_;
  ApiStats stats_;
};

//! The Error for an HTTP error answer: its Status object's reason and message when the body is
//! one, else the status line. Exposed for the watch's ERROR events and for tests.
Error ApiError(const std::string& method, const std::string& path, long http_status,
               const std::string& body);
//! The same for a Status object already parsed (a watch ERROR event's object).
Error StatusObjectError(const std::string& what, const nlohmann::json& status);

//! Percent-encodes a query value (label selectors hold '=' and ',').
std::string QueryEscape(std::string_view value);

}  // namespace rsl::k8s
