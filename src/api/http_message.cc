#include "api/http_message.h"

#include <cstdio>

#include "base/strings.h"

namespace rsl::api {

std::string HttpRequest::Param(const std::string& key) const {
  auto it = params.find(key);
  return it == params.end() ? std::string() : it->second;
}

std::string HttpRequest::Header(const std::string& name) const {
  std::string lower = ToLower(name);
  for (const auto& [k, v] : headers) {
    if (k == lower) return v;
  }
  return "";
}

void HttpResponse::SetHeader(const std::string& name, const std::string& value) {
  headers.emplace_back(name, value);
}

void HttpResponse::SetContent(std::string text, const std::string& type) {
  body = std::move(text);
  content_type = type;
}

void HttpResponse::SetStream(const std::string& type, std::shared_ptr<StreamSource> source) {
  content_type = type;
  stream = std::move(source);
}

const char* HttpReason(int status) {
  switch (status) {
    case 100:
      return "Continue";
    case 200:
      return "OK";
    case 201:
      return "Created";
    case 204:
      return "No Content";
    case 400:
      return "Bad Request";
    case 401:
      return "Unauthorized";
    case 403:
      return "Forbidden";
    case 404:
      return "Not Found";
    case 405:
      return "Method Not Allowed";
    case 408:
      return "Request Timeout";
    case 409:
      return "Conflict";
    case 411:
      return "Length Required";
    case 413:
      return "Payload Too Large";
    case 422:
      return "Unprocessable Entity";
    case 429:
      return "Too Many Requests";
    case 431:
      return "Request Header Fields Too Large";
    case 500:
      return "Internal Server Error";
    case 503:
      return "Service Unavailable";
    default:
      return "Status";
  }
}

std::string ResponseHead(const HttpResponse& r, bool keep_alive, bool chunked, size_t length) {
  std::string h = "HTTP/1.1 " + std::to_string(r.status) + " " + HttpReason(r.status) + "\r\n";
  if (!r.content_type.empty()) h += "Content-Type: " + r.content_type + "\r\n";
  for (const auto& [name, value] : r.headers) h += name + ": " + value + "\r\n";
  h += chunked ? std::string("Transfer-Encoding: chunked\r\n")
               : "Content-Length: " + std::to_string(length) + "\r\n";
  h += keep_alive ? "Connection: keep-alive\r\n\r\n" : "Connection: close\r\n\r\n";
  return h;
}

std::string ChunkHeader(size_t size) {
  char buf[24];
  snprintf(buf, sizeof(buf), "%zx\r\n", size);
  return buf;
}

}  // namespace rsl::api
