#include "backend/shim_record.h"

#include <fcntl.h>
#include <unistd.h>

#include <algorithm>

namespace rsl::shim {

namespace {

// The record as a file of its own: exit_file when the journal cannot take it.
void WriteRecord(const std::string& path, const std::string& record) {
  int fd = open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) return;
  (void)!write(fd, record.data(), record.size());
  close(fd);
}

}  // namespace

long long PeakCpuMillicores(long long sampled_peak, long long cpu_ms, int64_t wall_ms) {
  long long average = wall_ms > 0 ? cpu_ms * 1000 / wall_ms : 0;
  return std::max(sampled_peak, average);
}

std::string Record(int exit_code, int sig, bool oom, const std::string& stop, int64_t wall_ms,
                   long long cpu_ms, long long peak, long long peak_cpu_millicores,
                   const std::string& limits, int64_t started_us, int64_t ended_us,
                   const std::string& message) {
  std::string m = message;
  for (char& c : m) {
    if (c == '\n') c = ' ';
  }
  return "exit_code=" + std::to_string(exit_code) + "\nsignal=" + std::to_string(sig) +
         "\noom=" + (oom ? "1" : "0") + "\nstop=" + stop + "\nwall_ms=" + std::to_string(wall_ms) +
         "\ncpu_ms=" + std::to_string(cpu_ms) + "\npeak_memory_bytes=" + std::to_string(peak) +
         "\npeak_cpu_millicores=" + std::to_string(peak_cpu_millicores) + "\nlimits=" + limits +
         "\nstarted_us=" + std::to_string(started_us) + "\nended_us=" + std::to_string(ended_us) +
         "\nmessage=" + m + "\nend=1\n";
}

namespace {

// In the units a spec writes them (the shim links no spec code): 100663296 -> "96Mi" (exact
// binary units, else bytes), 2000 -> "2", 500 -> "500m".
std::string MemoryText(int64_t bytes) {
  const char* units[] = {"Ki", "Mi", "Gi", "Ti"};
  std::string unit;
  for (const char* u : units) {
    if (bytes < 1024 || bytes % 1024 != 0) break;
    bytes /= 1024;
    unit = u;
  }
  return std::to_string(bytes) + unit;
}

std::string CpuText(int64_t millis) {
  return millis % 1000 == 0 ? std::to_string(millis / 1000) : std::to_string(millis) + "m";
}

}  // namespace

std::string LimitsText(const Attempt& a) {
  std::string limits = a.mechanism;
  if (a.memory > 0 || a.cpu_millis > 0) {
    limits += " (memory " + (a.memory > 0 ? MemoryText(a.memory) : std::string("-")) + ", cpu " +
              (a.cpu_millis > 0 ? CpuText(a.cpu_millis) : "-") + ")";
  }
  return limits;
}

std::string JournalDir(const std::string& exit_file) {
  size_t p = exit_file.rfind('/');
  return p == std::string::npos ? "" : exit_file.substr(0, p + 1);
}

void ExitJournals::Write(const std::string& exit_file, const std::string& record) {
  if (exit_file.empty()) return;
  std::string dir = JournalDir(exit_file);
  std::string key = exit_file.substr(dir.size());
  if (key.empty() || key.find('\n') != std::string::npos) return WriteRecord(exit_file, record);
  std::string framed = "\nattempt=" + key + "\n" + record;
  auto it = journals_.find(dir);
  int fd = it != journals_.end() ? it->second.fd : -1;
  bool keep = it != journals_.end();  // kept open while the directory's attempts are alive
  if (fd < 0) {
    fd = open((dir + "exits").c_str(), O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
    if (keep) it->second.fd = fd;
  }
  bool ok = fd >= 0 && write(fd, framed.data(), framed.size()) == ssize_t(framed.size());
  if (!keep && fd >= 0) close(fd);
  if (!ok) WriteRecord(exit_file, record);  // the journal cannot take it: a file of its own
}

void ExitJournals::Release(const std::string& dir) {
  auto it = journals_.find(dir);
  if (it == journals_.end() || --it->second.live > 0) return;
  if (it->second.fd >= 0) close(it->second.fd);
  journals_.erase(it);
}

}  // namespace rsl::shim
