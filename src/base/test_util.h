// Helpers for tests of every layer (the rsl_testing library, linked into every test binary;
// never into a program).
#pragma once

#include <string>

namespace rsl::testing {

//! A fresh directory `<parent>/<prefix>-XXXXXX`, removed with everything in it on destruction.
//! It is made 0755 so that steps running as other uids (step isolation, docs/security.md) can
//! pass through it to the inputs and scripts a test puts there; what must stay private (a
//! state directory) a test makes 0700 itself.
class TempDir {
 public:
  //! `parent` defaults to ::testing::TempDir() ($TEST_TMPDIR under ctest: the build tree).
  //! A failure to create it fails the test (ADD_FAILURE) and leaves path() empty.
  explicit TempDir(const std::string& prefix = "rsl-test", const std::string& parent = "");
  ~TempDir();
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;

  const std::string& path() const { return path_; }
  //! path()/name.
  std::string Sub(const std::string& name) const { return path_ + "/" + name; }
  std::string operator/(const std::string& name) const { return Sub(name); }
  //! Writes `contents` to path()/name (making its directories); returns that path.
  std::string Write(const std::string& name, const std::string& contents) const;

 private:
  std::string path_;
};

}  // namespace rsl::testing
