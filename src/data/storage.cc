#include "data/storage.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <set>
#include <utility>

#include "base/codes.h"
#include "base/commit_manifest.h"
#include "base/file.h"
#include "base/sha256.h"
#include "base/strings.h"
#include "data/catalog.h"
#include "data/remote.h"

namespace rsl::data {

std::string Uri::ToString() const {
  if (scheme == "file" && authority.empty()) return "file://" + path;
  return scheme + "://" + authority + path;
}

Result<Uri> ParseUri(const std::string& text) {
  Uri u;
  size_t sep = text.find("://");
  if (sep == std::string::npos) {
    if (text.empty()) return Error(codes::kInvalidArgument, "empty data URI");
    u.scheme = "file";
    u.path = text;
    return u;
  }
  u.scheme = ToLower(text.substr(0, sep));
  std::string rest = text.substr(sep + 3);
  if (u.scheme == "file") {
    u.path = rest;
    if (u.path.empty())
      return Error(codes::kInvalidArgument, "file URI without a path").Value(text);
    return u;
  }
  if (u.scheme != "s3" && u.scheme != "ceph" && u.scheme != "hdfs") {
    return Error(codes::kInvalidArgument, "unsupported URI scheme " + Quote(u.scheme))
        .Value(text)
        .Hint("use file://, s3://, ceph:// or hdfs://");
  }
  size_t slash = rest.find('/');
  u.authority = rest.substr(0, slash);
  u.path = slash == std::string::npos ? "" : rest.substr(slash);
  if (u.authority.empty()) {
    return Error(codes::kInvalidArgument, u.scheme + " URI without a bucket or namenode")
        .Value(text);
  }
  return u;
}

std::string JoinUri(const std::string& dir, const std::string& name) {
  if (dir.empty()) return name;
  if (dir.back() == '/') return dir + name;
  return dir + "/" + name;
}

std::map<std::string, std::string> HivePartitions(const std::string& relative) {
  std::map<std::string, std::string> out;
  auto parts = Split(relative, '/');
  for (size_t i = 0; i + 1 < parts.size(); i++) {  // folders only, not the file name
    size_t eq = parts[i].find('=');
    if (eq != std::string::npos && eq > 0) out[parts[i].substr(0, eq)] = parts[i].substr(eq + 1);
  }
  return out;
}

namespace {

class StringBlob : public Blob {
 public:
  explicit StringBlob(std::string s) : s_(std::move(s)) {}
  std::string_view data() const override { return s_; }

 private:
  std::string s_;
};

class MmapBlob : public Blob {
 public:
  MmapBlob(void* p, size_t n) : p_(p), n_(n) {}
  ~MmapBlob() override {
    if (p_ != nullptr) munmap(p_, n_);
  }
  std::string_view data() const override {
    return std::string_view(static_cast<const char*>(p_), n_);
  }

 private:
  void* p_;
  size_t n_;
};

bool Hidden(const std::string& name) { return !name.empty() && (name[0] == '_' || name[0] == '.'); }

// Both Publish implementations: every file below local_dir through `write(relative path,
// bytes)`, then the commit manifest (the files with size and sha256) through it too, last:
// readers take a directory as committed only once the manifest exists.
template <class Write>
Status CopyWithManifest(const std::string& local_dir, Write write) {
  auto files = NewFileStorage()->List(local_dir);
  if (!files.ok()) return files.status();
  CommitManifest manifest;
  for (const auto& f : *files) {
    auto bytes = ReadFileBeneath(local_dir, f.relative);
    if (!bytes.ok()) return bytes.status();
    RSL_RETURN_IF_ERROR(write(f.relative, *bytes));
    manifest.files.push_back({f.relative, f.size, Sha256Hex(*bytes)});
  }
  // Written last: readers treat the prefix as committed only once this object exists.
  return write(kCommitManifestName, CommitManifestJson(manifest));
}

class FileStorage : public Storage {
 public:
  FileStorage(std::string root, std::string dir) : root_(std::move(root)), dir_(std::move(dir)) {}

  Result<ObjectInfo> Stat(const std::string& uri) override {
    auto path = Map(uri);
    if (!path.ok()) return path.error();
    struct stat st;
    if (::stat(path->c_str(), &st) != 0) return NotFound(uri, *path, errno);
    ObjectInfo info;
    info.uri = uri;
    info.size = S_ISDIR(st.st_mode) ? 0 : st.st_size;
    info.mtime_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
    info.is_dir = S_ISDIR(st.st_mode);
    return info;
  }

  Status ListBelow(const std::string& uri, std::vector<ObjectInfo>* out) override {
    auto path = Map(uri);
    if (!path.ok()) return path.error();
    Listing listing;
    listing.root = RealPath(*path);
    struct stat st;
    if (::stat(path->c_str(), &st) == 0) listing.visited.insert({st.st_dev, st.st_ino});
    return Walk(*path, "", uri, &listing, out);
  }

  Result<std::string> ReadRange(const std::string& uri, int64_t offset, int64_t length) override {
    auto path = Map(uri);
    if (!path.ok()) return path.error();
    int fd = ::open(path->c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NotFound(uri, *path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return Error(codes::kIoError, "not a regular file: " + *path).Value(uri);
    }
    std::string out(static_cast<size_t>(std::max<int64_t>(length, 0)), '\0');
    size_t got = 0;
    while (got < out.size()) {
      ssize_t n = ::pread(fd, out.data() + got, out.size() - got, offset + got);
      if (n < 0 && errno == EINTR) continue;
      if (n < 0) {
        int err = errno;
        ::close(fd);
        return OsError(codes::kIoError, "cannot read", *path, err);
      }
      if (n == 0) break;
      got += n;
    }
    ::close(fd);
    out.resize(got);
    return out;
  }

  Result<std::shared_ptr<const Blob>> ReadAll(const std::string& uri) override {
    auto path = Map(uri);
    if (!path.ok()) return path.error();
    // O_NONBLOCK: opening a FIFO must not wait for a writer (it is refused just below).
    int fd = ::open(path->c_str(), O_RDONLY | O_CLOEXEC | O_NONBLOCK);
    if (fd < 0) return NotFound(uri, *path, errno);
    struct stat st;
    if (::fstat(fd, &st) != 0 || !S_ISREG(st.st_mode)) {
      ::close(fd);
      return Error(codes::kIoError, "not a regular file: " + *path).Value(uri);
    }
    if (st.st_size == 0) {
      ::close(fd);
      return MakeBlob("");
    }
    void* p = ::mmap(nullptr, st.st_size, PROT_READ, MAP_PRIVATE, fd, 0);
    int err = errno;
    ::close(fd);
    if (p == MAP_FAILED) return OsError(codes::kIoError, "cannot map", *path, err);
    ::madvise(p, st.st_size, MADV_SEQUENTIAL | MADV_WILLNEED);
    return std::shared_ptr<const Blob>(new MmapBlob(p, st.st_size));
  }

  Status Write(const std::string& uri, std::string_view bytes) override {
    auto path = Map(uri);
    if (!path.ok()) return path.error();
    size_t slash = path->find_last_of('/');
    if (slash != std::string::npos && slash > 0)
      RSL_RETURN_IF_ERROR(MakeDirs(path->substr(0, slash)));
    return WriteFileAtomic(*path, std::string(bytes));
  }

  Status Delete(const std::string& uri) override {
    auto path = Map(uri);
    if (!path.ok()) return path.error();
    return RemoveAll(*path);
  }

  Status Publish(const std::string& local_dir, const std::string& dest_uri) override {
    auto dest = Map(dest_uri);
    if (!dest.ok()) return dest.error();
    std::string staging = *dest + ".rsl-publish-" + std::to_string(::getpid());
    RSL_RETURN_IF_ERROR(RemoveAll(staging));
    RSL_RETURN_IF_ERROR(
        CopyWithManifest(local_dir, [&](const std::string& rel, const std::string& bytes) {
          std::string target = JoinUri(staging, rel);
          RSL_RETURN_IF_ERROR(MakeDirs(target.substr(0, target.find_last_of('/'))));
          return WriteFileAtomic(target, bytes);
        }));
    RSL_RETURN_IF_ERROR(RemoveAll(*dest));
    size_t slash = dest->find_last_of('/');
    if (slash != std::string::npos && slash > 0)
      RSL_RETURN_IF_ERROR(MakeDirs(dest->substr(0, slash)));
    if (::rename(staging.c_str(), dest->c_str()) != 0) {
      return OsError(codes::kIoError, "cannot publish", *dest, errno);
    }
    return SyncDir(slash == std::string::npos ? "." : dest->substr(0, std::max<size_t>(slash, 1)));
  }

 private:
  Result<std::string> Map(const std::string& uri) const {
    if (root_.empty()) {
      if (StartsWith(uri, "file://")) return uri.substr(7);
      if (uri.find("://") != std::string::npos) {
        return Error(codes::kInvalidArgument, "not a local URI").Value(uri);
      }
      return uri;
    }
    if (!StartsWith(uri, root_)) {
      return Error(codes::kInvalidArgument, "URI outside " + root_).Value(uri);
    }
    return dir_ + uri.substr(root_.size());
  }

  Error NotFound(const std::string& uri, const std::string& path, int err) const {
    if (err == ENOENT || err == ENOTDIR) {
      Error e(codes::kDataSourceNotFound, "no such file or directory: " + uri);
      e.Value(uri);
      if (!root_.empty()) e.Hint("served by a local datasource from " + path);
      return e;
    }
    return OsError(codes::kIoError, "cannot open", path, err);
  }

  // One listing's state: the data set's real path, and the directories already listed (by
  // device and inode), so a symlinked directory is listed once and a link loop ends.
  struct Listing {
    std::string root;
    std::set<std::pair<dev_t, ino_t>> visited;
  };

  static std::string RealPath(const std::string& path) {
    char* real = ::realpath(path.c_str(), nullptr);
    if (real == nullptr) return path;
    std::string out = real;
    std::free(real);
    return out;
  }

  static const char* FileKind(mode_t mode) {
    if (S_ISFIFO(mode)) return "a FIFO";
    if (S_ISSOCK(mode)) return "a socket";
    if (S_ISCHR(mode) || S_ISBLK(mode)) return "a device";
    return "not a regular file";
  }

  // Lists regular files below `dir`. Symbolic links to files are read; links to directories
  // are followed only inside the data set's root and only once per directory (loops end);
  // anything else that is not a regular file (FIFO, socket, device) is refused, as reading
  // it would block or never end.
  Status Walk(const std::string& dir, const std::string& rel, const std::string& uri_dir,
              Listing* listing, std::vector<ObjectInfo>* out) {
    DIR* d = ::opendir(dir.c_str());
    if (d == nullptr) return OsError(codes::kIoError, "cannot list", dir, errno);
    std::vector<std::string> names;
    while (struct dirent* e = ::readdir(d)) {
      std::string name = e->d_name;
      if (name == "." || name == ".." || Hidden(name)) continue;
      names.push_back(name);
    }
    ::closedir(d);
    std::sort(names.begin(), names.end());  // which link to a directory lists it: stable
    for (const auto& name : names) {
      std::string path = dir + "/" + name;
      std::string r = rel.empty() ? name : rel + "/" + name;
      struct stat st;
      if (::lstat(path.c_str(), &st) != 0) continue;  // vanished while listing
      const bool link = S_ISLNK(st.st_mode);
      if (link && ::stat(path.c_str(), &st) != 0) continue;  // dangling link: nothing to read
      if (S_ISDIR(st.st_mode)) {
        if (link) {
          std::string real = RealPath(path);
          if (real != listing->root && !StartsWith(real, listing->root + "/")) {
            return Error(codes::kDataFormatError,
                         r + " is a symbolic link to " + real + ", outside the data set")
                .Value(JoinUri(uri_dir, r))
                .Hint(
                    "links to directories are followed only inside the data set; point "
                    "uri at " +
                    real + " or copy the data in");
          }
        }
        if (!listing->visited.insert({st.st_dev, st.st_ino}).second) continue;  // seen
        RSL_RETURN_IF_ERROR(Walk(path, r, uri_dir, listing, out));
        continue;
      }
      if (!S_ISREG(st.st_mode)) {
        return Error(codes::kDataFormatError,
                     r + " is " + FileKind(st.st_mode) + ", not a data file")
            .Value(JoinUri(uri_dir, r))
            .Hint("move it out of the data set, or give it a name starting with '_' or '.'");
      }
      ObjectInfo info;
      info.uri = JoinUri(uri_dir, r);
      info.relative = r;
      info.size = st.st_size;
      info.mtime_ms = static_cast<int64_t>(st.st_mtim.tv_sec) * 1000 + st.st_mtim.tv_nsec / 1000000;
      info.partitions = HivePartitions(r);
      out->push_back(std::move(info));
    }
    return Status::Ok();
  }

  std::string root_;
  std::string dir_;
};

}  // namespace

std::shared_ptr<const Blob> MakeBlob(std::string bytes) {
  return std::make_shared<StringBlob>(std::move(bytes));
}

Result<std::vector<ObjectInfo>> Storage::List(const std::string& uri) {
  auto top = Stat(uri);
  if (!top.ok()) return top.error();
  std::vector<ObjectInfo> out;
  if (!top->is_dir) {  // one object: itself
    top->relative = uri.substr(uri.find_last_of('/') + 1);
    out.push_back(*top);
    return out;
  }
  RSL_RETURN_IF_ERROR(ListBelow(uri, &out));
  std::sort(out.begin(), out.end(),
            [](const ObjectInfo& a, const ObjectInfo& b) { return a.uri < b.uri; });
  return out;
}

Result<std::shared_ptr<const Blob>> Storage::ReadAll(const std::string& uri) {
  auto info = Stat(uri);
  if (!info.ok()) return info.error();
  auto bytes = ReadRange(uri, 0, info->size);
  if (!bytes.ok()) return bytes.error();
  return MakeBlob(std::move(*bytes));
}

Status Storage::Publish(const std::string& local_dir, const std::string& dest_uri) {
  return CopyWithManifest(local_dir, [&](const std::string& rel, const std::string& bytes) {
    return Write(JoinUri(dest_uri, rel), bytes);
  });
}

Result<TaggedObject> Storage::ReadTagged(const std::string& uri) {
  return Error(codes::kInvalidArgument, "this storage has no object versions (ETags)").Value(uri);
}

Result<std::string> Storage::WriteIf(const std::string& uri, std::string_view, const std::string&) {
  return Error(codes::kInvalidArgument, "this storage has no conditional writes").Value(uri);
}

std::unique_ptr<Storage> NewFileStorage(std::string uri_root, std::string dir) {
  return std::make_unique<FileStorage>(std::move(uri_root), std::move(dir));
}

Result<std::unique_ptr<Storage>> OpenStorage(const std::string& uri, Catalog* catalog) {
  auto u = ParseUri(uri);
  if (!u.ok()) return u.error();
  if (u->scheme == "file") return NewFileStorage();
  std::optional<Datasource> ds;
  if (catalog != nullptr) {
    auto r = catalog->Resolve(*u);
    if (!r.ok()) return r.error();
    ds = *r;
  }
  if (ds && ds->kind == "local") return NewFileStorage(ds->authority, ds->path);
  if (u->scheme == "s3" || u->scheme == "ceph") {
    S3Config config;
    if (ds) {
      config = S3ConfigFrom(*ds);
    } else if (u->scheme == "s3") {
      auto env = S3ConfigFromEnv();
      if (!env.ok()) return env.error();
      config = *env;
    } else {
      return Error(codes::kDataSourceUnreachable, "no ceph datasource is registered for " + uri)
          .Value(uri)
          .Hint(
              "seedctl datasource register ceph --name N --endpoint URL --access-key K "
              "--secret-key S");
    }
    return NewS3Storage(config, u->scheme);
  }
  // hdfs
  if (!ds) {
    return Error(codes::kDataSourceUnreachable, "no datasource serves " + u->Root())
        .Value(uri)
        .Hint("seedctl datasource register hdfs --name N --namenodes \"" + u->authority +
              ":8020\", or register local --name N --authority " + u->Root() + " --path DIR");
  }
  return NewWebHdfsStorage(*ds);
}

}  // namespace rsl::data
