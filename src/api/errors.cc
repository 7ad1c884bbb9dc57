#include "api/errors.h"

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::api {

namespace {
constexpr size_t kBodyExcerpt = 200;  // enough to recognise an HTML error page or a proxy

nlohmann::json OneError(const Error& e) {
  nlohmann::json j = {{"code", e.code}, {"message", e.message}};
  if (!e.path.empty()) j["path"] = e.path;
  if (!e.value.empty()) j["value"] = e.value;
  if (!e.hint.empty()) j["hint"] = e.hint;
  if (!e.pos.file.empty() || e.pos.known()) {
    j["position"] = {{"file", e.pos.file}, {"line", e.pos.line}, {"column", e.pos.column}};
  }
  return j;
}

Error FromOne(const nlohmann::json& j) {
  Error e(j.value("code", std::string(codes::kInternal)), j.value("message", std::string()));
  e.path = j.value("path", std::string());
  e.value = j.value("value", std::string());
  e.hint = j.value("hint", std::string());
  if (j.contains("position") && j["position"].is_object()) {
    const auto& p = j["position"];
    e.pos.file = p.value("file", std::string());
    e.pos.line = p.value("line", 0);
    e.pos.column = p.value("column", 0);
  }
  return e;
}
}  // namespace

int HttpStatusFor(const std::string& code) {
  if (code == codes::kUnauthenticated) return 401;
  if (code == codes::kForbidden) return 403;
  if (code == codes::kNotFound) return 404;
  if (code == codes::kConflict) return 409;
  if (code == kTooManyRequests) return 429;
  if (code == codes::kInvalidArgument || code == codes::kSpecParseError ||
      code == codes::kSpecInvalid || code == codes::kExpressionInvalid) {
    return 400;
  }
  if (code == codes::kInternal || code == codes::kIoError) return 500;
  return 422;
}

nlohmann::json ErrorsToJson(const Errors& errors) {
  if (errors.empty()) return ErrorToJson(Error(codes::kInternal, "unknown error"));
  const Error& first = errors.front();
  nlohmann::json details = OneError(first);
  details.erase("code");
  details.erase("message");
  nlohmann::json all = nlohmann::json::array();
  for (const auto& e : errors) all.push_back(OneError(e));
  details["errors"] = all;
  return {{"code", first.code}, {"message", first.message}, {"details", details}};
}

nlohmann::json ErrorToJson(const Error& error) { return ErrorsToJson(Errors{error}); }

std::string JsonText(const nlohmann::json& j) {
  return j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
}

Errors ErrorsFromJson(const std::string& body, int http_status) {
  auto j = nlohmann::json::parse(body, nullptr, false);
  if (j.is_object() && j.contains("code") && j["code"].is_string()) {
    Errors out;
    if (j.contains("details") && j["details"].is_object() && j["details"].contains("errors") &&
        j["details"]["errors"].is_array()) {
      for (const auto& e : j["details"]["errors"]) {
        if (e.is_object()) out.push_back(FromOne(e));
      }
    }
    if (out.empty()) {
      Error e = FromOne(j);
      if (j.contains("details") && j["details"].is_object()) {
        const auto& d = j["details"];
        e.path = d.value("path", std::string());
        e.hint = d.value("hint", std::string());
        e.value = d.value("value", std::string());
      }
      out.push_back(e);
    }
    return out;
  }
  std::string excerpt = body.substr(0, kBodyExcerpt);
  if (http_status == 413 || http_status == 411) {
    return {Error(codes::kInvalidArgument,
                  std::string(http_status == 413 ? "request body too large"
                                                 : "request body without Content-Length") +
                      " (HTTP " + std::to_string(http_status) + "): " + Quote(excerpt))
                .Hint("rsl-controller accepts bodies of at most 4 MiB with a Content-Length")};
  }
  return {Error(codes::kInternal,
                "unexpected response (HTTP " + std::to_string(http_status) + "): " + Quote(excerpt))
              .Hint("is --server pointing at rsl-controller?")};
}

}  // namespace rsl::api
