#include "api/http_parse.h"

#include <utility>
#include <vector>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

int HexValue(char c) {
  if (c >= '0' && c <= '9') return c - '0';
  if (c >= 'a' && c <= 'f') return c - 'a' + 10;
  if (c >= 'A' && c <= 'F') return c - 'A' + 10;
  return -1;
}

}  // namespace

std::string PercentDecode(std::string_view s, bool plus_is_space) {
  std::string out;
  out.reserve(s.size());
  for (size_t i = 0; i < s.size(); ++i) {
    if (s[i] == '%' && i + 2 < s.size()) {
      int hi = HexValue(s[i + 1]), lo = HexValue(s[i + 2]);
      if (hi >= 0 && lo >= 0) {
        out += static_cast<char>(hi * 16 + lo);
        i += 2;
        continue;
      }
    }
    out += plus_is_space && s[i] == '+' ? ' ' : s[i];
  }
  return out;
}

void ParseQuery(std::string_view query, std::multimap<std::string, std::string>* params) {
  while (!query.empty()) {
    size_t amp = query.find('&');
    std::string_view pair = query.substr(0, amp);
    query = amp == std::string_view::npos ? std::string_view() : query.substr(amp + 1);
    if (pair.empty()) continue;
    size_t eq = pair.find('=');
    std::string key = PercentDecode(pair.substr(0, eq), true);
    std::string value =
        eq == std::string_view::npos ? std::string() : PercentDecode(pair.substr(eq + 1), true);
    params->emplace(std::move(key), std::move(value));
  }
}

size_t HeadEnd(const std::string& in, size_t from) {
  size_t pos = from;
  while ((pos = in.find('\n', pos)) != std::string::npos) {
    ++pos;
    if (pos < in.size() && in[pos] == '\n') return pos + 1;
    if (pos + 1 < in.size() && in[pos] == '\r' && in[pos + 1] == '\n') return pos + 2;
  }
  return std::string::npos;
}

RequestHead ParseHead(std::string_view text, size_t max_body_bytes, HttpRequest* r) {
  RequestHead h;
  auto bad = [&](int status, Error e) {
    h.refuse = status;
    h.error = std::move(e);
    return h;
  };
  std::vector<std::string_view> lines;
  while (!text.empty()) {
    size_t nl = text.find('\n');
    std::string_view line = text.substr(0, nl);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    if (line.empty()) break;
    lines.push_back(line);
    text = nl == std::string_view::npos ? std::string_view() : text.substr(nl + 1);
  }
  auto malformed = [&](const std::string& what) {
    return bad(400, Error(codes::kInvalidArgument, "malformed HTTP request: " + what)
                        .Hint("send HTTP/1.1 requests (see docs/api.md)"));
  };
  if (lines.empty()) return malformed("no request line");
  std::string_view first = lines[0];
  size_t sp1 = first.find(' ');
  size_t sp2 = sp1 == std::string_view::npos ? sp1 : first.find(' ', sp1 + 1);
  if (sp2 == std::string_view::npos) return malformed("bad request line");
  r->method = std::string(first.substr(0, sp1));
  r->target = std::string(first.substr(sp1 + 1, sp2 - sp1 - 1));
  std::string version(first.substr(sp2 + 1));
  if (version != "HTTP/1.1" && version != "HTTP/1.0") return malformed("bad version");
  if (r->target.empty() || r->target[0] != '/') return malformed("bad target");
  size_t q = r->target.find('?');
  r->path = PercentDecode(std::string_view(r->target).substr(0, q), false);
  if (q != std::string::npos) ParseQuery(std::string_view(r->target).substr(q + 1), &r->params);
  for (size_t i = 1; i < lines.size(); ++i) {
    size_t colon = lines[i].find(':');
    if (colon == std::string_view::npos || colon == 0 || lines[i][0] == ' ' ||
        lines[i][0] == '\t') {
      return malformed("bad header line");
    }
    r->headers.emplace_back(ToLower(lines[i].substr(0, colon)),
                            std::string(Trim(lines[i].substr(colon + 1))));
  }
  std::string connection = ToLower(r->Header("connection"));
  h.keep_alive = version == "HTTP/1.1" ? connection.find("close") == std::string::npos
                                       : connection.find("keep-alive") != std::string::npos;
  h.expect_continue = ToLower(r->Header("expect")) == "100-continue";
  std::string limit = std::to_string(max_body_bytes >> 20) + " MiB";
  if (!r->Header("transfer-encoding").empty()) {
    return bad(411,
               Error(codes::kInvalidArgument, "chunked request bodies are not accepted")
                   .Hint("send the body with a Content-Length header (at most " + limit + ")"));
  }
  std::string length;
  for (const auto& [name, value] : r->headers) {
    if (name != "content-length") continue;
    if (!length.empty() && length != value) return malformed("conflicting Content-Length");
    length = value;
  }
  if (length.empty()) {
    if (r->method == "POST" || r->method == "PUT" || r->method == "PATCH") {
      return bad(411,
                 Error(codes::kInvalidArgument, r->method + " without Content-Length")
                     .Hint("send the body with a Content-Length header (at most " + limit + ")"));
    }
    return h;
  }
  if (length.size() > 18 || length.find_first_not_of("0123456789") != std::string::npos) {
    return malformed("bad Content-Length");
  }
  h.body_len = std::stoull(length);
  if (h.body_len > max_body_bytes) {
    return bad(413, Error(codes::kInvalidArgument,
                          "request body of " + length + " bytes is over the limit of " + limit)
                        .Value(length)
                        .Hint("a workload YAML is a few KiB: move data out of the spec (data.input "
                              "URIs, configmaps)"));
  }
  return h;
}

}  // namespace rsl::api
