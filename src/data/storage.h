// One storage interface behind every data URI: file:// (and bare paths), s3://, ceph://
// (S3 protocol against a registered endpoint), hdfs:// (WebHDFS against a registered namenode),
// and `local` datasources that map an authority (hdfs://ns1) onto a directory.
//
// Every method takes full URIs in the scheme the user wrote (hdfs://ns1/raw/x.avro stays an
// hdfs URI even when a local datasource serves it). Errors: a missing object or prefix is
// DATA_SOURCE_NOT_FOUND; a server that cannot be reached, refuses credentials or keeps failing
// after retries is DATA_SOURCE_UNREACHABLE; other local I/O failures are IO_ERROR. Messages
// never contain credentials.
//
// Threading: a Storage may be used from several threads at once.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <string>
#include <string_view>
#include <vector>

#include "base/status.h"

namespace rsl::data {

class Catalog;

//! scheme://authority/path. A bare path ("/data/x.csv", "rel/x.csv") is file:// with the
//! path as written.
struct Uri {
  std::string scheme;     //!< file, s3, ceph, hdfs
  std::string authority;  //!< bucket for s3/ceph, nameservice or host:port for hdfs
  std::string path;       //!< starts with '/' unless empty (file: the local path)
  std::string ToString() const;
  //! "scheme://authority", the key `local` datasources are registered under.
  std::string Root() const { return scheme + "://" + authority; }
};
Result<Uri> ParseUri(const std::string& uri);
//! Joins a directory URI and a relative name with exactly one '/'.
std::string JoinUri(const std::string& dir, const std::string& name);

struct ObjectInfo {
  std::string uri;
  std::string relative;  //!< path below the listed root ("year=2024/part-0.avro")
  int64_t size = 0;
  int64_t mtime_ms = 0;  //!< modification time (object stores: Last-Modified)
  std::string etag;      //!< object stores only
  bool is_dir = false;
  //! Hive-style key=value folders between the listed root and the object.
  std::map<std::string, std::string> partitions;
};

//! The bytes of one object, held in memory (memory-mapped for local files).
class Blob {
 public:
  virtual ~Blob() = default;
  virtual std::string_view data() const = 0;
};
std::shared_ptr<const Blob> MakeBlob(std::string bytes);

//! One object's bytes with the version tag the store gave them (object stores: the ETag).
struct TaggedObject {
  std::string bytes;
  std::string etag;
};

class Storage {
 public:
  virtual ~Storage() = default;
  //! Metadata of an object, or of a directory/prefix (is_dir) when objects exist below it.
  virtual Result<ObjectInfo> Stat(const std::string& uri) = 0;
  //! Every object below `uri` (recursive), sorted by uri. Names starting with '_' or '.'
  //! (_SUCCESS, .crc, _RSL_COMMIT) are skipped, as Hadoop and Spark do. A `uri` naming one
  //! object lists that object. (Stat, then ListBelow for a directory/prefix.)
  Result<std::vector<ObjectInfo>> List(const std::string& uri);
  //! `length` bytes from `offset` (fewer at the end of the object).
  virtual Result<std::string> ReadRange(const std::string& uri, int64_t offset, int64_t length) = 0;
  //! The whole object. The default reads it with one ReadRange.
  virtual Result<std::shared_ptr<const Blob>> ReadAll(const std::string& uri);
  //! Creates or replaces one object (parents created as needed).
  virtual Status Write(const std::string& uri, std::string_view bytes) = 0;
  //! Removes an object or everything below a prefix; a missing one is not an error.
  virtual Status Delete(const std::string& uri) = 0;
  //! Publishes every file below the local directory `local_dir` at `dest_uri` so that readers
  //! see all of it or nothing: local files are copied beside the destination and renamed
  //! into place; object stores upload every object first and write the `_RSL_COMMIT`
  //! manifest (base/commit_manifest.h: files with size and sha256) last, which readers take
  //! as the commit point. Both write the manifest. The default implementation is the
  //! object-store one.
  virtual Status Publish(const std::string& local_dir, const std::string& dest_uri);
  //! The whole object and its ETag, from one request. A missing object:
  //! DATA_SOURCE_NOT_FOUND. Stores without ETags (the default): INVALID_ARGUMENT.
  virtual Result<TaggedObject> ReadTagged(const std::string& uri);
  //! Writes one object in one request (never multipart: for small control objects) only if
  //! its current ETag is `if_match`, or, with `if_match` empty, only if no object exists
  //! (HTTP If-Match / If-None-Match: *). Returns the new ETag. A condition that does not
  //! hold: CONFLICT. Stores without conditional writes (the default): INVALID_ARGUMENT.
  virtual Result<std::string> WriteIf(const std::string& uri, std::string_view bytes,
                                      const std::string& if_match);

 protected:
  //! Every object below the directory or prefix `uri` (Stat said is_dir), hidden names
  //! skipped, in any order: List sorts them.
  virtual Status ListBelow(const std::string& uri, std::vector<ObjectInfo>* out) = 0;
};

//! Opens the storage that serves `uri`: file:// directly; other schemes through the
//! datasource `catalog` (may be null: then s3:// uses AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID and
//! AWS_SECRET_ACCESS_KEY from the environment). Unknown scheme: INVALID_ARGUMENT; no
//! datasource for the authority: DATA_SOURCE_UNREACHABLE with a `datasource register` hint.
Result<std::unique_ptr<Storage>> OpenStorage(const std::string& uri, Catalog* catalog);

//! Local files, with URIs of `uri_root` ("hdfs://ns1"; "" for file://) mapped onto `dir`.
std::unique_ptr<Storage> NewFileStorage(std::string uri_root = "", std::string dir = "");

//! Splits "a/year=2024/month=06/f.avro" into its key=value folders.
std::map<std::string, std::string> HivePartitions(const std::string& relative);

}  // namespace rsl::data
