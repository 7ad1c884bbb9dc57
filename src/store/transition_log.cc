#include "store/transition_log.h"

#include <dirent.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>
#include <zlib.h>

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>

#include "base/codes.h"
#include "base/file.h"

namespace rsl::store {

namespace {

constexpr size_t kHeader = 16;  // length, CRC, LSN
constexpr char kSuffix[] = ".tlog";
// A payload longer than this is damage (a turn's record is at most a few MB).
constexpr uint32_t kMaxPayload = 1u << 30;

void PutU32(char* p, uint32_t v) {
  for (int i = 0; i < 4; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
void PutU64(char* p, uint64_t v) {
  for (int i = 0; i < 8; ++i) p[i] = static_cast<char>(v >> (8 * i));
}
uint32_t GetU32(const char* p) {
  uint32_t v = 0;
  for (int i = 0; i < 4; ++i) v |= uint32_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}
uint64_t GetU64(const char* p) {
  uint64_t v = 0;
  for (int i = 0; i < 8; ++i) v |= uint64_t(static_cast<unsigned char>(p[i])) << (8 * i);
  return v;
}

uint32_t Crc(const char* lsn8, std::string_view payload) {
  uLong c = crc32(0L, reinterpret_cast<const Bytef*>(lsn8), 8);
  // zlib takes a uInt length: a payload is below kMaxPayload.
  c = crc32(c, reinterpret_cast<const Bytef*>(payload.data()), static_cast<uInt>(payload.size()));
  return static_cast<uint32_t>(c);
}

std::string SegmentName(uint64_t first) {
  char name[32];
  snprintf(name, sizeof(name), "%020llu%s", static_cast<unsigned long long>(first), kSuffix);
  return name;
}

Error Damaged(const std::string& path, uint64_t offset, const std::string& what) {
  return Error(codes::kIoError, "transition log damaged: " + what)
      .Value(path + " at byte " + std::to_string(offset))
      .Hint(
          "the records before it were applied; move the file away to start the store "
          "without the rest (those transitions are then lost)");
}

}  // namespace

Result<std::unique_ptr<TransitionLog>> TransitionLog::Open(const std::string& dir,
                                                           const Options& options, uint64_t applied,
                                                           const ReplayFn& replay) {
  if (::mkdir(dir.c_str(), 0700) != 0 && errno != EEXIST) {
    return OsError(codes::kIoError, "cannot create", dir, errno);
  }
  std::unique_ptr<TransitionLog> log(new TransitionLog(dir, options));
  DIR* d = ::opendir(dir.c_str());
  if (!d) return OsError(codes::kIoError, "cannot list", dir, errno);
  std::vector<Segment> found;
  while (dirent* e = ::readdir(d)) {
    std::string name = e->d_name;
    if (name.size() != 20 + strlen(kSuffix) || name.compare(20, std::string::npos, kSuffix) != 0 ||
        !std::all_of(name.begin(), name.begin() + 20, [](char c) { return c >= '0' && c <= '9'; }))
      continue;
    Segment s;
    s.path = dir + "/" + name;
    s.first = std::stoull(name.substr(0, 20));
    s.last = s.first - 1;
    found.push_back(std::move(s));
  }
  ::closedir(d);
  std::sort(found.begin(), found.end(),
            [](const Segment& a, const Segment& b) { return a.first < b.first; });

  // Records after `applied` must follow it without a gap (segments wholly at or below it
  // are leftovers of a crash before DropThrough: skipped).
  while (found.size() > 1 && found[1].first <= applied + 1) {
    if (::unlink(found.front().path.c_str()) != 0 && errno != ENOENT) {
      return OsError(codes::kIoError, "cannot remove", found.front().path, errno);
    }
    found.erase(found.begin());
  }
  if (!found.empty() && found.front().first > applied + 1) {
    return Damaged(found.front().path, 0, "LSN " + std::to_string(applied + 1) + " is missing");
  }
  uint64_t expect = 0;  // the next LSN the log must hold (0: any)
  for (size_t i = 0; i < found.size(); ++i) {
    Segment& seg = found[i];
    bool last_segment = i + 1 == found.size();
    auto data = ReadFile(seg.path);
    if (!data.ok()) return data.error();
    const std::string& bytes = *data;
    if (expect != 0 && seg.first != expect) {
      return Damaged(seg.path, 0, "LSN " + std::to_string(expect) + " is missing");
    }
    uint64_t off = 0;
    uint64_t next = seg.first;
    while (off < bytes.size()) {
      bool whole = bytes.size() - off >= kHeader;
      uint32_t len = whole ? GetU32(bytes.data() + off) : 0;
      whole = whole && len <= kMaxPayload && bytes.size() - off - kHeader >= len;
      std::string_view payload =
          whole ? std::string_view(bytes.data() + off + kHeader, len) : std::string_view();
      bool intact = whole && GetU32(bytes.data() + off + 4) == Crc(bytes.data() + off + 8, payload);
      uint64_t lsn = intact ? GetU64(bytes.data() + off + 8) : 0;
      if (!intact || lsn != next) {
        if (!last_segment) return Damaged(seg.path, off, "a record is torn or out of order");
        // The tail the last writer did not finish: it was never acknowledged.
        fprintf(stderr, "rsl store: transition log %s: cutting off %llu bytes of a torn record\n",
                seg.path.c_str(), static_cast<unsigned long long>(bytes.size() - off));
        if (::truncate(seg.path.c_str(), static_cast<off_t>(off)) != 0) {
          return OsError(codes::kIoError, "cannot cut the torn tail of", seg.path, errno);
        }
        break;
      }
      if (lsn > applied) RSL_RETURN_IF_ERROR(replay(lsn, payload));
      off += kHeader + len;
      ++next;
    }
    seg.last = next - 1;
    seg.size = off;
    expect = next;
  }
  log->last_lsn_ = std::max(applied, expect == 0 ? 0 : expect - 1);
  log->segments_ = std::move(found);
  return log;
}

TransitionLog::~TransitionLog() {
  if (fd_ >= 0) ::close(fd_);
}

Status TransitionLog::StartSegment(uint64_t first) {
  Segment s;
  s.path = dir_ + "/" + SegmentName(first);
  s.first = first;
  s.last = first - 1;
  int fd = ::open(s.path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) return OsError(codes::kIoError, "cannot create", s.path, errno);
  if (options_.sync) {
    Status synced = SyncDir(dir_);
    if (!synced.ok()) {
      ::close(fd);
      return synced;
    }
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = fd;
  std::lock_guard<std::mutex> lock(mu_);
  segments_.push_back(std::move(s));
  return Status::Ok();
}

Result<uint64_t> TransitionLog::Append(std::string_view payload) {
  buf_.assign(kHeader, '\0');
  buf_.append(payload);
  return AppendFramed(&buf_);
}

Result<uint64_t> TransitionLog::AppendFramed(std::string* record) {
  static_assert(kHeader == kFrameBytes);
  if (record->size() < kHeader) return Error(codes::kInternal, "transition record without frame");
  std::string_view payload = std::string_view(*record).substr(kHeader);
  if (broken_) {
    return Error(codes::kIoError, "transition log unusable after a failed write")
        .Value(dir_)
        .Hint("restart the process: opening the store applies what the log holds");
  }
  if (fd_ < 0) return Error(codes::kInternal, "transition log appended before Reset");
  if (payload.size() > kMaxPayload) {
    return Error(codes::kInternal, "transition record too large")
        .Value(std::to_string(payload.size()) + " bytes");
  }
  uint64_t size;
  {
    std::lock_guard<std::mutex> lock(mu_);
    size = segments_.back().size;
  }
  if (size >= options_.segment_bytes) {
    RSL_RETURN_IF_ERROR(StartSegment(last_lsn_ + 1));
    size = 0;
  }
  uint64_t lsn = last_lsn_ + 1;
  char* frame = record->data();
  PutU32(frame, static_cast<uint32_t>(payload.size()));
  PutU64(frame + 8, lsn);
  PutU32(frame + 4, Crc(frame + 8, payload));
  size_t done = 0;
  int err = 0;
  while (done < record->size()) {
    ssize_t n = ::pwrite(fd_, record->data() + done, record->size() - done,
                         static_cast<off_t>(size + done));
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      err = n < 0 ? errno : EIO;
      break;
    }
    done += size_t(n);
  }
  if (err == 0 && options_.sync && ::fdatasync(fd_) != 0) err = errno;
  if (err != 0) {
    // Nothing of this record may stay: a record after it would be unreadable.
    if (::ftruncate(fd_, static_cast<off_t>(size)) != 0 || ::fdatasync(fd_) != 0) broken_ = true;
    return OsError(codes::kIoError, "cannot append to", segments_.back().path, err);
  }
  last_lsn_ = lsn;
  std::lock_guard<std::mutex> lock(mu_);
  segments_.back().size = size + record->size();
  segments_.back().last = lsn;
  return lsn;
}

Status TransitionLog::DropThrough(uint64_t lsn) {
  std::vector<std::string> gone;
  {
    std::lock_guard<std::mutex> lock(mu_);
    while (segments_.size() > 1 && segments_.front().last <= lsn) {
      gone.push_back(segments_.front().path);
      segments_.erase(segments_.begin());
    }
  }
  for (const auto& path : gone) {
    if (::unlink(path.c_str()) != 0 && errno != ENOENT) {
      return OsError(codes::kIoError, "cannot remove", path, errno);
    }
  }
  return Status::Ok();
}

uint64_t TransitionLog::ClosedThrough() const {
  std::lock_guard<std::mutex> lock(mu_);
  return segments_.size() > 1 ? segments_[segments_.size() - 2].last : 0;
}

Status TransitionLog::Reset(uint64_t lsn) {
  std::vector<Segment> old;
  {
    std::lock_guard<std::mutex> lock(mu_);
    old.swap(segments_);
  }
  if (fd_ >= 0) ::close(fd_);
  fd_ = -1;
  // Every record is applied and durable in SQLite: a crash before the new segment exists
  // leaves an empty log, which opens as one.
  last_lsn_ = lsn;
  for (const auto& s : old) {
    if (::unlink(s.path.c_str()) != 0 && errno != ENOENT) {
      return OsError(codes::kIoError, "cannot remove", s.path, errno);
    }
  }
  return StartSegment(lsn + 1);
}

}  // namespace rsl::store
