#include "api/client.h"

#include <httplib.h>

#include <cstdlib>

#include "api/errors.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

constexpr int kConnectTimeoutSec = 5;
constexpr int kReadTimeoutSec = 60;  // a submit with large admission checks may take a while
constexpr int kStreamReadTimeoutSec = 3600;  // logs -f of a long step

std::string Env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

std::string ConfigPath() {
  std::string p = Env("SEEDCTL_CONFIG");
  if (!p.empty()) return p;
  std::string xdg = Env("XDG_CONFIG_HOME");
  if (!xdg.empty()) return xdg + "/seedctl/config";
  std::string home = Env("HOME");
  if (!home.empty()) return home + "/.config/seedctl/config";
  return "";
}

std::unique_ptr<httplib::Client> MakeHttp(const ClientConfig& c, int read_timeout_sec) {
  auto http = std::make_unique<httplib::Client>(c.server);
  http->set_connection_timeout(kConnectTimeoutSec, 0);
  http->set_read_timeout(read_timeout_sec, 0);
  http->set_write_timeout(kReadTimeoutSec, 0);
  if (!c.token.empty()) http->set_bearer_token_auth(c.token);
  return http;
}

}  // namespace

Result<ClientConfig> ResolveClientConfig(const std::string& flag_server,
                                         const std::string& flag_token,
                                         const std::string& flag_namespace) {
  ClientConfig c;
  std::map<std::string, std::string> file;
  c.config_path = ConfigPath();
  if (!c.config_path.empty() && PathExists(c.config_path)) {
    auto text = ReadFile(c.config_path);
    if (!text.ok()) return text.error();
    int line_no = 0;
    for (const auto& raw : Split(*text, '\n')) {
      ++line_no;
      std::string line(Trim(raw));
      if (line.empty() || line[0] == '#') continue;
      size_t colon = line.find(':');
      if (colon == std::string::npos) {
        return Error(codes::kInvalidArgument, "expected `key: value`")
            .At({c.config_path, line_no, 1})
            .Hint("keys: server, token, namespace");
      }
      std::string key(Trim(line.substr(0, colon)));
      std::string value(Trim(line.substr(colon + 1)));
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
          value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
      }
      if (key != "server" && key != "token" && key != "namespace") {
        std::string close = ClosestMatch(key, {"server", "token", "namespace"});
        return Error(codes::kInvalidArgument, "unknown key " + Quote(key))
            .At({c.config_path, line_no, 1})
            .Hint(close.empty() ? "keys: server, token, namespace"
                                : "did you mean '" + close + "'?");
      }
      file[key] = value;
    }
  }
  auto pick = [&](const std::string& flag, const char* env, const std::string& key,
                  const std::string& fallback) {
    if (!flag.empty()) return flag;
    std::string e = Env(env);
    if (!e.empty()) return e;
    auto it = file.find(key);
    if (it != file.end() && !it->second.empty()) return it->second;
    return fallback;
  };
  c.server = pick(flag_server, "SEEDCTL_SERVER", "server", kDefaultServer);
  c.token = pick(flag_token, "SEEDCTL_TOKEN", "token", "");
  c.namespace_ = pick(flag_namespace, "SEEDCTL_NAMESPACE", "namespace", "");
  if (!StartsWith(c.server, "http://") && !StartsWith(c.server, "https://")) {
    c.server = "http://" + c.server;
  }
  while (EndsWith(c.server, "/")) c.server.pop_back();
  return c;
}

std::string UrlEncode(std::string_view s) {
  static const char kHex[] = "0123456789ABCDEF";
  std::string out;
  for (unsigned char c : s) {
    if ((c >= 'A' && c <= 'Z') || (c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-' ||
        c == '_' || c == '.' || c == '~') {
      out += static_cast<char>(c);
    } else {
      out += '%';
      out += kHex[c >> 4];
      out += kHex[c & 15];
    }
  }
  return out;
}

std::string QueryString(const std::map<std::string, std::string>& params) {
  std::string out;
  for (const auto& [k, v] : params) {
    if (v.empty()) continue;
    out += out.empty() ? "?" : "&";
    out += UrlEncode(k) + "=" + UrlEncode(v);
  }
  return out;
}

Client::Client(ClientConfig config) : config_(std::move(config)) {}
Client::~Client() = default;

Error Client::Fail(Errors errors) {
  last_errors_ = std::move(errors);
  if (last_errors_.empty()) last_errors_.push_back(Error(codes::kInternal, "unknown error"));
  return last_errors_.front();
}

Error Client::ConnectionError(const std::string& what) const {
  return Error(codes::kIoError, "cannot reach rsl-controller at " + config_.server + ": " + what)
      .Hint(
          "start it with `rsl-controller --listen 127.0.0.1:7070 --state-dir DIR`, or pass "
          "--server / set SEEDCTL_SERVER");
}

Result<nlohmann::json> Client::Get(const std::string& path) {
  auto http = MakeHttp(config_, kReadTimeoutSec);
  auto res = http->Get(path);
  if (!res) return Fail({ConnectionError(httplib::to_string(res.error()))});
  if (res->status < 200 || res->status >= 300) return Fail(ErrorsFromJson(res->body, res->status));
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_discarded()) return Fail(ErrorsFromJson(res->body, res->status));
  return j;
}

Result<nlohmann::json> Client::Post(const std::string& path, const std::string& body,
                                    const std::string& content_type,
                                    const std::map<std::string, std::string>& headers) {
  auto http = MakeHttp(config_, kReadTimeoutSec);
  httplib::Headers h(headers.begin(), headers.end());
  auto res = http->Post(path, h, body, content_type);
  if (!res) return Fail({ConnectionError(httplib::to_string(res.error()))});
  if (res->status < 200 || res->status >= 300) return Fail(ErrorsFromJson(res->body, res->status));
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_discarded()) return Fail(ErrorsFromJson(res->body, res->status));
  return j;
}

Result<std::string> Client::GetText(const std::string& path) {
  auto http = MakeHttp(config_, kReadTimeoutSec);
  auto res = http->Get(path);
  if (!res) return Fail({ConnectionError(httplib::to_string(res.error()))});
  if (res->status < 200 || res->status >= 300) return Fail(ErrorsFromJson(res->body, res->status));
  return res->body;
}

Status Client::Stream(const std::string& path,
                      const std::function<bool(std::string_view)>& on_chunk) {
  auto http = MakeHttp(config_, kStreamReadTimeoutSec);
  int status = 0;
  std::string error_body;
  auto res = http->Get(
      path,
      [&](const httplib::Response& r) {
        status = r.status;
        return true;
      },
      [&](const char* data, size_t len) {
        if (status < 200 || status >= 300) {
          error_body.append(data, len);
          return true;
        }
        return on_chunk(std::string_view(data, len));
      });
  if (status != 0 && (status < 200 || status >= 300)) {
    return Fail(ErrorsFromJson(error_body, status));
  }
  if (!res && res.error() != httplib::Error::Canceled) {
    return Fail({ConnectionError(httplib::to_string(res.error()))});
  }
  return Status::Ok();
}

}  // namespace rsl::api
