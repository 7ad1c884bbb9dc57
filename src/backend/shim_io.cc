#include "backend/shim_io.h"

#include <fcntl.h>
#include <time.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

namespace rsl::shim {

int64_t NowMs() {
  timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return int64_t(ts.tv_sec) * 1000 + ts.tv_nsec / 1'000'000;
}

int64_t RealUs() {
  timespec ts;
  clock_gettime(CLOCK_REALTIME, &ts);
  return int64_t(ts.tv_sec) * 1'000'000 + ts.tv_nsec / 1000;
}

bool WriteString(const std::string& path, const std::string& s) {
  int fd = open(path.c_str(), O_WRONLY | O_CLOEXEC);
  if (fd < 0) return false;
  bool ok = write(fd, s.data(), s.size()) == ssize_t(s.size());
  close(fd);
  return ok;
}

std::string ReadSmall(const std::string& path) {
  int fd = open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) return "";
  std::string out;
  char buf[4096];
  ssize_t n;
  while ((n = read(fd, buf, sizeof(buf))) > 0) out.append(buf, size_t(n));
  close(fd);
  return out;
}

long long ReadNumberAfter(const std::string& text, const std::string& key) {
  size_t p = text.find(key);
  if (p == std::string::npos) return -1;
  return atoll(text.c_str() + p + key.size());
}

void WriteErr(const char* what, const char* arg, int err) {
  const char* parts[] = {"rsl-shim: ", what, arg, ": ", strerror(err), "\n"};
  for (const char* p : parts) (void)!write(2, p, strlen(p));
}

}  // namespace rsl::shim
