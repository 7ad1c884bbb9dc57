// The seedctl side of the API: where the controller is, who we are, and HTTP calls that turn
// every failure (connection refused, an error body) into Errors with stable codes.
//
// Where the server, token and namespace come from, first match wins (as kubectl's flags,
// environment and kubeconfig):
//   1. flags --server / --token / -n
//   2. environment SEEDCTL_SERVER / SEEDCTL_TOKEN / SEEDCTL_NAMESPACE
//   3. the current context of the contexts file (api/client_contexts.h: $RSL_CONFIG or
//      seedctl --config, else $XDG_CONFIG_HOME/rsl/config.yaml, else
//      ~/.config/rsl/config.yaml); its token is read from its tokenFile
//   4. the older config file $SEEDCTL_CONFIG, else $XDG_CONFIG_HOME/seedctl/config, else
//      ~/.config/seedctl/config: `key: value` lines (server, token, namespace,
//      certificate-authority, client-certificate, client-key), '#' comments
//   5. server http://127.0.0.1:7070; no token; the token's default namespace.
#pragma once

#include <nlohmann/json.hpp>

#include <functional>
#include <map>
#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace rsl::api {

inline constexpr char kDefaultServer[] = "http://127.0.0.1:7070";

struct ClientConfig {
  std::string server = kDefaultServer;
  //! https servers are verified against this PEM file of CAs ("" = the system's CAs).
  std::string certificate_authority;
  //! Mutual TLS: the PEM client certificate (chain) and its key ("" = none).
  std::string client_certificate;
  std::string client_key;
  std::string token;
  std::string namespace_;   //!< "" = let the server use the token's default namespace
  std::string config_path;  //!< the config file consulted (for messages)
  std::string context;      //!< the context used ("" = none)
};

//! Resolves the config as described above. Flags that are empty do not count. A context's
//! token file is read only when neither --token nor SEEDCTL_TOKEN gives a token. Errors: the
//! contexts file's (CONFIG_INVALID, NOT_FOUND for an unknown current context), a context's
//! unreadable token file (INVALID_ARGUMENT).
//! The CA file: --certificate-authority, SEEDCTL_CERTIFICATE_AUTHORITY, `certificate-authority:`;
//! the client certificate and key: --client-certificate / --client-key,
//! SEEDCTL_CLIENT_CERTIFICATE / SEEDCTL_CLIENT_KEY, `client-certificate:` / `client-key:`
//! (INVALID_ARGUMENT when only one of the two is given, or a file does not exist).
Result<ClientConfig> ResolveClientConfig(const std::string& flag_server,
                                         const std::string& flag_token,
                                         const std::string& flag_namespace,
                                         const std::string& flag_ca = "",
                                         const std::string& flag_client_cert = "",
                                         const std::string& flag_client_key = "");

//! Percent-encodes a path segment or query value (RFC 3986 unreserved kept).
std::string UrlEncode(std::string_view s);
//! "?a=1&b=x%20y" from a map (empty values left out); "" when nothing is left.
std::string QueryString(const std::map<std::string, std::string>& params);

class Client {
 public:
  explicit Client(ClientConfig config);
  ~Client();
  const ClientConfig& config() const { return config_; }

  //! JSON requests. A non-2xx answer becomes its Errors (the first is returned; all are in
  //! last_errors()).
  Result<nlohmann::json> Get(const std::string& path);
  Result<nlohmann::json> Post(const std::string& path, const std::string& body,
                              const std::string& content_type = "application/json",
                              const std::map<std::string, std::string>& headers = {});
  //! A text answer (GET /metrics).
  Result<std::string> GetText(const std::string& path);
  //! Streams a chunked answer; `on_chunk` returns false to stop early.
  Status Stream(const std::string& path, const std::function<bool(std::string_view)>& on_chunk);

  const Errors& last_errors() const { return last_errors_; }

 private:
  Error Fail(Errors errors);
  Error ConnectionError(const std::string& what) const;
  //! A failed request as an Error: TLS trust failures name the host, the certificate's
  //! fingerprint and why it is not trusted.
  Error RequestError(int error) const;

  ClientConfig config_;
  Errors last_errors_;
};

}  // namespace rsl::api
