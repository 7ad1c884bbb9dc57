#pragma once

// Where the Kubernetes API server is and how to authenticate to it: a kubeconfig file
// (KUBECONFIG's files merged as kubectl merges them, else ~/.kube/config; its current-context
// or an explicit one) or
// the in-cluster service account. The result holds every credential in memory (files named by
// the kubeconfig are read here), so that the API client never reads files itself.
//
// Supported: cluster server, certificate-authority / certificate-authority-data,
// insecure-skip-tls-verify; user token / tokenFile, client-certificate(-data) /
// client-key(-data). Refused with KUBECONFIG_INVALID naming the field: exec and auth-provider
// plugins, username/password (basic auth, removed from Kubernetes in 1.19), http:// servers
// with credentials aside from a plain local test server.
//
// Errors: KUBECONFIG_INVALID with `file:line:col` and the field path
// (`users[0].user.exec`), or IO_ERROR for a file that cannot be read. A credential never
// appears in an error or in Describe().

#include <map>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::k8s {

//! A resolved connection: everything the API client needs. Holds secrets (token, key).
struct Connection {
  std::string server;  //!< https://host:port (no trailing slash)
  std::string ca_pem;  //!< CA bundle (PEM); "" = the system's trust store
  bool insecure_skip_tls_verify = false;
  std::string token;            //!< bearer token; secret
  std::string client_cert_pem;  //!< client certificate (PEM)
  std::string client_key_pem;   //!< its private key (PEM); secret
  std::string namespace_;       //!< the context's namespace ("" = not set)
  std::string context;          //!< the context's name ("in-cluster" for the service account)
  std::string source;           //!< the file it came from, or the service-account directory

  //! One line for logs and `seedctl` output: server, context, how it authenticates
  //! ("bearer token", "client certificate CN=..."), never a secret.
  std::string Describe() const;
};

//! The files of a KUBECONFIG-style list (':'-separated; empty entries and repeats dropped). A
//! string that names an existing file is that one file, ':' or not.
std::vector<std::string> KubeconfigFiles(const std::string& list);

//! Reads a list of kubeconfig files and merges them as kubectl does: the first file that sets
//! current-context gives it; a context, cluster or user comes from the first file that defines
//! its name, its relative paths resolved from that file's directory; listed files that do not
//! exist are skipped (IO_ERROR when none exists), an empty one is an empty configuration.
//! One file: LoadKubeconfig.
Result<Connection> LoadKubeconfigList(const std::string& list, const std::string& context = "");

//! The in-cluster service account's default directory.
inline constexpr char kServiceAccountDir[] = "/var/run/secrets/kubernetes.io/serviceaccount";

//! Parses kubeconfig YAML text; `file` is for messages and resolves relative paths
//! (certificate-authority, client-certificate, client-key, tokenFile: relative to the file's
//! directory, as kubectl does). `context` "" = current-context.
Result<Connection> ParseKubeconfig(const std::string& yaml, const std::string& file,
                                   const std::string& context = "");

//! Reads and parses one kubeconfig file.
Result<Connection> LoadKubeconfig(const std::string& path, const std::string& context = "");

//! The in-cluster service account: KUBERNETES_SERVICE_HOST/PORT from `env`, `dir`/token,
//! `dir`/ca.crt, `dir`/namespace. Errors: KUBECONFIG_INVALID (not in a cluster: which
//! variable or file is missing).
Result<Connection> InClusterConnection(const std::map<std::string, std::string>& env,
                                       const std::string& dir = kServiceAccountDir);

//! The connection a command uses: `explicit_path` if set (a file, or a list as KUBECONFIG
//! takes it), else KUBECONFIG's files merged (LoadKubeconfigList), else $HOME/.kube/config if
//! it exists, else the in-cluster service account. `env` is the process environment
//! (injectable for tests).
Result<Connection> ResolveConnection(const std::map<std::string, std::string>& env,
                                     const std::string& explicit_path = "",
                                     const std::string& context = "",
                                     const std::string& service_account_dir = kServiceAccountDir);

}  // namespace rsl::k8s
