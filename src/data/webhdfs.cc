// HDFS through WebHDFS REST (Hadoop's FileSystem over HTTP): GETFILESTATUS, LISTSTATUS
// (recursively), OPEN with offset/length (following the namenode's redirect to a datanode),
// CREATE (two-step: namenode redirect, then PUT to the datanode), DELETE, MKDIRS. Namenodes are
// tried in order, so an HA pair works when the first is standby (it answers 403 StandbyException).
// Kerberos (SPNEGO) is passed to libcurl's GSS-API negotiation when the datasource says so.
//
// Conditional writes (the commit protocol's lease, claims and manifest, engine/object_root.h)
// on what HDFS has: an exclusive create (CREATE overwrite=false: the namenode refuses a path
// that exists, FileAlreadyExistsException), an atomic RENAME that fails when its destination
// exists, and RENAME with renameoptions=OVERWRITE (the namenode's rename2: the destination
// is replaced atomically). An object's version tag is the SHA-256 of its bytes (every control
// object carries a unique token or expiry). A write conditional on a tag: the new bytes go to
// a hidden file beside the object, which is renamed to the object's one claim name
// (`.<name>.rsl-claim`: one replacement at a time; others wait for it); the object must
// still carry the tag (else the claim is dropped: a CONFLICT); then the claim is renamed
// over the object. The object's name is never empty meanwhile, so an exclusive create, a
// reader or a lease's holder never sees it missing. A claim whose writer died is broken
// after kClaimAbandonedMs by the namenode's clock.
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <map>
#include <mutex>
#include <random>
#include <thread>

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
    std::string next = dir + "." + name + ".rsl-next-" + Token();
    std::string claim = dir + "." + name + ".rsl-claim";
    RSL_RETURN_IF_ERROR(Create(next, bytes, /*overwrite=*/false, uri));
    auto held = TakeClaim(next, claim, uri);
    if (!held.ok()) {
      (void)Remove(next);
      return held.error();
    }
    // Ours until it is renamed into place: no other conditional write can replace the
    // object now, and an exclusive create fails, for the object is there throughout.
    auto now = ReadRange(uri, 0, -1);
    if (!now.ok() || Tag(*now) != if_match) {
      (void)Remove(claim);
      if (!now.ok() && now.status().code() != codes::kDataSourceNotFound) return now.error();
      return Conflict(uri, now.ok() ? "it was written since" : "it is gone");
    }
    auto placed = Call("PUT", claim, "RENAME",
                       "&destination=" + UriEncode(*path, true) + "&renameoptions=OVERWRITE");
    if (!placed.ok()) return placed.error();
    if (placed->status == 404) {
      // The claim is gone: another writer judged it abandoned and broke it.
      return Conflict(uri, "its claim " + claim + " was broken as abandoned");
    }
    if (placed->status != 200) return HttpError(*placed, uri);
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
  // How long a replacement may hold an object's claim before others may break it (by the
  // namenode's clock: a holder needs a read and a rename, milliseconds, not this).
  static constexpr int64_t kClaimAbandonedMs = 30000;

  // Renames `next` (just created) to `claim`: only one replacement of an object at a time.
  // A claim held by another waits, with a backoff, until it is renamed into place or
  // released; one older than kClaimAbandonedMs (its writer died between claim and place) is
  // broken. A claim still held after twice that is a CONFLICT.
  Status TakeClaim(const std::string& next, const std::string& claim, const std::string& uri) {
    const auto start = std::chrono::steady_clock::now();
    int64_t sleep_ms = 1;
    while (true) {
      auto took = Rename(next, claim, uri);
      if (!took.ok()) return took.status();
      if (*took) return Status::Ok();
      int64_t waited = std::chrono::duration_cast<std::chrono::milliseconds>(
                           std::chrono::steady_clock::now() - start)
                           .count();
      if (waited >= 1000) {
        auto broke = BreakClaimIfAbandoned(next, claim, uri);
        if (!broke.ok()) return broke.status();
        if (*broke) continue;
      }
      if (waited >= 2 * kClaimAbandonedMs) {
        return Conflict(uri, "another writer has held its claim " + claim + " for " +
                                 std::to_string(waited / 1000) + " s");
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(sleep_ms));
      sleep_ms = std::min<int64_t>(sleep_ms * 2, 100);
    }
  }

  // Breaks `claim` when the namenode dates it kClaimAbandonedMs before `next` (created by
  // us just now; a RENAME keeps a file's modification time). It is moved aside first, so of
  // two breakers one moves it; a claim found fresh once moved (taken again meanwhile) goes
  // back. True when it was broken (or was gone).
  Result<bool> BreakClaimIfAbandoned(const std::string& next, const std::string& claim,
                                     const std::string& uri) {
    auto Mtime = [&](const std::string& path) -> Result<int64_t> {
      auto st = Stat(UriRoot(uri) + path);
      if (!st.ok()) return st.error();
      return st->mtime_ms;
    };
    auto ours = Mtime(next);
    if (!ours.ok()) return ours.error();
    auto theirs = Mtime(claim);
    if (!theirs.ok()) {
      if (theirs.status().code() == codes::kDataSourceNotFound) return true;  // placed meanwhile
      return theirs.error();
    }
    if (*ours - *theirs < kClaimAbandonedMs) return false;
    std::string aside = claim + "-abandoned-" + Token();
    auto moved = Rename(claim, aside, uri);
    if (!moved.ok()) return moved.error();
    if (!*moved) return true;  // placed or broken meanwhile: try again
    auto was = Mtime(aside);
    if (was.ok() && *ours - *was < kClaimAbandonedMs) {
      // A live claim: back, where its holder's rename finds it. If a third writer claimed
      // meanwhile, it is dropped and its holder's rename fails (a CONFLICT, nothing lost).
      auto back = Rename(aside, claim, uri);
      if (!back.ok() || !*back) (void)Remove(aside);
      return true;
    }
    (void)Remove(aside);
    return true;
  }

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
