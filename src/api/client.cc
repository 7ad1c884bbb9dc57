#include "api/client.h"

#include <httplib.h>
#include <openssl/ssl.h>
#include <openssl/x509_vfy.h>

#include <algorithm>
#include <cstdlib>
#include <vector>

#include "api/client_contexts.h"
#include "api/client_internal.h"
#include "api/errors.h"
#include "api/tls_probe.h"
#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

constexpr int kConnectTimeoutSec = 5;
constexpr int kReadTimeoutSec = 60;  // a submit with large admission checks may take a while
constexpr int kStreamReadTimeoutSec = 3600;  // logs -f of a long step

// The host of "https://host:port/..." ("[::1]" without brackets).
std::string HostOf(const std::string& server) {
  std::string rest = server.substr(server.find("://") + 3);
  rest = rest.substr(0, rest.find('/'));
  if (!rest.empty() && rest.front() == '[') return rest.substr(1, rest.find(']') - 1);
  return rest.substr(0, rest.rfind(':') == std::string::npos ? rest.size() : rest.rfind(':'));
}

std::unique_ptr<httplib::Client> MakeHttp(const ClientConfig& c, int read_timeout_sec) {
  auto http = c.client_certificate.empty()
                  ? std::make_unique<httplib::Client>(c.server)
                  : std::make_unique<httplib::Client>(c.server, c.client_certificate, c.client_key);
  http->set_connection_timeout(kConnectTimeoutSec, 0);
  http->set_read_timeout(read_timeout_sec, 0);
  http->set_write_timeout(kReadTimeoutSec, 0);
  if (!c.token.empty()) http->set_bearer_token_auth(c.token);
  if (!c.certificate_authority.empty()) http->set_ca_cert_path(c.certificate_authority);
  // The chain and the host name are checked by OpenSSL itself (cpp-httplib 0.11's own host
  // check let a certificate for another name through): the name of the URL must be in the
  // certificate.
  if (SSL_CTX* ctx = StartsWith(c.server, "https://") ? http->ssl_context() : nullptr) {
    std::string host = HostOf(c.server);
    X509_VERIFY_PARAM* param = SSL_CTX_get0_param(ctx);
    if (X509_VERIFY_PARAM_set1_ip_asc(param, host.c_str()) != 1) {
      X509_VERIFY_PARAM_set1_host(param, host.c_str(), 0);
    }
  }
  return http;
}

}  // namespace

Result<ClientConfig> ResolveClientConfig(const std::string& flag_server,
                                         const std::string& flag_token,
                                         const std::string& flag_namespace,
                                         const std::string& flag_ca,
                                         const std::string& flag_client_cert,
                                         const std::string& flag_client_key) {
  static const std::vector<std::string> kKeys = {
      "server", "token", "namespace", "certificate-authority", "client-certificate", "client-key"};
  ClientConfig c;
  std::map<std::string, std::string> file;
  c.config_path = UserConfigFile("SEEDCTL_CONFIG", "seedctl/config");  // the older file
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
            .Hint("keys: " + Join(kKeys, ", "));
      }
      std::string key(Trim(line.substr(0, colon)));
      std::string value(Trim(line.substr(colon + 1)));
      if (value.size() >= 2 && (value.front() == '"' || value.front() == '\'') &&
          value.back() == value.front()) {
        value = value.substr(1, value.size() - 2);
      }
      if (std::find(kKeys.begin(), kKeys.end(), key) == kKeys.end()) {
        std::string close = ClosestMatch(key, kKeys);
        return Error(codes::kInvalidArgument, "unknown key " + Quote(key))
            .At({c.config_path, line_no, 1})
            .Hint(close.empty() ? "keys: " + Join(kKeys, ", ") : "did you mean '" + close + "'?");
      }
      file[key] = value;
    }
  }
  // The current context sits between the environment and the older file.
  std::map<std::string, std::string> context;
  std::string contexts_path = ContextsPath();
  Result<ContextsFile> contexts = LoadContexts(contexts_path);
  if (!contexts.ok()) return contexts.error();
  // --context NAME (SEEDCTL_CONTEXT) picks a context for this one command.
  if (std::string chosen = EnvVar("SEEDCTL_CONTEXT"); !chosen.empty()) {
    if (contexts->Find(chosen) == nullptr) {
      return Error(codes::kNotFound,
                   "no context named " + Quote(chosen) + " in " + Quote(contexts_path))
          .Path("--context")
          .Value(chosen)
          .Hint(contexts->contexts.empty()
                    ? "there are none yet: seedctl config set-context " + chosen + " --server URL"
                    : "known contexts: " + contexts->Names() + " (seedctl config get-contexts)");
    }
    contexts->current_context = chosen;
  }
  Result<Context> current = CurrentContext(*contexts, contexts_path);
  if (!current.ok()) return current.error();
  if (!current->name.empty()) {
    c.context = current->name;
    context = {{"server", current->server},
               {"namespace", current->namespace_},
               {"certificate-authority", current->certificate_authority},
               {"client-certificate", current->client_certificate},
               {"client-key", current->client_key}};
    if (flag_token.empty() && EnvVar("SEEDCTL_TOKEN").empty() && !current->token_file.empty()) {
      Result<std::string> token = ReadContextToken(*current);
      if (!token.ok()) return token.error();
      context["token"] = *token;
    }
  }
  auto pick = [&](const std::string& flag, const char* env, const std::string& key,
                  const std::string& fallback) {
    if (!flag.empty()) return flag;
    std::string e = EnvVar(env);
    if (!e.empty()) return e;
    if (auto it = context.find(key); it != context.end() && !it->second.empty()) {
      return it->second;
    }
    auto it = file.find(key);
    if (it != file.end() && !it->second.empty()) return it->second;
    return fallback;
  };
  c.server = pick(flag_server, "SEEDCTL_SERVER", "server", kDefaultServer);
  c.token = pick(flag_token, "SEEDCTL_TOKEN", "token", "");
  c.namespace_ = pick(flag_namespace, "SEEDCTL_NAMESPACE", "namespace", "");
  c.certificate_authority =
      pick(flag_ca, "SEEDCTL_CERTIFICATE_AUTHORITY", "certificate-authority", "");
  c.client_certificate =
      pick(flag_client_cert, "SEEDCTL_CLIENT_CERTIFICATE", "client-certificate", "");
  c.client_key = pick(flag_client_key, "SEEDCTL_CLIENT_KEY", "client-key", "");
  if (c.client_certificate.empty() != c.client_key.empty()) {
    return Error(codes::kInvalidArgument, "a client certificate and its key go together")
        .Value(c.client_certificate.empty() ? c.client_key : c.client_certificate)
        .Hint(
            "pass both --client-certificate FILE and --client-key FILE (or the config keys "
            "client-certificate: and client-key:)");
  }
  const std::pair<const std::string*, const char*> files[] = {
      {&c.certificate_authority,
       "--certificate-authority takes the PEM file of the CA that signed the controller's "
       "certificate (with --tls-self-signed: tls.crt in its state directory)"},
      {&c.client_certificate, "--client-certificate takes a PEM certificate file"},
      {&c.client_key, "--client-key takes the PEM key of --client-certificate"}};
  for (const auto& [file, hint] : files) {
    if (!file->empty() && !PathExists(*file)) {
      return Error(codes::kInvalidArgument, "no such file " + Quote(*file)).Value(*file).Hint(hint);
    }
  }
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

Error Client::RequestError(int error) const {
  auto e = static_cast<httplib::Error>(error);
  if (e == httplib::Error::SSLLoadingCerts) {
    // The files exist (ResolveClientConfig checked), so one is not what it should be.
    std::vector<std::string> files;
    if (!config_.certificate_authority.empty()) {
      files.push_back("--certificate-authority " + config_.certificate_authority);
    }
    if (!config_.client_certificate.empty()) {
      files.push_back("--client-certificate " + config_.client_certificate);
      files.push_back("--client-key " + config_.client_key);
    }
    return Error(codes::kInvalidArgument,
                 "TLS: cannot load " +
                     (files.empty() ? std::string("the system's CAs") : Join(files, ", ")))
        .Hint(
            "each must be a readable PEM file: the CA certificate(s), the client certificate "
            "and its unencrypted private key");
  }
  // A server that refuses the client certificate (mutual TLS) fails the handshake (TLS 1.2)
  // or, as TLS 1.3 checks it after the client's handshake, the first read.
  const bool tls_failure =
      e == httplib::Error::SSLServerVerification || e == httplib::Error::SSLConnection;
  const bool maybe_refused = tls_failure || e == httplib::Error::Read || e == httplib::Error::Write;
  if (!maybe_refused || !StartsWith(config_.server, "https://")) {
    return ConnectionError(httplib::to_string(e));
  }
  // host[:port] of https://host[:port]
  std::string rest = config_.server.substr(8);
  rest = rest.substr(0, rest.find('/'));
  std::string host = rest;
  int port = 443;
  size_t colon = rest.rfind(':');
  if (colon != std::string::npos && rest.find(']') == std::string::npos) {
    host = rest.substr(0, colon);
    port = std::atoi(rest.substr(colon + 1).c_str());
  } else if (!rest.empty() && rest.front() == '[') {
    size_t close = rest.find(']');
    host = rest.substr(1, close - 1);
    if (close + 1 < rest.size() && rest[close + 1] == ':')
      port = std::atoi(rest.c_str() + close + 2);
  }
  const std::string where = host + ":" + std::to_string(port);
  auto refusal = ProbeClientRefusal(host, port, config_.client_certificate, config_.client_key);
  if (!refusal.ok()) return refusal.error();
  if (!refusal->empty()) {
    if (config_.client_certificate.empty()) {
      return Error(codes::kUnauthenticated,
                   "TLS: the server " + where + " requires a client certificate (" + *refusal + ")")
          .Hint(
              "pass --client-certificate FILE --client-key FILE (or the config keys "
              "client-certificate: and client-key:) with a certificate its client CA issued");
    }
    const bool revoked = refusal->find("revoked") != std::string::npos;
    return Error(codes::kUnauthenticated, "TLS: the server " + where +
                                              " refused the client certificate " +
                                              config_.client_certificate + ": " + *refusal)
        .Value(config_.client_certificate)
        .Hint(revoked ? "the controller's revocation lists (--tls-client-crl) revoke this "
                        "certificate: ask its CA for a new one"
                      : "use a certificate issued by the controller's --tls-client-ca, within "
                        "its validity period");
  }
  if (!tls_failure) return ConnectionError(httplib::to_string(e));
  auto peer = ProbeTlsPeer(host, port, config_.certificate_authority);
  std::string trust = config_.certificate_authority.empty()
                          ? std::string("the system's CAs")
                          : "--certificate-authority " + config_.certificate_authority;
  if (!peer.ok() || peer->fingerprint.empty()) {
    return Error(codes::kIoError, "TLS handshake with " + host + ":" + std::to_string(port) +
                                      " failed (" + httplib::to_string(e) + ")")
        .Hint("is it an https server? rsl-controller serves HTTPS with --tls-cert/--tls-key");
  }
  std::string why =
      peer->problem.empty() ? "its certificate does not match the host name" : peer->problem;
  return Error(codes::kIoError, "TLS: the server " + host + ":" + std::to_string(port) +
                                    " is not trusted: " + why + " (certificate " + peer->subject +
                                    ", SHA-256 fingerprint " + peer->fingerprint + ")")
      .Hint(
          "check the fingerprint with the controller's operator (rsl-controller prints it at "
          "start), then trust its CA with --certificate-authority FILE (checked against " +
          trust + ")");
}

Result<nlohmann::json> Client::Get(const std::string& path) {
  auto http = MakeHttp(config_, kReadTimeoutSec);
  auto res = http->Get(path);
  if (!res) return Fail({RequestError(static_cast<int>(res.error()))});
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
  if (!res) return Fail({RequestError(static_cast<int>(res.error()))});
  if (res->status < 200 || res->status >= 300) return Fail(ErrorsFromJson(res->body, res->status));
  auto j = nlohmann::json::parse(res->body, nullptr, false);
  if (j.is_discarded()) return Fail(ErrorsFromJson(res->body, res->status));
  return j;
}

Result<std::string> Client::GetText(const std::string& path) {
  auto http = MakeHttp(config_, kReadTimeoutSec);
  auto res = http->Get(path);
  if (!res) return Fail({RequestError(static_cast<int>(res.error()))});
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
    return Fail({RequestError(static_cast<int>(res.error()))});
  }
  return Status::Ok();
}

}  // namespace rsl::api
