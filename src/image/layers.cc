#include "image/layers.h"

#include <zlib.h>
#include <zstd.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <vector>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::image {
namespace {

constexpr size_t kBlock = 512;  // tar's record unit
constexpr size_t kInflateChunk = 256 << 10;
constexpr char kOpaque[] = ".wh..wh..opq";
constexpr char kWhiteoutPrefix[] = ".wh.";

Error Corrupt(const std::string& why) {
  return Error(codes::kImageNotFound, "cannot read an image layer: " + why)
      .Hint("the registry serves a damaged layer; push the image again");
}

enum class Compression { kNone, kGzip, kZstd };

// The layer's bytes in order: the blob itself, or what gzip inflates it to (several members
// in a row, as pigz writes them, are one stream), or what zstd decompresses it to (several
// frames in a row likewise).
class LayerStream {
 public:
  LayerStream(std::string_view blob, Compression c)
      : blob_(blob), gzip_(c == Compression::kGzip), zstd_(c == Compression::kZstd) {
    if (gzip_) {
      std::memset(&zs_, 0, sizeof(zs_));
      ok_ = inflateInit2(&zs_, 15 + 16) == Z_OK;
      zs_.next_in = reinterpret_cast<Bytef*>(const_cast<char*>(blob_.data()));
      zs_.avail_in = static_cast<uInt>(blob_.size());
    }
    if (zstd_) {
      zds_ = ZSTD_createDStream();
      ok_ = zds_ != nullptr && !ZSTD_isError(ZSTD_initDStream(zds_));
    }
  }
  ~LayerStream() {
    if (gzip_ && ok_) inflateEnd(&zs_);
    if (zds_ != nullptr) ZSTD_freeDStream(zds_);
  }
  LayerStream(const LayerStream&) = delete;
  LayerStream& operator=(const LayerStream&) = delete;

  //! Appends the next n bytes to *out (nullptr: drops them). False at a short end.
  bool Read(size_t n, std::string* out) {
    while (n > 0) {
      if (pos_ == buf_.size() && !Fill()) return false;
      size_t take = std::min(n, buf_.size() - pos_);
      if (out != nullptr) out->append(buf_, pos_, take);
      pos_ += take;
      n -= take;
    }
    return true;
  }
  const std::string& error() const { return error_; }

 private:
  bool Fill() {
    buf_.clear();
    pos_ = 0;
    if (zstd_) return FillZstd();
    if (!gzip_) {
      if (offset_ >= blob_.size()) return false;
      size_t take = std::min(kInflateChunk, blob_.size() - offset_);
      buf_.assign(blob_.substr(offset_, take));
      offset_ += take;
      return true;
    }
    if (!ok_) {
      error_ = "gzip: cannot initialise zlib";
      return false;
    }
    while (buf_.empty()) {
      if (ended_) {
        // Another gzip member follows, or the stream is over.
        if (zs_.avail_in == 0) return false;
        if (inflateReset(&zs_) != Z_OK) return false;
        ended_ = false;
      }
      buf_.resize(kInflateChunk);
      zs_.next_out = reinterpret_cast<Bytef*>(buf_.data());
      zs_.avail_out = static_cast<uInt>(buf_.size());
      int rc = inflate(&zs_, Z_NO_FLUSH);
      buf_.resize(buf_.size() - zs_.avail_out);
      if (rc == Z_STREAM_END) {
        ended_ = true;
      } else if (rc != Z_OK) {
        error_ = std::string("gzip: ") + (zs_.msg != nullptr ? zs_.msg : "corrupt stream");
        buf_.clear();
        return false;
      } else if (buf_.empty() && zs_.avail_in == 0) {
        error_ = "gzip: the stream ends early";
        return false;
      }
    }
    return true;
  }

  bool FillZstd() {
    if (!ok_) {
      error_ = "zstd: cannot initialise libzstd";
      return false;
    }
    while (buf_.empty()) {
      if (offset_ >= blob_.size()) {
        if (!frame_ended_) error_ = "zstd: the stream ends early";
        return false;
      }
      buf_.resize(kInflateChunk);
      ZSTD_inBuffer in = {blob_.data(), blob_.size(), offset_};
      ZSTD_outBuffer out = {buf_.data(), buf_.size(), 0};
      size_t rc = ZSTD_decompressStream(zds_, &out, &in);
      buf_.resize(out.pos);
      if (ZSTD_isError(rc)) {
        error_ = std::string("zstd: ") + ZSTD_getErrorName(rc);
        buf_.clear();
        return false;
      }
      if (in.pos == offset_ && out.pos == 0 && rc != 0) {
        error_ = "zstd: no progress (a corrupt stream)";
        return false;
      }
      offset_ = in.pos;
      frame_ended_ = rc == 0;  // a frame is complete; another may follow
    }
    return true;
  }

  std::string_view blob_;
  bool gzip_;
  bool zstd_;
  ZSTD_DStream* zds_ = nullptr;
  bool frame_ended_ = false;
  bool ok_ = true;
  bool ended_ = false;
  z_stream zs_{};
  size_t offset_ = 0;
  std::string buf_;
  size_t pos_ = 0;
  std::string error_;
};

// An octal field, or GNU's base-256 form for sizes of 8 GiB and more.
bool ParseNumber(const char* field, size_t len, uint64_t* out) {
  *out = 0;
  if (len > 0 && (static_cast<unsigned char>(field[0]) & 0x80) != 0) {
    for (size_t i = 1; i < len; ++i) *out = (*out << 8) | static_cast<unsigned char>(field[i]);
    return true;
  }
  size_t i = 0;
  while (i < len && field[i] == ' ') ++i;
  bool any = false;
  for (; i < len && field[i] >= '0' && field[i] <= '7'; ++i) {
    *out = (*out << 3) | static_cast<uint64_t>(field[i] - '0');
    any = true;
  }
  return any || (i < len && (field[i] == '\0' || field[i] == ' '));
}

std::string Field(const char* block, size_t offset, size_t len) {
  const char* start = block + offset;
  return std::string(start, strnlen(start, len));
}

// "./usr//lib/" -> "usr/lib"; ".." components are dropped (a layer cannot climb out).
std::string CleanPath(const std::string& raw) {
  std::vector<std::string> parts;
  for (const auto& p : Split(raw, '/')) {
    if (p.empty() || p == ".") continue;
    if (p == "..") {
      if (!parts.empty()) parts.pop_back();
      continue;
    }
    parts.push_back(p);
  }
  return Join(parts, "/");
}

// PAX extended header records: "LEN key=value\n"...
std::map<std::string, std::string> ParsePax(const std::string& text) {
  std::map<std::string, std::string> out;
  size_t i = 0;
  while (i < text.size()) {
    size_t space = text.find(' ', i);
    if (space == std::string::npos) break;
    size_t len = 0;
    for (size_t k = i; k < space; ++k) {
      if (text[k] < '0' || text[k] > '9') return out;
      len = len * 10 + static_cast<size_t>(text[k] - '0');
    }
    if (len == 0 || i + len > text.size()) break;
    std::string record = text.substr(space + 1, i + len - space - 2);  // without "\n"
    size_t eq = record.find('=');
    if (eq != std::string::npos) out[record.substr(0, eq)] = record.substr(eq + 1);
    i += len;
  }
  return out;
}

void RemoveTree(LayerFiles* files, const std::string& path) {
  files->erase(path);
  std::string prefix = path + "/";
  for (auto it = files->lower_bound(prefix); it != files->end() && StartsWith(it->first, prefix);)
    it = files->erase(it);
}

void RemoveBelow(LayerFiles* files, const std::string& dir) {
  std::string prefix = dir.empty() ? "" : dir + "/";
  for (auto it = files->lower_bound(prefix); it != files->end() && StartsWith(it->first, prefix);)
    it = files->erase(it);
}

std::string DirOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? "" : path.substr(0, slash);
}

std::string BaseOf(const std::string& path) {
  size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

}  // namespace

Status ApplyLayer(std::string_view blob, const std::string& media_type, const WantFile& want,
                  LayerFiles* files) {
  auto byte = [&](size_t i) { return i < blob.size() ? static_cast<unsigned char>(blob[i]) : 0; };
  bool gzip_magic = byte(0) == 0x1f && byte(1) == 0x8b;
  bool zstd_magic = byte(0) == 0x28 && byte(1) == 0xb5 && byte(2) == 0x2f && byte(3) == 0xfd;
  Compression c = gzip_magic ? Compression::kGzip : Compression::kNone;
  if (zstd_magic || media_type.find("zstd") != std::string::npos) c = Compression::kZstd;
  LayerStream in(blob, c);
  LayerFiles upper;                                    // this layer's kept files
  std::vector<std::string> whiteouts;                  // paths, or "dir/" + kOpaque
  std::vector<std::pair<std::string, bool>> replaced;  // path, is a directory
  std::map<std::string, std::string> pax;
  std::string long_name, long_link;
  while (true) {
    std::string header;
    if (!in.Read(kBlock, &header)) {
      if (!in.error().empty()) return Corrupt(in.error());
      break;  // a tar without its two zero blocks is still read to its end
    }
    if (header.find_first_not_of('\0') == std::string::npos) break;
    const char* h = header.data();
    uint64_t size = 0;
    if (!ParseNumber(h + 124, 12, &size)) return Corrupt("a tar header with a bad size");
    char type = h[156];
    std::string name = Field(h, 0, 100);
    if (std::memcmp(h + 257, "ustar", 5) == 0) {
      std::string prefix = Field(h, 345, 155);
      if (!prefix.empty()) name = prefix + "/" + name;
    }
    std::string link = Field(h, 157, 100);
    auto take_override = [&] {
      if (!long_name.empty()) name = long_name;
      if (!long_link.empty()) link = long_link;
      if (pax.count("path")) name = pax["path"];
      if (pax.count("linkpath")) link = pax["linkpath"];
      if (pax.count("size")) size = std::strtoull(pax["size"].c_str(), nullptr, 10);
      long_name.clear();
      long_link.clear();
      pax.clear();
    };
    size_t padded = static_cast<size_t>((size + kBlock - 1) / kBlock * kBlock);
    if (type == 'x' || type == 'g' || type == 'L' || type == 'K') {
      std::string body;
      if (!in.Read(padded, &body)) return Corrupt("a tar entry ends early");
      body.resize(static_cast<size_t>(size));
      if (type == 'x') pax = ParsePax(body);
      if (type == 'L') long_name = std::string(body.c_str());
      if (type == 'K') long_link = std::string(body.c_str());
      continue;  // 'g' (global) carries nothing a path needs
    }
    take_override();
    padded = static_cast<size_t>((size + kBlock - 1) / kBlock * kBlock);
    std::string path = CleanPath(name);
    std::string base = BaseOf(path);
    bool regular = type == '0' || type == '\0' || type == '7';
    if (base == kOpaque) {
      whiteouts.push_back(DirOf(path) + "/" + kOpaque);
    } else if (StartsWith(base, kWhiteoutPrefix)) {
      std::string dir = DirOf(path);
      std::string target = base.substr(std::strlen(kWhiteoutPrefix));
      whiteouts.push_back(dir.empty() ? target : dir + "/" + target);
    } else if ((regular || type == '2') && !path.empty() && want(path)) {
      if (size > kMaxKeptFileBytes) {
        return Corrupt("file /" + path + " is " + std::to_string(size) + " bytes, more than " +
                       std::to_string(kMaxKeptFileBytes) + " for a metadata file");
      }
      LayerFile f;
      if (type == '2') {
        f.symlink = true;
        f.content = link;
      } else if (!in.Read(static_cast<size_t>(size), &f.content)) {
        return Corrupt("file /" + path + " ends early");
      }
      if (type != '2') padded -= static_cast<size_t>(size);
      upper[path] = std::move(f);
    }
    // Any entry replaces what a lower layer had at its path; one that is not a directory
    // also replaces a lower directory there, and everything below it.
    if (!path.empty() && base != kOpaque && !StartsWith(base, kWhiteoutPrefix)) {
      replaced.emplace_back(path, type == '5');
    }
    if (!in.Read(padded, nullptr)) return Corrupt("a tar entry ends early");
  }
  // Whiteouts hide the lower layers only: apply them before this layer's files.
  for (const auto& w : whiteouts) {
    std::string base = BaseOf(w);
    if (base == kOpaque) {
      RemoveBelow(files, DirOf(w));
    } else {
      RemoveTree(files, w);
    }
  }
  for (const auto& [path, directory] : replaced) {
    if (directory) {
      files->erase(path);
    } else {
      RemoveTree(files, path);
    }
  }
  for (auto& [path, f] : upper) (*files)[path] = std::move(f);
  return Status::Ok();
}

bool IsPackageMetadata(const std::string& path) {
  if (path == "var/lib/dpkg/status" || path == "usr/local/bin/python3" ||
      path == "usr/bin/python3" || path == "opt/conda/bin/python") {
    return true;
  }
  if (path.find("site-packages/") == std::string::npos &&
      path.find("dist-packages/") == std::string::npos) {
    return false;
  }
  // Only the distribution's own metadata, directly in the packages directory.
  std::vector<std::string> parts = Split(path, '/');
  if (parts.size() < 2) return false;
  const std::string& last = parts.back();
  const std::string& parent = parts[parts.size() - 2];
  auto in_packages = [](const std::string& dir) {
    return dir == "site-packages" || dir == "dist-packages";
  };
  if (last == "METADATA" && EndsWith(parent, ".dist-info") && parts.size() >= 3 &&
      in_packages(parts[parts.size() - 3])) {
    return true;
  }
  if (last == "PKG-INFO" && EndsWith(parent, ".egg-info") && parts.size() >= 3 &&
      in_packages(parts[parts.size() - 3])) {
    return true;
  }
  return EndsWith(last, ".egg-info") && in_packages(parent);
}

}  // namespace rsl::image
