// Bearer-token authentication and namespace-scoped authorisation for rsl-controller.
//
// Tokens are random strings (`rsl_` + 48 hex). Only their sha256 is stored, in the api
// component's table of the state directory's database (<state-dir>/rsl.db), so a leaked
// database does not leak credentials. A stored token may expire (a TTL given at creation) and
// may be revoked; both are read from the database on every request, so `seedctl token revoke`
// (another process) takes effect at once on a running controller. The time a token was last
// used is recorded to the minute (kLastUsedResolutionMs), not on every request. A static tokens
// file (kube-apiserver's
// --token-auth-file, one `token,subject,role,ns1;ns2` per line) may add tokens kept in memory.
//
// Roles, as Kubernetes' default ClusterRoles view/edit/admin:
//   viewer: read workloads, events, logs, lineage, configmaps in its namespaces;
//   editor: viewer + submit, cancel, rollback, create configmaps and secrets;
//   admin:  everything, in every namespace, plus cluster-wide state (nodes, cluster status,
//           metrics, the whole audit log).
// A token's namespaces list may be `*` (every namespace).
//
// Client certificates (mutual TLS, rsl-controller --tls-client-ca) are the other way in: a
// verified certificate stands for the principal its subject names (PrincipalFromCertificate):
//   CN            the subject;
//   O=NS:ROLE     the role in namespace NS (one O entry per namespace; every entry names the
//                 same role, as a token has one role); O=*:ROLE in every namespace; admin is
//                 cluster-wide, so it is written O=*:admin. O entries without ':' are not
//                 ours and are ignored.
// A request with a bearer token is authenticated by the token, one without by the certificate.
//
// Threading: TokenStore is safe to use from many threads (one internal mutex).
#pragma once

#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "base/env.h"
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
  int64_t expires_ms = 0;    //!< 0 = never
  int64_t revoked_ms = 0;    //!< 0 = not revoked
  int64_t last_used_ms = 0;  //!< 0 = never used (to kLastUsedResolutionMs)
};

//! Why a bearer token was refused.
enum class AuthFailure { kNone, kNoToken, kUnknown, kExpired, kRevoked, kCertificate };

//! What TokenStore::Check makes of a token: the principal, or why not.
struct AuthOutcome {
  std::optional<Principal> who;
  AuthFailure failure = AuthFailure::kNone;
  std::string token_id;  //!< of a stored token, even a refused one ("" when unknown)
  int64_t when_ms = 0;   //!< kExpired: when it expired; kRevoked: when it was revoked
  std::string detail;    //!< kCertificate: why the certificate maps to no principal
};

//! Last-used times are written at most this often per token: a write per request would put
//! the database's writer on every read's path.
inline constexpr int64_t kLastUsedResolutionMs = 60'000;

class TokenStore {
 public:
  //! Opens <state_dir>/rsl.db (creating the directory and the api tables as needed). `env`
  //! (not owned, default the real one) is the clock of expiry and last use.
  static Result<std::unique_ptr<TokenStore>> Open(const std::string& state_dir, Env* env = nullptr);

  //! Creates a token and returns it in clear (the only time it is ever visible).
  //! `subject` may be empty: then `<role>-<first namespace>-<token id prefix>`. `ttl_ms` > 0:
  //! the token expires that long after now; 0: never.
  Result<std::string> Create(const std::string& subject, Role role,
                             const std::vector<std::string>& namespaces, int64_t ttl_ms = 0);

  //! Adds the tokens of a static tokens file (kept in memory, hashed). Errors name the line.
  Status LoadTokensFile(const std::string& path);

  //! The principal a bearer token stands for, or why it is refused (unknown, expired,
  //! revoked). A stored token's use is recorded (see kLastUsedResolutionMs).
  AuthOutcome Check(const std::string& token);
  //! Check's principal, or nullopt.
  std::optional<Principal> Authenticate(const std::string& token) { return Check(token).who; }

  //! The stored tokens, oldest first, revoked and expired ones included.
  Result<std::vector<TokenInfo>> List();
  //! Revokes the stored token whose id starts with `id_prefix` (at least 6 hex characters of
  //! the id `token list` shows). NOT_FOUND when none, INVALID_ARGUMENT when several match or
  //! the prefix is too short; revoking a revoked token is a no-op. Returns the token's row.
  Result<TokenInfo> Revoke(const std::string& id_prefix);

 private:
  TokenStore(std::unique_ptr<Db> db, Env* env) : db_(std::move(db)), env_(env) {}
  std::mutex mu_;
  std::unique_ptr<Db> db_;  // GUARDED_BY(mu_)
  Env* env_;
  std::map<std::string, Principal> static_;  // hash -> principal, GUARDED_BY(mu_)
  std::map<std::string, int64_t> used_;      // hash -> last use written, GUARDED_BY(mu_)
};

//! "x509:" + the first 12 hex digits (lower case) of a certificate's SHA-256 fingerprint: what
//! the audit log names a certificate by, as a token by its token id.
std::string CertificateId(const std::string& fingerprint);
//! The principal of a verified client certificate (see the top of this file); its token_id is
//! CertificateId(fingerprint).
//! UNAUTHENTICATED saying what is missing or wrong in the subject otherwise.
Result<Principal> PrincipalFromCertificate(const std::string& common_name,
                                           const std::vector<std::string>& organizations,
                                           const std::string& fingerprint);

//! "30m", "12h", "90d" (also s): a token's lifetime in ms. INVALID_ARGUMENT otherwise.
Result<int64_t> ParseTokenTtl(const std::string& text);

//! sha256 hex of a token (what the store keeps).
std::string TokenHash(const std::string& token);
//! A fresh random token: "rsl_" + 48 hex characters from /dev/urandom.
Result<std::string> NewToken();
//! Splits "a;b,c" into {"a","b","c"} (either separator), dropping empty parts.
std::vector<std::string> SplitNamespaces(const std::string& list);

}  // namespace rsl::api
