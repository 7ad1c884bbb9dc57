#include "api/auth.h"

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

const std::vector<std::string> kMigrations = {
    "CREATE TABLE api_tokens ("
    "  hash TEXT PRIMARY KEY, subject TEXT NOT NULL, role TEXT NOT NULL,"
    "  namespaces TEXT NOT NULL, created_ms INTEGER NOT NULL)",
};

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

Result<std::unique_ptr<TokenStore>> TokenStore::Open(const std::string& state_dir) {
  RSL_RETURN_IF_ERROR(MakeDirs(state_dir));
  auto db = Db::Open(StateDbPath(state_dir));
  if (!db.ok()) return db.error();
  RSL_RETURN_IF_ERROR((*db)->Migrate("api_tokens", kMigrations));
  return std::unique_ptr<TokenStore>(new TokenStore(std::move(*db)));
}

Result<std::string> TokenStore::Create(const std::string& subject, Role role,
                                       const std::vector<std::string>& namespaces) {
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
      "INSERT INTO api_tokens(hash, subject, role, namespaces, created_ms) VALUES(?,?,?,?,?)");
  if (!st.ok()) return st.error();
  st->Bind(1, hash).Bind(2, who).Bind(3, RoleName(role)).Bind(4, Join(namespaces, ";"));
  st->Bind(5, Env::Default()->NowMs());
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

std::optional<Principal> TokenStore::Authenticate(const std::string& token) {
  if (token.empty()) return std::nullopt;
  std::string hash = TokenHash(token);
  std::lock_guard<std::mutex> lock(mu_);
  auto it = static_.find(hash);
  if (it != static_.end()) return it->second;
  auto st = db_->Prepare("SELECT subject, role, namespaces FROM api_tokens WHERE hash = ?");
  if (!st.ok()) return std::nullopt;
  st->Bind(1, hash);
  if (!st->Step()) return std::nullopt;
  Principal p;
  p.subject = st->Text(0);
  auto role = ParseRole(st->Text(1));
  p.role = role.ok() ? *role : Role::kViewer;
  p.namespaces = SplitNamespaces(st->Text(2));
  p.token_id = hash.substr(0, kTokenIdChars);
  return p;
}

Result<std::vector<TokenInfo>> TokenStore::List() {
  std::lock_guard<std::mutex> lock(mu_);
  auto st = db_->Prepare(
      "SELECT hash, subject, role, namespaces, created_ms FROM api_tokens ORDER BY created_ms");
  if (!st.ok()) return st.error();
  std::vector<TokenInfo> out;
  while (st->Step()) {
    TokenInfo t;
    t.token_id = st->Text(0).substr(0, kTokenIdChars);
    t.subject = st->Text(1);
    auto role = ParseRole(st->Text(2));
    t.role = role.ok() ? *role : Role::kViewer;
    t.namespaces = SplitNamespaces(st->Text(3));
    t.created_ms = st->Int(4);
    out.push_back(std::move(t));
  }
  if (!st->status().ok()) return st->status().error();
  return out;
}

}  // namespace rsl::api
