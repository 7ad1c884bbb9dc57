// HDFS through WebHDFS REST (Hadoop's FileSystem over HTTP): GETFILESTATUS, LISTSTATUS
// (recursively), OPEN with offset/length (following the namenode's redirect to a datanode),
// CREATE (two-step: namenode redirect, then PUT to the datanode), DELETE, MKDIRS. Namenodes are
// tried in order, so an HA pair works when the first is standby (it answers 403 StandbyException).
// Kerberos (SPNEGO) is passed to libcurl's GSS-API negotiation when the datasource says so.
#include <algorithm>
#include <map>
#include <mutex>

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/http_client.h"
#include "base/strings.h"
#include "data/remote.h"

namespace rsl::data {
namespace {

// WebHDFS's default HTTP port on Hadoop 3 namenodes (dfs.namenode.http-address).
constexpr int kDefaultWebHdfsPort = 9870;
constexpr long kConnectTimeoutMs = 3000;
constexpr long kRequestTimeoutMs = 120000;

struct HttpResult {
  long status = 0;
  std::string body;
  std::string location;
  std::string error;
};

class WebHdfsStorage : public Storage {
 public:
  explicit WebHdfsStorage(const Datasource& ds) : kerberos_(ds.kerberos) {
    if (!ds.webhdfs_url.empty()) {  // one URL per namenode, comma-separated
      for (const auto& part : Split(ds.webhdfs_url, ',')) {
        std::string u(Trim(part));
        while (!u.empty() && u.back() == '/') u.pop_back();
        if (!u.empty()) bases_.push_back(u);
      }
    } else {
      for (const auto& nn : ds.namenodes) {
        bases_.push_back("http://" + nn.substr(0, nn.find(':')) + ":" +
                         std::to_string(kDefaultWebHdfsPort));
      }
    }
  }

  Result<ObjectInfo> Stat(const std::string& uri) override {
    auto path = PathOf(uri);
    if (!path.ok()) return path.error();
    auto r = Call("GET", *path, "GETFILESTATUS", "");
    if (!r.ok()) return r.error();
    if (r->status != 200) return HttpError(*r, uri);
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (!j.is_object() || !j.contains("FileStatus")) return BadJson(uri);
    ObjectInfo info = FromStatus(j["FileStatus"], uri, "");
    info.uri = uri;
    return info;
  }

  Status ListBelow(const std::string& uri, std::vector<ObjectInfo>* out) override {
    return Walk(uri, "", out, 0);
  }

  Result<std::string> ReadRange(const std::string& uri, int64_t offset, int64_t length) override {
    auto path = PathOf(uri);
    if (!path.ok()) return path.error();
    auto r = Call("GET", *path, "OPEN",
                  "&offset=" + std::to_string(offset) +
                      (length >= 0 ? "&length=" + std::to_string(length) : ""));
    if (!r.ok()) return r.error();
    if (r->status == 404)
      return Error(codes::kDataSourceNotFound, "no such file: " + uri).Value(uri);
    if (r->status != 200) return HttpError(*r, uri);
    return std::move(r->body);
  }

  Result<std::shared_ptr<const Blob>> ReadAll(const std::string& uri) override {
    auto bytes = ReadRange(uri, 0, -1);
    if (!bytes.ok()) return bytes.error();
    return MakeBlob(std::move(*bytes));
  }

  Status Write(const std::string& uri, std::string_view bytes) override {
    auto path = PathOf(uri);
    if (!path.ok()) return path.status();
    // Step 1: the namenode answers 307 with the datanode to write to; step 2: PUT the data.
    auto r = Call("PUT", *path, "CREATE", "&overwrite=true", nullptr, /*follow=*/false);
    if (!r.ok()) return r.status();
    if (r->status != 307 || r->location.empty()) return HttpError(*r, uri);
    std::string body(bytes);
    auto put = Raw("PUT", r->location, &body, true);
    if (put.status != 201 && put.status != 200) return HttpError(put, uri);
    return Status::Ok();
  }

  Status Delete(const std::string& uri) override {
    auto path = PathOf(uri);
    if (!path.ok()) return path.status();
    auto r = Call("DELETE", *path, "DELETE", "&recursive=true");
    if (!r.ok()) return r.status();
    if (r->status != 200) return HttpError(*r, uri);
    return Status::Ok();
  }

 private:
  Status Walk(const std::string& dir_uri, const std::string& rel, std::vector<ObjectInfo>* out,
              int depth) {
    if (depth > 64)
      return Error(codes::kDataSourceUnreachable, "directory tree too deep at " + dir_uri);
    auto path = PathOf(dir_uri);
    if (!path.ok()) return path.status();
    auto r = Call("GET", *path, "LISTSTATUS", "");
    if (!r.ok()) return r.status();
    if (r->status != 200) return HttpError(*r, dir_uri);
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (!j.is_object() || !j.contains("FileStatuses") ||
        !j["FileStatuses"].contains("FileStatus") || !j["FileStatuses"]["FileStatus"].is_array()) {
      return BadJson(dir_uri);
    }
    for (const auto& st : j["FileStatuses"]["FileStatus"]) {
      std::string name = st.value("pathSuffix", "");
      if (name.empty() || name[0] == '_' || name[0] == '.') continue;
      std::string child_uri = JoinUri(dir_uri, name);
      std::string child_rel = rel.empty() ? name : rel + "/" + name;
      if (st.value("type", "") == "DIRECTORY") {
        RSL_RETURN_IF_ERROR(Walk(child_uri, child_rel, out, depth + 1));
        continue;
      }
      out->push_back(FromStatus(st, child_uri, child_rel));
    }
    return Status::Ok();
  }

  static ObjectInfo FromStatus(const nlohmann::json& st, const std::string& uri,
                               const std::string& rel) {
    ObjectInfo info;
    info.uri = uri;
    info.relative = rel;
    info.is_dir = st.value("type", "") == "DIRECTORY";
    info.size = st.value("length", int64_t{0});
    info.mtime_ms = st.value("modificationTime", int64_t{0});
    info.partitions = HivePartitions(rel);
    return info;
  }

  Result<std::string> PathOf(const std::string& uri) const {
    auto u = ParseUri(uri);
    if (!u.ok()) return u.error();
    return u->path.empty() ? std::string("/") : u->path;
  }

  Error BadJson(const std::string& uri) const {
    return Error(codes::kDataSourceUnreachable, "unexpected WebHDFS response for " + uri)
        .Value(uri);
  }

  Error HttpError(const HttpResult& r, const std::string& uri) const {
    std::string what = "HTTP " + std::to_string(r.status);
    auto j = nlohmann::json::parse(r.body, nullptr, false);
    if (j.is_object() && j.contains("RemoteException")) {
      what += " " + j["RemoteException"].value("exception", "") + ": " +
              j["RemoteException"].value("message", "");
    }
    if (r.status == 404) return Error(codes::kDataSourceNotFound, what + ": " + uri).Value(uri);
    Error e(codes::kDataSourceUnreachable, what + " for " + uri);
    e.Value(uri);
    if (r.status == 401 || r.status == 403)
      e.Hint("check the datasource's Kerberos setting (--kerberos) and ticket");
    return e;
  }

  // Tries each namenode; a standby (403 StandbyException) or an unreachable one moves on.
  Result<HttpResult> Call(const std::string& method, const std::string& path, const std::string& op,
                          const std::string& params, std::string* body = nullptr,
                          bool follow = true) {
    std::vector<std::string> failures;
    for (const auto& base : bases_) {
      std::string url = base + "/webhdfs/v1" + UriEncode(path, true) + "?op=" + op + params;
      HttpResult r = Raw(method, url, body, follow);
      bool standby = r.status == 403 && r.body.find("StandbyException") != std::string::npos;
      if (!r.error.empty() || standby) {
        failures.push_back(base + ": " + (standby ? "standby namenode" : r.error));
        continue;
      }
      return r;
    }
    return Error(codes::kDataSourceUnreachable, "no namenode answered: " + Join(failures, "; "))
        .Hint("check --namenodes / --webhdfs-url with: seedctl datasource test --name N");
  }

  HttpResult Raw(const std::string& method, const std::string& url, std::string* body,
                 bool follow) {
    HttpRequest req;
    req.method = method;
    req.url = url;
    if (body) req.body = *body;
    req.connect_timeout_ms = kConnectTimeoutMs;
    req.timeout_ms = kRequestTimeoutMs;
    req.follow_redirects = follow;
    req.negotiate = kerberos_;
    HttpResult r;
    auto resp = HttpSend(req, &r.error);
    if (resp.ok()) {
      r.status = resp->status;
      r.body = std::move(resp->body);
      r.location = resp->headers["location"];
    }
    return r;
  }

  std::vector<std::string> bases_;
  bool kerberos_;
};

}  // namespace

std::unique_ptr<Storage> NewWebHdfsStorage(const Datasource& ds) {
  return std::make_unique<WebHdfsStorage>(ds);
}

Result<std::string> TestDatasource(const Datasource& ds) {
  if (ds.kind == "local") {
    auto st = NewFileStorage()->Stat(ds.path);
    if (!st.ok()) {
      return Error(codes::kDataSourceUnreachable,
                   "directory " + ds.path + " is not readable: " + st.error().message);
    }
    if (!st->is_dir) return Error(codes::kDataSourceUnreachable, ds.path + " is not a directory");
    return std::string("directory ") + ds.path;
  }
  if (ds.kind == "s3" || ds.kind == "ceph") return S3Ping(S3ConfigFrom(ds), ds.bucket);
  if (ds.kind == "hdfs") {
    auto storage = NewWebHdfsStorage(ds);
    std::string ns =
        ds.namenodes.empty() ? "ns" : ds.namenodes[0].substr(0, ds.namenodes[0].find(':'));
    auto st = storage->Stat("hdfs://" + ns + "/");
    if (!st.ok()) return st.error();
    return std::string("WebHDFS root listed");
  }
  return Error(codes::kInvalidArgument, "unknown datasource kind " + Quote(ds.kind));
}

Result<std::string> DatasourceUri(const Datasource& ds, const std::string& path) {
  std::string p = path.empty() || path[0] != '/' ? "/" + path : path;
  if (ds.kind == "local") return ds.authority + (p == "/" ? "" : p);
  if (ds.kind == "hdfs") {
    std::string ns =
        ds.namenodes.empty() ? "ns" : ds.namenodes[0].substr(0, ds.namenodes[0].find(':'));
    return "hdfs://" + ns + p;
  }
  if (ds.kind == "s3" || ds.kind == "ceph") {
    if (!ds.bucket.empty()) return ds.kind + "://" + ds.bucket + (p == "/" ? "" : p);
    std::string rest = p.substr(1);
    if (rest.empty()) {
      return Error(codes::kInvalidArgument,
                   "--path must start with a bucket for datasource " + ds.name)
          .Hint("e.g. --path models/fraud");
    }
    return ds.kind + "://" + rest;
  }
  return Error(codes::kInvalidArgument, "unknown datasource kind " + Quote(ds.kind));
}

}  // namespace rsl::data
