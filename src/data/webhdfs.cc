// HDFS through WebHDFS REST (Hadoop's FileSystem over HTTP): GETFILESTATUS, LISTSTATUS
// (recursively), OPEN with offset/length (following the namenode's redirect to a datanode),
// CREATE (two-step: namenode redirect, then PUT to the datanode), DELETE, MKDIRS. Namenodes are
// tried in order, so an HA pair works when the first is standby (it answers 403 StandbyException).
// Kerberos (SPNEGO) is passed to libcurl's GSS-API negotiation when the datasource says so.
//
// Conditional writes (the commit protocol's lease, claims and manifest, engine/object_root.h)
// on what HDFS has: an exclusive create (CREATE overwrite=false: the namenode refuses a path
// that exists, FileAlreadyExistsException) and an atomic RENAME that fails when its source is
// gone or its destination exists. An object's version tag is the SHA-256 of its bytes (every
// control object carries a unique token or expiry). A write conditional on a tag: the new
// bytes go to a hidden file beside the object; the object is renamed aside (only one of two
// racing writers can: the other finds it gone); the moved object's bytes must still carry
// the tag (else it is renamed back and the write is a CONFLICT); then the new file is renamed
// into place, which fails if an exclusive create came in between (a CONFLICT too).
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <map>
#include <mutex>
#include <random>

#include <nlohmann/json.hpp>

#include "base/codes.h"
#include "base/http_client.h"
#include "base/sha256.h"
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
    return Create(*path, bytes, /*overwrite=*/true, uri);
  }

  Result<TaggedObject> ReadTagged(const std::string& uri) override {
    auto bytes = ReadRange(uri, 0, -1);
    if (!bytes.ok()) return bytes.error();
    TaggedObject o;
    o.etag = Tag(*bytes);
    o.bytes = std::move(*bytes);
    return o;
  }

  Result<std::string> WriteIf(const std::string& uri, std::string_view bytes,
                              const std::string& if_match) override {
    auto path = PathOf(uri);
    if (!path.ok()) return path.error();
    if (if_match.empty()) {
      RSL_RETURN_IF_ERROR(Create(*path, bytes, /*overwrite=*/false, uri));
      return Tag(bytes);
    }
    auto current = ReadTagged(uri);
    if (!current.ok()) {
      if (current.status().code() != codes::kDataSourceNotFound) return current.error();
      return Conflict(uri, "it is gone");
    }
    if (current->etag != if_match) return Conflict(uri, "it was written since");
    // Hidden names (readers skip them), beside the object: RENAME stays in one directory.
    size_t slash = path->rfind('/');
    std::string dir = path->substr(0, slash + 1);
    std::string name = path->substr(slash + 1);
    std::string token = Token();
    std::string next = dir + "." + name + ".rsl-next-" + token;
    std::string prev = dir + "." + name + ".rsl-prev-" + token;
    RSL_RETURN_IF_ERROR(Create(next, bytes, /*overwrite=*/false, uri));
    auto aside = Rename(*path, prev, uri);
    if (!aside.ok() || !*aside) {
      (void)Remove(next);
      if (!aside.ok()) return aside.error();
      return Conflict(uri, "another writer replaced it");
    }
    auto moved = ReadRange(UriRoot(uri) + prev, 0, -1);
    if (!moved.ok() || Tag(*moved) != if_match) {
      // Another writer's version came in between the read and the rename: put it back
      // (unless an exclusive create took the name meanwhile; that writer holds it now).
      auto back = Rename(prev, *path, uri);
      if (back.ok() && !*back) (void)Remove(prev);
      (void)Remove(next);
      if (!moved.ok()) return moved.error();
      return Conflict(uri, "it was written since");
    }
    auto placed = Rename(next, *path, uri);
    (void)Remove(prev);
    if (!placed.ok() || !*placed) {
      (void)Remove(next);
      if (!placed.ok()) return placed.error();
      return Conflict(uri, "another writer created it");
    }
    return Tag(bytes);
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
  // The version tag of an object's bytes.
  static std::string Tag(std::string_view bytes) { return "sha256:" + Sha256Hex(bytes); }

  // Unique per conditional write, across hosts, processes and threads.
  static std::string Token() {
    static std::atomic<uint64_t> counter{0};
    static const uint64_t salt = std::random_device{}();
    return std::to_string(getpid()) + "-" + std::to_string(salt % 1000000007) + "-" +
           std::to_string(counter.fetch_add(1));
  }

  static Error Conflict(const std::string& uri, const std::string& why) {
    return Error(codes::kConflict, "conditional write of " + uri + " refused: " + why).Value(uri);
  }

  // hdfs://authority of a URI (for a sibling path's URI).
  static std::string UriRoot(const std::string& uri) {
    size_t scheme = uri.find("://");
    if (scheme == std::string::npos) return "";
    size_t path = uri.find('/', scheme + 3);
    return path == std::string::npos ? uri : uri.substr(0, path);
  }

  // CREATE, in WebHDFS's two steps: the namenode answers 307 with the datanode to write to,
  // then the data is PUT there. Without `overwrite`, a path that exists is a CONFLICT
  // (FileAlreadyExistsException, from the namenode or the datanode: a 403).
  Status Create(const std::string& path, std::string_view bytes, bool overwrite,
                const std::string& uri) {
    auto r = Call("PUT", path, "CREATE", overwrite ? "&overwrite=true" : "&overwrite=false",
                  nullptr, /*follow=*/false);
    if (!r.ok()) return r.status();
    if (!overwrite && AlreadyExists(*r)) return Conflict(uri, "it exists");
    if (r->status != 307 || r->location.empty()) return HttpError(*r, uri);
    std::string body(bytes);
    auto put = Raw("PUT", r->location, &body, true);
    if (!overwrite && AlreadyExists(put)) return Conflict(uri, "it exists");
    if (put.status != 201 && put.status != 200) return HttpError(put, uri);
    return Status::Ok();
  }

  static bool AlreadyExists(const HttpResult& r) {
    return r.status == 403 && r.body.find("FileAlreadyExistsException") != std::string::npos;
  }

  // RENAME: true when moved; false when the source is gone or the destination exists (HDFS
  // answers {"boolean": false} for both).
  Result<bool> Rename(const std::string& from, const std::string& to, const std::string& uri) {
    auto r = Call("PUT", from, "RENAME", "&destination=" + UriEncode(to, true));
    if (!r.ok()) return r.error();
    if (r->status != 200) return HttpError(*r, uri);
    auto j = nlohmann::json::parse(r->body, nullptr, false);
    if (!j.is_object() || !j.contains("boolean") || !j["boolean"].is_boolean()) return BadJson(uri);
    return j["boolean"].get<bool>();
  }

  // DELETE of one path, best effort.
  Status Remove(const std::string& path) {
    auto r = Call("DELETE", path, "DELETE", "&recursive=false");
    if (!r.ok()) return r.status();
    return Status::Ok();
  }

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
