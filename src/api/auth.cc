#include "api/auth.h"

#include <cctype>
#include <fstream>

#include "base/codes.h"
#include "base/env.h"
#include "base/file.h"
#include "base/sha256.h"
#include "base/strings.h"

namespace rsl::api {

namespace {

constexpr size_t kTokenRandomBytes = 24;  // 192 bits: far beyond guessing
constexpr size_t kTokenIdChars = 12;      // enough to tell tokens apart in the audit log
constexpr char kTokenPrefix[] = "rsl_";

const std::vector<std::string> kTokenMigrations = {
    "CREATE TABLE api_tokens ("
    "  hash TEXT PRIMARY KEY, subject TEXT NOT NULL, role TEXT NOT NULL,"
    "  namespaces TEXT NOT NULL, created_ms INTEGER NOT NULL)",
    "ALTER TABLE api_tokens ADD COLUMN expires_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE api_tokens ADD COLUMN revoked_ms INTEGER NOT NULL DEFAULT 0;"
    "ALTER TABLE api_tokens ADD COLUMN last_used_ms INTEGER NOT NULL DEFAULT 0",
};

// The shortest id prefix `token revoke` accepts: 6 hex characters are 16.7 million ids, so a
// typo cannot revoke a token by accident without also being ambiguous.
constexpr size_t kMinRevokePrefix = 6;

constexpr char kTokenColumns[] =
    "hash, subject, role, namespaces, created_ms, expires_ms, revoked_ms, last_used_ms";

TokenInfo ReadTokenRow(const Stmt& st) {
  TokenInfo t;
  t.token_id = st.Text(0).substr(0, kTokenIdChars);
  t.subject = st.Text(1);
  auto role = ParseRole(st.Text(2));
  t.role = role.ok() ? *role : Role::kViewer;
  t.namespaces = SplitNamespaces(st.Text(3));
  t.created_ms = st.Int(4);
  t.expires_ms = st.Int(5);
  t.revoked_ms = st.Int(6);
  t.last_used_ms = st.Int(7);
  return t;
}

bool ValidNamespace(const std::string& ns) {
  if (ns == "*") return true;
  if (ns.empty() || ns.size() > 63) return false;
  for (char c : ns) {
    if (!((c >= 'a' && c <= 'z') || (c >= '0' && c <= '9') || c == '-')) return false;
  }
  return ns.front() != '-' && ns.back() != '-';
}

Status CheckNamespaces(const std::vector<std::string>& namespaces) {
  if (namespaces.empty()) {
    return Error(codes::kInvalidArgument, "a token needs at least one namespace")
        .Hint("pass --namespace NAME (or '*' for every namespace)");
  }
  for (const auto& ns : namespaces) {
    if (!ValidNamespace(ns)) {
      return Error(codes::kInvalidArgument, "invalid namespace " + Quote(ns))
          .Value(ns)
          .Hint("a namespace is a DNS-1123 label (a-z, 0-9, '-', at most 63 characters) or '*'");
    }
  }
  return Status::Ok();
}

}  // namespace

Result<Role> ParseRole(const std::string& name) {
  if (name == "viewer") return Role::kViewer;
  if (name == "editor") return Role::kEditor;
  if (name == "admin") return Role::kAdmin;
  Error e(codes::kInvalidArgument, "unknown role " + Quote(name));
  e.Value(name);
  std::string close = ClosestMatch(name, {"viewer", "editor", "admin"});
  e.Hint(close.empty() ? "use viewer, editor or admin" : "did you mean '" + close + "'?");
  return e;
}

const char* RoleName(Role role) {
  switch (role) {
    case Role::kViewer:
      return "viewer";
    case Role::kEditor:
      return "editor";
    case Role::kAdmin:
      return "admin";
  }
  return "viewer";
}

std::string Principal::DefaultNamespace() const {
  if (namespaces.empty() || namespaces.front() == "*") return "default";
  return namespaces.front();
}

bool Principal::InNamespace(const std::string& ns) const {
  if (role == Role::kAdmin) return true;
  for (const auto& n : namespaces) {
    if (n == "*" || n == ns) return true;
  }
  return false;
}

std::string TokenHash(const std::string& token) { return Sha256Hex(token); }

Result<std::string> NewToken() {
  std::ifstream in("/dev/urandom", std::ios::binary);
  std::string bytes(kTokenRandomBytes, '\0');
  if (!in.read(bytes.data(), static_cast<std::streamsize>(bytes.size()))) {
    return Error(codes::kIoError, "cannot read /dev/urandom for a new token");
  }
  return std::string(kTokenPrefix) + HexEncode(bytes);
}

std::vector<std::string> SplitNamespaces(const std::string& list) {
  std::vector<std::string> out;
  std::string cur;
  for (char c : list + ";") {
    if (c == ';' || c == ',') {
      std::string t(Trim(cur));
      if (!t.empty()) out.push_back(t);
      cur.clear();
    } else {
      cur += c;
    }
  }
  return out;
}

Result<Principal> PrincipalFromCertificate(const std::string& common_name,
                                           const std::vector<std::string>& organizations,
                                           const std::string& fingerprint) {
  const std::string hint =
      "a client certificate's subject is CN=<subject> with O=<namespace>:<role> entries, e.g. "
      "/CN=alice/O=risk:editor (docs/security.md)";
  const std::string who = "client certificate CN=" + Quote(common_name);
  if (common_name.empty()) {
    return Error(codes::kUnauthenticated, "client certificate has no subject CN").Hint(hint);
  }
  Principal p;
  p.subject = common_name;
  std::string role_seen;
  for (const std::string& o : organizations) {
    size_t colon = o.rfind(':');
    if (colon == std::string::npos) continue;  // an organisation name, not a role of ours
    std::string ns = o.substr(0, colon);
    auto role = ParseRole(o.substr(colon + 1));
    if (!role.ok() || !ValidNamespace(ns)) {
      return Error(codes::kUnauthenticated, who + ": invalid role entry O=" + Quote(o))
          .Value(o)
          .Hint(role.ok() ? hint : role.error().hint);
    }
    if (!role_seen.empty() && role_seen != RoleName(*role)) {
      return Error(codes::kUnauthenticated,
                   who + " names two roles, " + role_seen + " and " + RoleName(*role))
          .Value(o)
          .Hint("a certificate holds one role, as a token does: issue one certificate per role");
    }
    if (*role == Role::kAdmin && ns != "*") {
      return Error(codes::kUnauthenticated, who + ": O=" + Quote(o) + " would make a cluster admin")
          .Value(o)
          .Hint("admin is cluster-wide: write O=*:admin, or give editor in the namespace");
    }
    role_seen = RoleName(*role);
    p.role = *role;
    p.namespaces.push_back(ns);
  }
  if (p.namespaces.empty()) {
    return Error(codes::kUnauthenticated, who + " names no namespace role").Hint(hint);
  }
  p.token_id = CertificateId(fingerprint);
  return p;
}

std::string CertificateId(const std::string& fingerprint) {
  std::string hex;
  for (char c : fingerprint) {
    if (c != ':' && hex.size() < kTokenIdChars) {
      hex += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    }
  }
  return "x509:" + hex;
}

Result<int64_t> ParseTokenTtl(const std::string& text) {
  auto bad = [&]() {
    return Error(codes::kInvalidArgument, "invalid token lifetime " + Quote(text))
        .Value(text)
        .Hint("a whole number with s, m, h or d, e.g. 12h or 90d");
  };
  if (text.size() < 2 || text.size() > 12) return bad();
  std::string digits = text.substr(0, text.size() - 1);
  if (digits.find_first_not_of("0123456789") != std::string::npos) return bad();
  int64_t unit = 0;
  switch (text.back()) {
    case 's':
      unit = 1000;
      break;
    case 'm':
      unit = 60'000;
      break;
    case 'h':
      unit = 3'600'000;
      break;
    case 'd':
      unit = 86'400'000;
      break;
    default:
      return bad();
  }
  int64_t n = std::stoll(digits);
  if (n <= 0 || n > int64_t{3650} * 86'400'000 / unit) return bad();  // at most 10 years
  return n * unit;
}

Result<std::unique_ptr<TokenStore>> TokenStore::Open(const std::string& state_dir, Env* env) {
  RSL_RETURN_IF_ERROR(MakeDirs(state_dir));
  auto db = Db::Open(StateDbPath(state_dir));
  if (!db.ok()) return db.error();
  RSL_RETURN_IF_ERROR((*db)->Migrate("api_tokens", kTokenMigrations));
  return std::unique_ptr<TokenStore>(new TokenStore(std::move(*db), env ? env : Env::Default()));
}

Result<std::string> TokenStore::Create(const std::string& subject, Role role,
                                       const std::vector<std::string>& namespaces, int64_t ttl_ms) {
  RSL_RETURN_IF_ERROR(CheckNamespaces(namespaces));
  auto token = NewToken();
  if (!token.ok()) return token.error();
  std::string hash = TokenHash(*token);
  std::string who = subject;
  if (who.empty()) {
    std::string ns = namespaces.front() == "*" ? "all" : namespaces.front();
    who = std::string(RoleName(role)) + "-" + ns + "-" + hash.substr(0, 8);
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto st = db_->Prepare(
      "INSERT INTO api_tokens(hash, subject, role, namespaces, created_ms, expires_ms) "
      "VALUES(?,?,?,?,?,?)");
  if (!st.ok()) return st.error();
  st->Bind(1, hash).Bind(2, who).Bind(3, RoleName(role)).Bind(4, Join(namespaces, ";"));
  const int64_t now = env_->NowMs();
  st->Bind(5, now).Bind(6, ttl_ms > 0 ? now + ttl_ms : int64_t{0});
  RSL_RETURN_IF_ERROR(st->Run());
  return *token;
}

Status TokenStore::LoadTokensFile(const std::string& path) {
  auto text = ReadFile(path);
  if (!text.ok()) return text.error();
  std::map<std::string, Principal> loaded;
  int line_no = 0;
  for (const auto& raw : Split(*text, '\n')) {
    ++line_no;
    std::string line(Trim(raw));
    if (line.empty() || line[0] == '#') continue;
    auto fields = Split(line, ',');
    SourcePos pos{path, line_no, 1};
    if (fields.size() != 4) {
      return Error(codes::kInvalidArgument,
                   "expected 4 comma-separated fields, got " + std::to_string(fields.size()))
          .At(pos)
          .Hint("each line is token,subject,role,namespace1;namespace2");
    }
    for (auto& f : fields) f = std::string(Trim(f));
    if (fields[0].size() < 16) {
      return Error(codes::kInvalidArgument, "token too short (at least 16 characters)").At(pos);
    }
    auto role = ParseRole(fields[2]);
    if (!role.ok()) return role.error().At(pos);
    Principal p;
    p.subject = fields[1];
    p.role = *role;
    p.namespaces = SplitNamespaces(fields[3]);
    Status ns_ok = CheckNamespaces(p.namespaces);
    if (!ns_ok.ok()) return ns_ok.error().At(pos);
    std::string hash = TokenHash(fields[0]);
    p.token_id = hash.substr(0, kTokenIdChars);
    loaded[hash] = std::move(p);
  }
  std::lock_guard<std::mutex> lock(mu_);
  for (auto& [h, p] : loaded) static_[h] = std::move(p);
  return Status::Ok();
}

AuthOutcome TokenStore::Check(const std::string& token) {
  AuthOutcome out;
  if (token.empty()) {
    out.failure = AuthFailure::kNoToken;
    return out;
  }
  std::string hash = TokenHash(token);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = static_.find(hash);
  if (it != static_.end()) {
    out.who = it->second;
    return out;
  }
  out.failure = AuthFailure::kUnknown;
  auto st =
      db_->Prepare(std::string("SELECT ") + kTokenColumns + " FROM api_tokens WHERE hash = ?");
  if (!st.ok()) return out;
  st->Bind(1, hash);
  if (!st->Step()) return out;
  TokenInfo row = ReadTokenRow(*st);
  st->Reset();
  out.token_id = row.token_id;
  const int64_t now = env_->NowMs();
  if (row.revoked_ms > 0) {
    out.failure = AuthFailure::kRevoked;
    out.when_ms = row.revoked_ms;
    return out;
  }
  if (row.expires_ms > 0 && now >= row.expires_ms) {
    out.failure = AuthFailure::kExpired;
    out.when_ms = row.expires_ms;
    return out;
  }
  int64_t& written = used_[hash];
  if (written == 0) written = row.last_used_ms;
  if (now - written >= kLastUsedResolutionMs) {
    // Best effort: a busy database must not fail the request that uses the token.
    auto up = db_->Prepare("UPDATE api_tokens SET last_used_ms = ? WHERE hash = ?");
    if (up.ok() && up->Bind(1, now).Bind(2, hash).Run().ok()) written = now;
  }
  Principal p;
  p.subject = row.subject;
  p.role = row.role;
  p.namespaces = row.namespaces;
  p.token_id = row.token_id;
  out.who = std::move(p);
  out.failure = AuthFailure::kNone;
  return out;
}

Result<std::vector<TokenInfo>> TokenStore::List() {
  std::lock_guard<std::mutex> lock(mu_);
  auto st =
      db_->Prepare(std::string("SELECT ") + kTokenColumns + " FROM api_tokens ORDER BY created_ms");
  if (!st.ok()) return st.error();
  std::vector<TokenInfo> out;
  while (st->Step()) out.push_back(ReadTokenRow(*st));
  if (!st->status().ok()) return st->status().error();
  return out;
}

Result<TokenInfo> TokenStore::Revoke(const std::string& id_prefix) {
  std::string id = ToLower(std::string(Trim(id_prefix)));
  if (id.size() < kMinRevokePrefix || id.size() > kTokenIdChars ||
      id.find_first_not_of("0123456789abcdef") != std::string::npos) {
    return Error(codes::kInvalidArgument, "invalid token id " + Quote(id_prefix))
        .Value(id_prefix)
        .Hint("give the ID column of `seedctl token list` (at least 6 of its hex characters)");
  }
  std::lock_guard<std::mutex> lock(mu_);
  auto st = db_->Prepare(std::string("SELECT ") + kTokenColumns +
                         " FROM api_tokens WHERE substr(hash, 1, ?) = ?");
  if (!st.ok()) return st.error();
  st->Bind(1, static_cast<int64_t>(id.size())).Bind(2, id);
  std::vector<TokenInfo> found;
  while (st->Step()) found.push_back(ReadTokenRow(*st));
  if (!st->status().ok()) return st->status().error();
  if (found.empty()) {
    return Error(codes::kNotFound, "no token with id " + Quote(id))
        .Value(id)
        .Hint("see `seedctl token list`; tokens of a --tokens file are revoked by editing it");
  }
  if (found.size() > 1) {
    return Error(codes::kInvalidArgument,
                 "token id " + Quote(id) + " matches " + std::to_string(found.size()) + " tokens")
        .Value(id)
        .Hint("give more characters of the id");
  }
  TokenInfo t = found.front();
  if (t.revoked_ms > 0) return t;
  auto up = db_->Prepare(
      "UPDATE api_tokens SET revoked_ms = ? WHERE substr(hash, 1, ?) = ? AND revoked_ms = 0");
  if (!up.ok()) return up.error();
  t.revoked_ms = env_->NowMs();
  up->Bind(1, t.revoked_ms).Bind(2, static_cast<int64_t>(id.size())).Bind(3, id);
  RSL_RETURN_IF_ERROR(up->Run());
  return t;
}

}  // namespace rsl::api
