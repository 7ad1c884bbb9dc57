#include "data/catalog.h"

#include <sys/stat.h>

#include <ctime>

#include "base/codes.h"
#include "base/file.h"
#include "base/strings.h"

namespace rsl::data {
namespace {

const std::vector<std::string> kMigrations = {
    "CREATE TABLE data_sources ("
    " name TEXT PRIMARY KEY, kind TEXT NOT NULL, config TEXT NOT NULL,"
    " secret TEXT NOT NULL DEFAULT '', created_at TEXT NOT NULL)",
};

std::string NowRfc3339() { return FormatUtc(std::time(nullptr), "%Y-%m-%dT%H:%M:%SZ"); }

std::string Mask(const std::string& key) {
  if (key.empty()) return "";
  if (key.size() <= 8) return "****";
  return key.substr(0, 4) + "****" + key.substr(key.size() - 4);
}

nlohmann::json ConfigJson(const Datasource& ds) {
  nlohmann::json j = {{"kind", ds.kind}};
  if (ds.kind == "hdfs") {
    j["namenodes"] = ds.namenodes;
    j["kerberos"] = ds.kerberos;
    if (!ds.webhdfs_url.empty()) j["webhdfsUrl"] = ds.webhdfs_url;
  } else if (ds.kind == "ceph" || ds.kind == "s3") {
    j["endpoint"] = ds.endpoint;
    j["region"] = ds.region;
    j["pathStyle"] = ds.path_style;
    if (!ds.bucket.empty()) j["bucket"] = ds.bucket;
  } else if (ds.kind == "local") {
    j["authority"] = ds.authority;
    j["path"] = ds.path;
  }
  return j;
}

Datasource FromRow(const std::string& name, const std::string& kind, const std::string& config,
                   const std::string& secret, const std::string& created) {
  Datasource ds;
  ds.name = name;
  ds.kind = kind;
  ds.created_at = created;
  auto j = nlohmann::json::parse(config, nullptr, false);
  if (j.is_object()) {
    ds.namenodes = j.value("namenodes", std::vector<std::string>{});
    ds.kerberos = j.value("kerberos", false);
    ds.webhdfs_url = j.value("webhdfsUrl", "");
    ds.endpoint = j.value("endpoint", "");
    ds.region = j.value("region", "us-east-1");
    ds.path_style = j.value("pathStyle", true);
    ds.bucket = j.value("bucket", "");
    ds.authority = j.value("authority", "");
    ds.path = j.value("path", "");
  }
  auto s = nlohmann::json::parse(secret.empty() ? "{}" : secret, nullptr, false);
  if (s.is_object()) {
    ds.access_key = s.value("accessKey", "");
    ds.secret_key = s.value("secretKey", "");
  }
  return ds;
}

std::string HostOf(const std::string& hostport) { return hostport.substr(0, hostport.find(':')); }

}  // namespace

nlohmann::json Datasource::RedactedJson() const {
  nlohmann::json j = ConfigJson(*this);
  j["name"] = name;
  if (kind == "ceph" || kind == "s3") {
    j["accessKey"] = Mask(access_key);
    j["secretKey"] = secret_key.empty() ? "" : "(set)";
  }
  j["createdAt"] = created_at;
  return j;
}

Status ValidateDatasource(const Datasource& ds) {
  auto bad = [](const std::string& flag, const std::string& msg) {
    return Error(codes::kInvalidArgument, msg).Path(flag);
  };
  if (ds.name.empty()) return bad("--name", "a datasource needs a name");
  for (char c : ds.name) {
    if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_' || c == '.')) {
      return bad("--name", "invalid character in name " + Quote(ds.name))
          .Hint("use letters, digits, '-', '_' and '.'");
    }
  }
  if (ds.kind == "hdfs") {
    if (ds.namenodes.empty())
      return bad("--namenodes", "hdfs needs at least one namenode (host:port)");
    for (const auto& nn : ds.namenodes) {
      if (nn.empty() || nn.find(':') == std::string::npos) {
        return bad("--namenodes", "namenode " + Quote(nn) + " is not host:port")
            .Hint("e.g. --namenodes \"ns1:8020,ns2:8020\"");
      }
    }
    for (const auto& part : Split(ds.webhdfs_url, ',')) {
      std::string u(Trim(part));
      if (!u.empty() && !StartsWith(u, "http://") && !StartsWith(u, "https://")) {
        return bad("--webhdfs-url", "not an http(s) URL: " + Quote(u));
      }
    }
  } else if (ds.kind == "ceph" || ds.kind == "s3") {
    if (ds.kind == "ceph" && ds.endpoint.empty())
      return bad("--endpoint", "ceph needs --endpoint URL");
    if (!ds.endpoint.empty() && !StartsWith(ds.endpoint, "http://") &&
        !StartsWith(ds.endpoint, "https://")) {
      return bad("--endpoint", "not an http(s) URL: " + Quote(ds.endpoint))
          .Hint("e.g. http://127.0.0.1:7480");
    }
    if (ds.access_key.empty()) return bad("--access-key", ds.kind + " needs --access-key");
    if (ds.secret_key.empty()) return bad("--secret-key", ds.kind + " needs --secret-key");
  } else if (ds.kind == "local") {
    auto u = ParseUri(ds.authority);
    if (ds.authority.empty() || !u.ok() || u->scheme == "file" || !u->path.empty()) {
      return bad("--authority", "authority must be scheme://name, e.g. hdfs://ns1")
          .Value(ds.authority);
    }
    if (ds.path.empty()) return bad("--path", "local needs --path DIR");
  } else {
    return bad("kind", "unknown datasource kind " + Quote(ds.kind))
        .Hint("one of hdfs, ceph, s3, local");
  }
  return Status::Ok();
}

Result<std::unique_ptr<Catalog>> Catalog::Open(const std::string& state_dir) {
  RSL_RETURN_IF_ERROR(MakeDirs(state_dir));
  ::chmod(state_dir.c_str(), 0700);
  auto db = Db::Open(StateDbPath(state_dir));
  if (!db.ok()) return db.error();
  RSL_RETURN_IF_ERROR((*db)->Migrate("data", kMigrations));
  auto box = SecretBox::ForStateDir(state_dir);
  if (!box.ok()) return box.error();
  // Credentials written before they were sealed, or sealed with a key being rotated out.
  auto resealed =
      ResealColumn(**db, **box, "data_sources", "secret", "'datasource:' || name", "secret != ''");
  if (!resealed.ok()) return resealed.error();
  return std::unique_ptr<Catalog>(new Catalog(std::move(*db), std::move(*box)));
}

Status Catalog::Register(Datasource ds, bool replace) {
  RSL_RETURN_IF_ERROR(ValidateDatasource(ds));
  if (ds.kind == "local") {
    while (ds.authority.size() > 1 && ds.authority.back() == '/') ds.authority.pop_back();
    while (ds.path.size() > 1 && ds.path.back() == '/') ds.path.pop_back();
  }
  std::lock_guard<std::mutex> lock(mu_);
  if (!replace) {
    auto q = db_->Prepare("SELECT 1 FROM data_sources WHERE name = ?");
    if (!q.ok()) return q.status();
    q->Bind(1, ds.name);
    if (q->Step()) {
      return Error(codes::kConflict, "datasource " + Quote(ds.name) + " already exists")
          .Value(ds.name)
          .Hint("pick another --name, or remove it first");
    }
  }
  nlohmann::json secret = nlohmann::json::object();
  if (!ds.access_key.empty()) secret["accessKey"] = ds.access_key;
  if (!ds.secret_key.empty()) secret["secretKey"] = ds.secret_key;
  auto st = db_->Prepare(
      "INSERT OR REPLACE INTO data_sources(name, kind, config, secret, created_at)"
      " VALUES(?, ?, ?, ?, ?)");
  if (!st.ok()) return st.status();
  std::string sealed = box_->Seal(secret.dump(), "datasource:" + ds.name);
  st->Bind(1, ds.name).Bind(2, ds.kind).Bind(3, ConfigJson(ds).dump()).Bind(4, sealed);
  st->Bind(5, NowRfc3339());
  return st->Run();
}

Result<std::vector<Datasource>> Catalog::List() {
  std::lock_guard<std::mutex> lock(mu_);
  auto q =
      db_->Prepare("SELECT name, kind, config, secret, created_at FROM data_sources ORDER BY name");
  if (!q.ok()) return q.error();
  std::vector<Datasource> out;
  while (q->Step()) {
    std::string secret = q->Text(3);
    if (SecretBox::IsSealed(secret)) {
      auto opened = box_->Open(secret, "datasource:" + q->Text(0));
      if (!opened.ok()) return opened.error();
      secret = std::move(*opened);
    }
    out.push_back(FromRow(q->Text(0), q->Text(1), q->Text(2), secret, q->Text(4)));
  }
  if (!q->status().ok()) return q->status().error();
  return out;
}

Result<Datasource> Catalog::Get(const std::string& name) {
  auto all = List();
  if (!all.ok()) return all.error();
  std::vector<std::string> names;
  for (auto& ds : *all) {
    if (ds.name == name) return ds;
    names.push_back(ds.name);
  }
  return Error(codes::kNotFound, "no datasource named " + Quote(name))
      .Value(name)
      .Hint(ClosestHint(name, names, "seedctl datasource list shows the registered ones"));
}

Status Catalog::Remove(const std::string& name) {
  auto ds = Get(name);
  if (!ds.ok()) return ds.status();
  std::lock_guard<std::mutex> lock(mu_);
  auto st = db_->Prepare("DELETE FROM data_sources WHERE name = ?");
  if (!st.ok()) return st.status();
  st->Bind(1, name);
  return st->Run();
}

Result<std::optional<Datasource>> Catalog::Resolve(const Uri& uri) {
  auto all = List();
  if (!all.ok()) return all.error();
  std::string root = uri.Root();
  for (auto& ds : *all) {
    if (ds.kind == "local" && ds.authority == root) return std::optional<Datasource>(ds);
  }
  std::vector<const Datasource*> same_kind;
  for (auto& ds : *all) {
    if (ds.kind != uri.scheme) continue;
    same_kind.push_back(&ds);
    if (ds.kind == "hdfs") {
      if (ds.name == uri.authority) return std::optional<Datasource>(ds);
      for (const auto& nn : ds.namenodes) {
        if (HostOf(nn) == HostOf(uri.authority)) return std::optional<Datasource>(ds);
      }
    } else if (!ds.bucket.empty() && ds.bucket == uri.authority) {
      return std::optional<Datasource>(ds);
    }
  }
  std::vector<const Datasource*> unbound;
  for (auto* ds : same_kind) {
    if (ds->kind == "hdfs" || ds->bucket.empty()) unbound.push_back(ds);
  }
  if (unbound.size() == 1) return std::optional<Datasource>(*unbound[0]);
  if (unbound.size() > 1) {
    std::vector<std::string> names;
    for (auto* ds : unbound) names.push_back(ds->name);
    return Error(codes::kDataSourceUnreachable, "several " + uri.scheme +
                                                    " datasources could serve " + uri.ToString() +
                                                    ": " + Join(names, ", "))
        .Value(uri.ToString())
        .Hint("register the datasource with --bucket (s3, ceph) or name it after the namenode");
  }
  return std::optional<Datasource>();
}

}  // namespace rsl::data
