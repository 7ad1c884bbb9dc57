// Helpers for the model layer's tests: the shared temporary directory (base/test_util.h), and
// running the system's Python (/usr/bin/python3 with python3-numpy, an independent writer of .npy
// files and a real environment to inspect).
#pragma once

#include <gtest/gtest.h>

#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>

#include "base/file.h"
#include "base/test_util.h"

namespace rsl::model::testing {

inline constexpr char kSystemPython[] = "/usr/bin/python3";

using rsl::testing::TempDir;

//! Runs a Python script with /usr/bin/python3 in `cwd`; returns its exit status (0 = ok).
inline int RunPython(const std::string& script, const std::string& cwd) {
  std::string file = cwd + "/script.py";
  std::ofstream(file) << script;
  std::string cmd = "cd '" + cwd + "' && " + kSystemPython + " script.py";
  return std::system(cmd.c_str());
}

//! Runs a shell command and returns its stdout.
inline std::string Capture(const std::string& cmd) {
  std::string out;
  FILE* p = popen(cmd.c_str(), "r");
  if (!p) return out;
  char buf[4096];
  size_t n;
  while ((n = fread(buf, 1, sizeof buf, p)) > 0) out.append(buf, n);
  pclose(p);
  return out;
}

inline void WriteText(const std::string& path, const std::string& text) {
  ASSERT_TRUE(MakeDirs(path.substr(0, path.rfind('/'))).ok());
  std::ofstream(path, std::ios::binary) << text;
}

//! Writes a dist-info directory as pip would.
inline void AddDistInfo(const std::string& site, const std::string& name,
                        const std::string& version) {
  WriteText(site + "/" + name + "-" + version + ".dist-info/METADATA",
            "Metadata-Version: 2.1\nName: " + name + "\nVersion: " + version +
                "\nSummary: test\n\nLong description: Version: 0.0\n");
}

//! A venv of /usr/bin/python3 at `venv` (no pip needed); returns its site-packages.
//! With `system_site` it also sees Debian's packages (numpy).
inline std::string MakeVenv(const std::string& venv, bool system_site) {
  std::string cmd = std::string(kSystemPython) + " -m venv --without-pip " +
                    (system_site ? "--system-site-packages " : "") + venv;
  EXPECT_EQ(std::system(cmd.c_str()), 0);
  return Capture(
      venv +
      "/bin/python -c 'import sysconfig; print(sysconfig.get_paths()[\"purelib\"], end=\"\")'");
}

}  // namespace rsl::model::testing
