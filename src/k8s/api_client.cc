#include "k8s/api_client.h"

#include <curl/curl.h>

#include <algorithm>
#include <chrono>
#include <memory>
#include <mutex>
#include <thread>

#include "base/codes.h"

namespace rsl::k8s {

namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};
using CurlPtr = std::unique_ptr<CURL, CurlDeleter>;
using SlistPtr = std::unique_ptr<curl_slist, CurlDeleter>;

size_t AppendBody(char* p, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(p, size * n);
  return size * n;
}

size_t OnHeader(char* p, size_t size, size_t n, void* user) {
  std::string_view line(p, size * n);
  constexpr std::string_view kRetryAfter = "retry-after:";
  if (line.size() > kRetryAfter.size()) {
    std::string lower;
    for (size_t i = 0; i < kRetryAfter.size(); ++i) lower.push_back((char)std::tolower(line[i]));
    if (lower == kRetryAfter) {
      std::string v(line.substr(kRetryAfter.size()));
      while (!v.empty() && (v.back() == '\r' || v.back() == '\n' || v.back() == ' ')) v.pop_back();
      while (!v.empty() && v.front() == ' ') v.erase(v.begin());
      *static_cast<std::string*>(user) = v;
    }
  }
  return size * n;
}

// Sets everything but the body handling on `c`: URL, TLS material, credentials, method.
// The header list is returned to be kept alive for the transfer.
SlistPtr Prepare(CURL* c, const Connection& conn, const std::string& method,
                 const std::string& path, const std::string* body,
                 const std::string& content_type) {
  GlobalInit();
  curl_easy_setopt(c, CURLOPT_URL, (conn.server + path).c_str());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, 10'000L);
  curl_easy_setopt(c, CURLOPT_TCP_KEEPALIVE, 1L);
  if (!conn.ca_pem.empty()) {
    curl_blob blob{const_cast<char*>(conn.ca_pem.data()), conn.ca_pem.size(), CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_CAINFO_BLOB, &blob);
  }
  if (conn.insecure_skip_tls_verify) {
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYPEER, 0L);
    curl_easy_setopt(c, CURLOPT_SSL_VERIFYHOST, 0L);
  }
  if (!conn.client_cert_pem.empty()) {
    curl_blob cert{const_cast<char*>(conn.client_cert_pem.data()), conn.client_cert_pem.size(),
                   CURL_BLOB_COPY};
    curl_blob key{const_cast<char*>(conn.client_key_pem.data()), conn.client_key_pem.size(),
                  CURL_BLOB_COPY};
    curl_easy_setopt(c, CURLOPT_SSLCERT_BLOB, &cert);
    curl_easy_setopt(c, CURLOPT_SSLCERTTYPE, "PEM");
    curl_easy_setopt(c, CURLOPT_SSLKEY_BLOB, &key);
    curl_easy_setopt(c, CURLOPT_SSLKEYTYPE, "PEM");
  }
  curl_slist* h = curl_slist_append(nullptr, "Accept: application/json");
  if (!conn.token.empty())
    h = curl_slist_append(h, ("Authorization: Bearer " + conn.token).c_str());
  if (!content_type.empty()) h = curl_slist_append(h, ("Content-Type: " + content_type).c_str());
  h = curl_slist_append(h, "Expect:");
  SlistPtr headers(h);
  curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  if (method != "GET") curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, method.c_str());
  if (body) {
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body->c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(body->size()));
  }
  return headers;
}

const char* CodeFor(long status, const std::string& reason) {
  if (status == 404) return codes::kNotFound;
  if (status == 409) return codes::kConflict;
  if (status == 410 || reason == "Expired" || reason == "Gone") return codes::kK8sGone;
  if (status == 422) return codes::kK8sInvalid;
  if (status == 401) return codes::kUnauthenticated;
  if (status == 403) return codes::kForbidden;
  if (status == 429) return codes::kTooManyRequests;
  return codes::kK8sApiError;
}

bool Retryable(long status) { return status == 429 || status >= 500; }

int64_t ParseRetryAfterMs(const std::string& v) {
  if (v.empty() || v.size() > 9) return 0;
  int64_t s = 0;
  for (char ch : v) {
    if (ch < '0' || ch > '9') return 0;  // an HTTP date: not sent by the API server
    s = s * 10 + (ch - '0');
  }
  return s * 1000;
}

struct StreamState {
  const std::function<bool(std::string_view)>* on_data = nullptr;
  const std::atomic<bool>* stop = nullptr;
  CURL* curl = nullptr;
  long status = 0;
  std::string error_body;
  bool stopped = false;
};

size_t OnStreamData(char* p, size_t size, size_t n, void* user) {
  auto* s = static_cast<StreamState*>(user);
  if (s->status == 0) curl_easy_getinfo(s->curl, CURLINFO_RESPONSE_CODE, &s->status);
  if (s->status >= 300) {
    if (s->error_body.size() < 64 * 1024) s->error_body.append(p, size * n);
    return size * n;
  }
  if (!(*s->on_data)(std::string_view(p, size * n))) {
    s->stopped = true;
    return 0;  // CURLE_WRITE_ERROR: stopped by the caller
  }
  return size * n;
}

int OnProgress(void* user, curl_off_t, curl_off_t, curl_off_t, curl_off_t) {
  auto* s = static_cast<StreamState*>(user);
  if (s->stop && s->stop->load()) {
    s->stopped = true;
    return 1;
  }
  return 0;
}

}  // namespace

Error StatusObjectError(const std::string& what, const nlohmann::json& status) {
  long code = status.value("code", 0L);
  std::string reason = status.value("reason", std::string());
  std::string message = status.value("message", std::string());
  std::string text = what + ": " + (reason.empty() ? "" : reason + ": ") +
                     (message.empty() ? "no message" : message) + " (HTTP " + std::to_string(code) +
                     ")";
  Error e(CodeFor(code, reason), text);
  e.Value(reason);
  if (code == 410) e.Hint("relist and watch from the new resourceVersion");
  return e;
}

Error ApiError(const std::string& method, const std::string& path, long http_status,
               const std::string& body) {
  const std::string what = method + " " + path;
  nlohmann::json j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.value("kind", std::string()) == "Status") {
    if (!j.contains("code") || !j["code"].is_number()) j["code"] = http_status;
    return StatusObjectError(what, j);
  }
  std::string snippet = body.substr(0, 200);
  Error e(CodeFor(http_status, ""),
          what + ": HTTP " + std::to_string(http_status) + (snippet.empty() ? "" : ": " + snippet));
  return e;
}

std::string QueryEscape(std::string_view value) {
  static const char* kHex = "0123456789ABCDEF";
  std::string out;
  for (unsigned char ch : value) {
    if (std::isalnum(ch) || ch == '-' || ch == '_' || ch == '.' || ch == '~') {
      out.push_back((char)ch);
    } else {
      out += '%';
      out += kHex[ch >> 4];
      out += kHex[ch & 15];
    }
  }
  return out;
}

ApiClient::ApiClient(Connection conn, RetryPolicy retry) : conn_(std::move(conn)), retry_(retry) {}

Result<ApiClient::Reply> ApiClient::SendOnce(const std::string& method, const std::string& path,
                                             const std::string& body,
                                             const std::string& content_type) {
  CurlPtr curl(curl_easy_init());
  if (!curl) return Error(codes::kIoError, "curl_easy_init failed");
  CURL* c = curl.get();
  bool has_body = method == "POST" || method == "PATCH" || method == "PUT" ||
                  (method == "DELETE" && !body.empty());
  SlistPtr headers = Prepare(c, conn_, method, path, has_body ? &body : nullptr, content_type);
  Reply reply;
  curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, 60'000L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, AppendBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &reply.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &reply.retry_after);
  ++stats_.requests;
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    return Error(codes::kIoError, method + " " + path + ": cannot reach " + conn_.server + ": " +
                                      curl_easy_strerror(rc))
        .Value(conn_.server);
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &reply.status);
  return reply;
}

Result<nlohmann::json> ApiClient::Call(const std::string& method, const std::string& path,
                                       const std::string& body, const std::string& content_type) {
  int64_t backoff = retry_.initial_backoff_ms;
  for (int attempt = 1;; ++attempt) {
    auto reply = SendOnce(method, path, body, content_type);
    bool last = attempt >= retry_.max_attempts;
    int64_t wait_ms = backoff;
    if (reply.ok() && reply->status < 300) {
      nlohmann::json j = nlohmann::json::parse(reply->body, nullptr, false);
      if (j.is_discarded()) {
        return Error(codes::kK8sApiError, method + " " + path + ": the answer is not JSON: " +
                                              reply->body.substr(0, 120));
      }
      return j;
    }
    if (reply.ok()) {
      if (!Retryable(reply->status) || last) {
        return ApiError(method, path, reply->status, reply->body);
      }
      if (reply->status == 429) {
        wait_ms = std::max(
            wait_ms, std::min(ParseRetryAfterMs(reply->retry_after), retry_.max_retry_after_ms));
      }
    } else if (last) {
      return reply.error();
    }
    ++stats_.retries;
    stats_.waited_ms += wait_ms;
    std::this_thread::sleep_for(std::chrono::milliseconds(wait_ms));
    backoff = std::min(backoff * 2, retry_.max_backoff_ms);
  }
}

Result<nlohmann::json> ApiClient::Get(const std::string& path) { return Call("GET", path, "", ""); }

Result<nlohmann::json> ApiClient::Create(const std::string& path, const nlohmann::json& object) {
  return Call("POST", path, object.dump(), "application/json");
}

Result<nlohmann::json> ApiClient::Delete(const std::string& path, const DeleteOptions& options) {
  nlohmann::json body = {{"kind", "DeleteOptions"}, {"apiVersion", "v1"}};
  if (options.grace_period_seconds >= 0) body["gracePeriodSeconds"] = options.grace_period_seconds;
  if (!options.propagation_policy.empty()) body["propagationPolicy"] = options.propagation_policy;
  return Call("DELETE", path, body.dump(), "application/json");
}

Result<nlohmann::json> ApiClient::MergePatch(const std::string& path, const nlohmann::json& patch) {
  return Call("PATCH", path, patch.dump(), "application/merge-patch+json");
}

Status ApiClient::Stream(const std::string& path,
                         const std::function<bool(std::string_view)>& on_data,
                         const std::atomic<bool>* stop) {
  CurlPtr curl(curl_easy_init());
  if (!curl) return Error(codes::kIoError, "curl_easy_init failed");
  CURL* c = curl.get();
  SlistPtr headers = Prepare(c, conn_, "GET", path, nullptr, "");
  StreamState state;
  state.on_data = &on_data;
  state.stop = stop;
  state.curl = c;
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnStreamData);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &state);
  curl_easy_setopt(c, CURLOPT_NOPROGRESS, 0L);
  curl_easy_setopt(c, CURLOPT_XFERINFOFUNCTION, OnProgress);
  curl_easy_setopt(c, CURLOPT_XFERINFODATA, &state);
  ++stats_.requests;
  CURLcode rc = curl_easy_perform(c);
  if (state.stopped) return Status::Ok();
  if (state.status == 0) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &state.status);
  if (state.status >= 300) return ApiError("GET", path, state.status, state.error_body);
  if (rc != CURLE_OK) {
    return Error(codes::kIoError, "GET " + path + ": stream from " + conn_.server +
                                      " cut: " + curl_easy_strerror(rc))
        .Value(conn_.server);
  }
  return Status::Ok();
}

}  // namespace rsl::k8s
