// Reading HTTP/1.1 request heads for the API server (http_server.h): where a head ends, and
// what it says (method, target, path and query, headers, keep-alive, Expect, the body's
// length) or why it is refused. Pure: no sockets, no state.
#pragma once

#include <cstddef>
#include <map>
#include <string>
#include <string_view>

#include "api/http_message.h"
#include "base/status.h"

namespace rsl::api {

//! %XX escapes decoded (a malformed one is kept as it is); '+' becomes ' ' when
//! `plus_is_space` (query strings).
std::string PercentDecode(std::string_view s, bool plus_is_space);

//! Adds the key=value pairs of a query string (without its '?'), percent-decoded, to *params.
void ParseQuery(std::string_view query, std::multimap<std::string, std::string>* params);

//! Index just past the empty line that ends a request head (CRLF or bare LF line ends), or
//! npos. `from` is where the previous search stopped, so a trickled head is scanned once.
size_t HeadEnd(const std::string& in, size_t from);

//! What a request head says, or the refusal (status and error) when it cannot be served.
struct RequestHead {
  int refuse = 0;
  Error error;
  bool keep_alive = true;
  bool expect_continue = false;
  size_t body_len = 0;
};

//! Parses a complete request head (up to HeadEnd) into *r (method, target, path, params,
//! headers). Refuses with 400 (malformed), 411 (chunked, or POST/PUT/PATCH without
//! Content-Length) or 413 (a Content-Length over `max_body_bytes`), each with its error and
//! a hint.
RequestHead ParseHead(std::string_view text, size_t max_body_bytes, HttpRequest* r);

}  // namespace rsl::api
