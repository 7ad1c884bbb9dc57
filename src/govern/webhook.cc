#include "govern/webhook.h"

#include <curl/curl.h>

#include <chrono>
#include <mutex>
#include <thread>

#include "base/codes.h"

namespace rsl::govern {

namespace {

size_t Discard(char*, size_t size, size_t n, void*) { return size * n; }

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

}  // namespace

std::string RedactUrl(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  size_t host_start = scheme + 3;
  size_t at = url.find('@', host_start);
  size_t slash = url.find('/', host_start);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return url;
  return url.substr(0, host_start) + "***" + url.substr(at);
}

Status PostJson(const std::string& url, const std::string& body, int retries,
                WebhookResult* result) {
  GlobalInit();
  WebhookResult r;
  std::string last_error;
  for (int attempt = 1; attempt <= 1 + std::max(0, retries); ++attempt) {
    if (attempt > 1) {
      std::this_thread::sleep_for(std::chrono::milliseconds(kWebhookBackoffMs << (attempt - 2)));
    }
    r.attempts = attempt;
    CURL* c = curl_easy_init();
    if (!c) {
      last_error = "curl_easy_init failed";
      continue;
    }
    struct curl_slist* headers = nullptr;
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "User-Agent: rsl-govern/0.1");
    curl_easy_setopt(c, CURLOPT_URL, url.c_str());
    curl_easy_setopt(c, CURLOPT_POST, 1L);
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, body.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE, static_cast<long>(body.size()));
    curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, static_cast<long>(kWebhookTimeoutMs));
    curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, Discard);
    CURLcode rc = curl_easy_perform(c);
    long status = 0;
    if (rc == CURLE_OK) curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(c);
    r.http_status = status;
    if (rc == CURLE_OK && status >= 200 && status < 300) {
      if (result) *result = r;
      return Status::Ok();
    }
    last_error = rc != CURLE_OK ? curl_easy_strerror(rc) : "HTTP " + std::to_string(status);
  }
  if (result) *result = r;
  return Error(codes::kIoError, "webhook POST to " + RedactUrl(url) + " failed after " +
                                    std::to_string(r.attempts) + " attempt(s): " + last_error)
      .Value(RedactUrl(url))
      .Hint("check that the receiver is up and answers 2xx");
}

}  // namespace rsl::govern
