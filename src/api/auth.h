// Bearer-token authentication and namespace-scoped authorisation for rsl-controller.
//
// Tokens are random strings (`rsl_` + 48 hex). Only their sha256 is stored, in the api
// component's table of the state directory's database (<state-dir>/rsl.db), so a leaked
// database does not leak credentials. A static tokens file (kube-apiserver's
// --token-auth-file, one `token,subject,role,ns1;ns2` per line) may add tokens kept in memory.
//
// Roles, as Kubernetes' default ClusterRoles view/edit/admin:
//   viewer: read workloads, events, logs, lineage, configmaps in its namespaces;
//   editor: viewer + submit, cancel, rollback, create configmaps and secrets;
//   admin:  everything, in every namespace, plus cluster-wide state (nodes, cluster status,
//           metrics, the whole audit log).
// A token's namespaces list may be `*` (every namespace).
//
// Threading: TokenStore is safe to use from many threads (one internal mutex).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/sqlite.h"
#include "base/status.h"

namespace rsl::api {

enum class Role { kViewer = 0, kEditor = 1, kAdmin = 2 };

//! "viewer" | "editor" | "admin" -> Role; INVALID_ARGUMENT with a hint otherwise.
Result<Role> ParseRole(const std::string& name);
const char* RoleName(Role role);

//! Who is calling, as resolved from a token.
struct Principal {
  std::string subject;  //!< e.g. "alice" or "editor-risk-1a2b3c4d"
  Role role = Role::kViewer;
  std::vector<std::string> namespaces;  //!< where the role applies; "*" = everywhere
  std::string token_id;                 //!< first 12 hex of the token's hash (for the audit log)

  bool IsClusterAdmin() const { return role == Role::kAdmin; }
  //! The namespace commands default to: the first one listed ("default" for "*").
  std::string DefaultNamespace() const;
  //! Whether the token's role applies in `ns` at all.
  bool InNamespace(const std::string& ns) const;
  bool CanRead(const std::string& ns) const { return InNamespace(ns); }
  bool CanWrite(const std::string& ns) const { return InNamespace(ns) && role >= Role::kEditor; }
};

//! The token row for `seedctl token list`-like views (never the token itself).
struct TokenInfo {
  std::string token_id;
  std::string subject;
  Role role = Role::kViewer;
  std::vector<std::string> namespaces;
  int64_t created_ms = 0;
};

class TokenStore {
 public:
  //! Opens <state_dir>/rsl.db (creating the directory and the api tables as needed).
  static Result<std::unique_ptr<TokenStore>> Open(const std::string& state_dir);

  //! Creates a token and returns it in clear (the only time it is ever visible).
  //! `subject` may be empty: then `<role>-<first namespace>-<token id prefix>`.
  Result<std::string> Create(const std::string& subject, Role role,
                             const std::vector<std::string>& namespaces);

  //! Adds the tokens of a static tokens file (kept in memory, hashed). Errors name the line.
  Status LoadTokensFile(const std::string& path);

  //! The principal a bearer token stands for, or nullopt when it is unknown.
  std::optional<Principal> Authenticate(const std::string& token);

  Result<std::vector<TokenInfo>> List();

 private:
  explicit TokenStore(std::unique_ptr<Db> db) : db_(std::move(db)) {}
  std::mutex mu_;
  std::unique_ptr<Db> db_;                   // GUARDED_BY(mu_)
  std::map<std::string, Principal> static_;  // hash -> principal, GUARDED_BY(mu_)
};

//! sha256 hex of a token (what the store keeps).
std::string TokenHash(const std::string& token);
//! A fresh random token: "rsl_" + 48 hex characters from /dev/urandom.
Result<std::string> NewToken();
//! Splits "a;b,c" into {"a","b","c"} (either separator), dropping empty parts.
std::vector<std::string> SplitNamespaces(const std::string& list);

}  // namespace rsl::api
