#include "base/http_client.h"

#include <curl/curl.h>

#include <memory>
#include <mutex>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl {

namespace {

void GlobalInit() {
  static std::once_flag once;
  std::call_once(once, [] { curl_global_init(CURL_GLOBAL_DEFAULT); });
}

size_t OnBody(char* p, size_t size, size_t n, void* user) {
  static_cast<std::string*>(user)->append(p, size * n);
  return size * n;
}

size_t OnHeader(char* p, size_t size, size_t n, void* user) {
  std::string line(p, size * n);
  size_t colon = line.find(':');
  if (colon != std::string::npos) {
    (*static_cast<std::map<std::string, std::string>*>(user))[ToLower(line.substr(0, colon))] =
        std::string(Trim(line.substr(colon + 1)));
  }
  return size * n;
}

struct CurlDeleter {
  void operator()(CURL* c) const { curl_easy_cleanup(c); }
  void operator()(curl_slist* l) const { curl_slist_free_all(l); }
};

}  // namespace

Result<HttpResponse> HttpSend(const HttpRequest& req, std::string* transport_error) {
  GlobalInit();
  if (transport_error) transport_error->clear();
  std::unique_ptr<CURL, CurlDeleter> curl(curl_easy_init());
  if (!curl) {
    if (transport_error) *transport_error = "curl_easy_init failed";
    return Error(codes::kIoError, "cannot reach " + RedactUrl(req.url) + ": curl_easy_init failed")
        .Value(RedactUrl(req.url));
  }
  curl_slist* raw_headers = nullptr;
  for (const auto& h : req.headers) raw_headers = curl_slist_append(raw_headers, h.c_str());
  std::unique_ptr<curl_slist, CurlDeleter> headers(raw_headers);
  HttpResponse resp;
  CURL* c = curl.get();
  curl_easy_setopt(c, CURLOPT_URL, req.url.c_str());
  if (headers) curl_easy_setopt(c, CURLOPT_HTTPHEADER, headers.get());
  curl_easy_setopt(c, CURLOPT_NOSIGNAL, 1L);
  if (req.connect_timeout_ms > 0)
    curl_easy_setopt(c, CURLOPT_CONNECTTIMEOUT_MS, req.connect_timeout_ms);
  if (req.timeout_ms > 0) curl_easy_setopt(c, CURLOPT_TIMEOUT_MS, req.timeout_ms);
  curl_easy_setopt(c, CURLOPT_FOLLOWLOCATION, req.follow_redirects ? 1L : 0L);
  curl_easy_setopt(c, CURLOPT_WRITEFUNCTION, OnBody);
  curl_easy_setopt(c, CURLOPT_WRITEDATA, &resp.body);
  curl_easy_setopt(c, CURLOPT_HEADERFUNCTION, OnHeader);
  curl_easy_setopt(c, CURLOPT_HEADERDATA, &resp.headers);
  if (req.negotiate) {
    curl_easy_setopt(c, CURLOPT_HTTPAUTH, CURLAUTH_NEGOTIATE);
    curl_easy_setopt(c, CURLOPT_USERPWD, ":");
  }
  if (req.method == "HEAD") {
    curl_easy_setopt(c, CURLOPT_NOBODY, 1L);
  } else if (req.method == "PUT" || req.method == "POST") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
    curl_easy_setopt(c, CURLOPT_POSTFIELDS, req.body.data() ? req.body.data() : "");
    curl_easy_setopt(c, CURLOPT_POSTFIELDSIZE_LARGE, static_cast<curl_off_t>(req.body.size()));
  } else if (req.method != "GET") {
    curl_easy_setopt(c, CURLOPT_CUSTOMREQUEST, req.method.c_str());
  }
  CURLcode rc = curl_easy_perform(c);
  if (rc != CURLE_OK) {
    std::string text = curl_easy_strerror(rc);
    if (transport_error) *transport_error = text;
    return Error(codes::kIoError, "cannot reach " + RedactUrl(req.url) + ": " + text)
        .Value(RedactUrl(req.url));
  }
  curl_easy_getinfo(c, CURLINFO_RESPONSE_CODE, &resp.status);
  return resp;
}

std::string RedactUrl(const std::string& url) {
  size_t scheme = url.find("://");
  if (scheme == std::string::npos) return url;
  size_t host_start = scheme + 3;
  size_t at = url.find('@', host_start);
  size_t slash = url.find('/', host_start);
  if (at == std::string::npos || (slash != std::string::npos && at > slash)) return url;
  return url.substr(0, host_start) + "***" + url.substr(at);
}

}  // namespace rsl
