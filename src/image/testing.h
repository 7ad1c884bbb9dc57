// Test fixtures for the image layer's tests and those above it: a real registry (Debian's
// docker-registry, the CNCF distribution registry) on a free loopback port, without auth, with
// Basic auth (htpasswd) or with token auth (testdata/token_server.py), and images pushed to it
// with skopeo from OCI layouts written by testdata/make_oci_layout.py (independent writers).
#pragma once

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/test_util.h"

namespace rsl::image::testing {

inline std::string ReadAll(const std::string& path) {
  std::ifstream in(path);
  std::stringstream ss;
  ss << in.rdbuf();
  return ss.str();
}

//! Starts argv with stdout and stderr to `log`; returns the pid (or -1).
inline pid_t Spawn(const std::vector<std::string>& argv, const std::string& log) {
  pid_t pid = fork();
  if (pid != 0) return pid;
  int fd = open(log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  dup2(fd, 1);
  dup2(fd, 2);
  std::vector<char*> args;
  for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
  args.push_back(nullptr);
  execvp(args[0], args.data());
  _exit(127);
}

//! Runs argv to completion; returns its exit status, its output in *output.
inline int RunCommand(const std::vector<std::string>& argv, const std::string& log,
                      std::string* output = nullptr) {
  pid_t pid = Spawn(argv, log);
  int status = 0;
  waitpid(pid, &status, 0);
  if (output != nullptr) *output = ReadAll(log);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

//! Waits up to 15 s for `pattern`'s first group to appear in the file at `log`.
inline std::string WaitForMatch(const std::string& log, const std::string& pattern) {
  std::regex re(pattern);
  for (int i = 0; i < 300; ++i) {
    std::smatch m;
    std::string text = ReadAll(log);
    if (std::regex_search(text, m, re)) return m[1];
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
  }
  return "";
}

class LocalRegistry {
 public:
  enum class Auth { kNone, kBasic, kToken };
  static constexpr char kUser[] = "alice";
  static constexpr char kPassword[] = "s3cret-pw";

  explicit LocalRegistry(Auth auth = Auth::kNone) : dir_("rsl-registry"), auth_(auth) {
    std::string testdata = std::string(RSL_SOURCE_DIR) + "/src/image/testdata/";
    std::string config =
        "version: 0.1\nlog:\n  level: info\nstorage:\n  filesystem:\n"
        "    rootdirectory: " +
        dir_.Sub("data") + "\nhttp:\n  addr: 127.0.0.1:0\n";
    if (auth == Auth::kBasic) {
      std::string hash;
      RunCommand({"python3", "-W", "ignore", "-c",
                  "import crypt,sys; print(crypt.crypt(sys.argv[1], "
                  "crypt.mksalt(crypt.METHOD_BLOWFISH, rounds=16)), end='')",
                  kPassword},
                 dir_.Sub("hash.out"), &hash);
      dir_.Write("htpasswd", std::string(kUser) + ":" + hash + "\n");
      config += "auth:\n  htpasswd:\n    realm: rsl-test\n    path: " + dir_.Sub("htpasswd") + "\n";
    }
    if (auth == Auth::kToken) {
      RunCommand({"openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-keyout",
                  dir_.Sub("token.key"), "-out", dir_.Sub("token.crt"), "-days", "2", "-subj",
                  "/CN=rsl-test-token"},
                 dir_.Sub("openssl.log"));
      token_pid_ = Spawn({"python3", testdata + "token_server.py", dir_.Sub("token.key"),
                          dir_.Sub("token.crt"), "rsl-test-issuer", "rsl-test", kUser, kPassword},
                         dir_.Sub("token.log"));
      std::string port = WaitForMatch(dir_.Sub("token.log"), "^([0-9]+)\n");
      config += "auth:\n  token:\n    realm: http://127.0.0.1:" + port +
                "/token\n    service: rsl-test\n    issuer: rsl-test-issuer\n"
                "    rootcertbundle: " +
                dir_.Sub("token.crt") + "\n";
    }
    dir_.Write("config.yml", config);
    pid_ = Spawn({"docker-registry", "serve", dir_.Sub("config.yml")}, dir_.Sub("registry.log"));
    std::string port =
        WaitForMatch(dir_.Sub("registry.log"), "listening on 127\\.0\\.0\\.1:([0-9]+)");
    if (!port.empty()) host_ = "127.0.0.1:" + port;
  }
  ~LocalRegistry() {
    for (pid_t pid : {pid_, token_pid_}) {
      if (pid <= 0) continue;
      kill(pid, SIGTERM);
      waitpid(pid, nullptr, 0);
    }
  }
  LocalRegistry(const LocalRegistry&) = delete;
  LocalRegistry& operator=(const LocalRegistry&) = delete;

  //! "127.0.0.1:PORT", or "" when the registry did not start (see Log()).
  const std::string& host() const { return host_; }
  std::string Log() const { return ReadAll(dir_.Sub("registry.log")); }

  //! Writes an OCI layout (one image per platform in `platforms`, "linux/amd64,linux/arm64"
  //! makes an index), pushes it as host()/repo:tag with skopeo and returns the digest of what
  //! the tag names (the index or the manifest); "" on failure, with skopeo's output in *why.
  //! `compress`: "zstd" pushes the layers zstd-compressed (skopeo --dest-compress-format).
  std::string Push(const std::string& repo, const std::string& tag, const std::string& platforms,
                   const std::vector<std::string>& files = {}, std::string* why = nullptr,
                   const std::string& compress = "") {
    std::string layout = dir_.Sub("layout-" + std::to_string(++pushes_));
    std::vector<std::string> make = {
        "python3", std::string(RSL_SOURCE_DIR) + "/src/image/testdata/make_oci_layout.py", layout,
        tag, platforms};
    make.insert(make.end(), files.begin(), files.end());
    std::string digest;
    if (RunCommand(make, layout + ".digest", &digest) != 0) {
      if (why) *why = digest;
      return "";
    }
    std::vector<std::string> copy = {"skopeo", "copy", "--all", "--dest-tls-verify=false"};
    if (!compress.empty()) {  // recompressed: the digest is the one skopeo pushed
      copy.push_back("--dest-compress-format");
      copy.push_back(compress);
      copy.push_back("--digestfile");
      copy.push_back(layout + ".pushed");
    }
    if (auth_ != Auth::kNone) {
      copy.push_back("--dest-creds");
      copy.push_back(std::string(kUser) + ":" + kPassword);
    }
    copy.push_back("oci:" + layout + ":" + tag);
    copy.push_back("docker://" + host_ + "/" + repo + ":" + tag);
    std::string out;
    if (RunCommand(copy, layout + ".skopeo", &out) != 0) {
      if (why) *why = out;
      return "";
    }
    if (!compress.empty()) digest = ReadAll(layout + ".pushed");
    while (!digest.empty() && digest.back() == '\n') digest.pop_back();
    return digest;
  }

 private:
  rsl::testing::TempDir dir_;
  Auth auth_;
  pid_t pid_ = -1;
  pid_t token_pid_ = -1;
  std::string host_;
  int pushes_ = 0;
};

}  // namespace rsl::image::testing
