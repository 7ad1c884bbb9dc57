#include "base/test_util.h"

#include <gtest/gtest.h>
#include <stdlib.h>
#include <sys/stat.h>

#include <cerrno>
#include <cstring>
#include <filesystem>

#include "base/file.h"

namespace rsl::testing {

namespace fs = std::filesystem;

TempDir::TempDir(const std::string& prefix, const std::string& parent) {
  std::string base = parent.empty() ? ::testing::TempDir() : parent;
  if (!base.empty() && base.back() != '/') base += '/';
  std::string tmpl = base + prefix + "-XXXXXX";
  if (mkdtemp(tmpl.data()) == nullptr) {
    ADD_FAILURE() << "mkdtemp " << tmpl << ": " << strerror(errno);
    return;
  }
  // Passable by the steps, which run as their namespace's own uid (docs/security.md).
  chmod(tmpl.c_str(), 0755);
  path_ = tmpl;
}

TempDir::~TempDir() {
  if (path_.empty()) return;
  std::error_code ec;
  // A test may have made parts read-only; make them writable again so removal works.
  for (auto it = fs::recursive_directory_iterator(path_, ec); !ec && it != fs::end(it);
       it.increment(ec)) {
    // Not through links: a venv's bin/python points at the system's interpreter.
    if (it->is_symlink(ec)) continue;
    fs::permissions(it->path(), fs::perms::owner_all, fs::perm_options::add, ec);
  }
  fs::remove_all(path_, ec);
}

std::string TempDir::Write(const std::string& name, const std::string& contents) const {
  std::string p = Sub(name);
  EXPECT_TRUE(MakeDirs(p.substr(0, p.find_last_of('/'))).ok());
  EXPECT_TRUE(WriteFileAtomic(p, contents).ok());
  return p;
}

}  // namespace rsl::testing
