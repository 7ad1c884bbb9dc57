// One HTTP request over libcurl, for every client of a remote service (object stores, WebHDFS,
// webhooks): a method, a URL, headers and a body in; the status, headers and body out. Policy
// (retries, request signing, redirects to follow or not, fail-over between servers) stays with
// the caller; this is only the transport.
//
// Threading: each call uses its own easy handle; calls may run from many threads at once.
#pragma once

#include <map>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace rsl {

struct HttpRequest {
  std::string method = "GET";  //!< GET, HEAD (no body read), PUT, POST, DELETE, ...
  std::string url;
  //! Extra header lines, "Name: value"; "Name:" removes one libcurl would send (e.g. "Expect:").
  //! May hold credentials: they never appear in errors.
  std::vector<std::string> headers;
  //! Sent with PUT and POST (an empty one too); not sent with other methods.
  std::string_view body;
  long connect_timeout_ms = 0;  //!< 0: libcurl's default
  long timeout_ms = 0;          //!< whole request; 0: none
  bool follow_redirects = false;
  bool negotiate = false;  //!< SPNEGO (Kerberos) through libcurl's GSS-API
};

struct HttpResponse {
  long status = 0;
  std::string body;
  //! Lower-case names; a name seen twice (also across followed redirects) keeps its last value.
  std::map<std::string, std::string> headers;
};

//! Performs one request. Any HTTP answer (also 4xx and 5xx) is a response; no answer (refused,
//! timed out, DNS) is IO_ERROR "cannot reach URL: <curl's text>" with the URL as its value
//! (RedactUrl'd). `transport_error`, when given, receives curl's text alone (or "") so that a
//! caller can word its own message.
Result<HttpResponse> HttpSend(const HttpRequest& request, std::string* transport_error = nullptr);

//! The url with any user:password@ part replaced by ***@ (for messages and logs).
std::string RedactUrl(const std::string& url);

}  // namespace rsl
