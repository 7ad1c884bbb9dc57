#include "harness.h"

#include <algorithm>

#include <fcntl.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>

#include <nlohmann/json.hpp>

namespace rsl::apitest {

namespace fs = std::filesystem;

namespace {
constexpr int kStartTimeoutMs = 20000;  // sanitizer builds start slowly
constexpr int kPollMs = 100;

std::string LastLine(const std::string& s) {
  std::istringstream in(s);
  std::string line, last;
  while (std::getline(in, line)) {
    if (!line.empty()) last = line;
  }
  return last;
}
}  // namespace

std::string CmdResult::LastErrLine() const { return LastLine(err); }
std::string CmdResult::LastOutLine() const { return LastLine(out); }

std::string SeedctlPath() { return std::string(RSL_BINARY_DIR) + "/bin/seedctl"; }
std::string ControllerPath() { return std::string(RSL_BINARY_DIR) + "/bin/rsl-controller"; }

void WriteText(const std::string& path, const std::string& text) {
  std::ofstream(path, std::ios::binary) << text;
}

std::string ReadText(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  std::ostringstream s;
  s << in.rdbuf();
  return s.str();
}

std::vector<std::string> FilesUnder(const std::string& dir) {
  std::vector<std::string> out;
  std::error_code ec;
  for (auto it = fs::recursive_directory_iterator(dir, ec);
       !ec && it != fs::recursive_directory_iterator(); it.increment(ec)) {
    if (it->is_regular_file(ec)) out.push_back(it->path().string());
  }
  return out;
}

std::string IdFromSubmit(const std::string& out) {
  std::smatch m;
  static const std::regex kId("ID: (wl-[0-9]{8}-[0-9a-f]{8})");
  return std::regex_search(out, m, kId) ? m[1].str() : "";
}

CmdResult RunCmd(const std::vector<std::string>& argv,
                 const std::map<std::string, std::string>& env, const std::string& cwd) {
  CmdResult r;
  char out_tmpl[] = "/tmp/rsl-apitest-out-XXXXXX";
  char err_tmpl[] = "/tmp/rsl-apitest-err-XXXXXX";
  int out_fd = mkstemp(out_tmpl);
  int err_fd = mkstemp(err_tmpl);
  pid_t pid = fork();
  if (pid == 0) {
    dup2(out_fd, 1);
    dup2(err_fd, 2);
    int null_fd = open("/dev/null", O_RDONLY);
    dup2(null_fd, 0);
    if (!cwd.empty() && chdir(cwd.c_str()) != 0) _exit(126);
    for (const auto& [k, v] : env) setenv(k.c_str(), v.c_str(), 1);
    std::vector<char*> args;
    for (const auto& a : argv) args.push_back(const_cast<char*>(a.c_str()));
    args.push_back(nullptr);
    execv(args[0], args.data());
    _exit(127);
  }
  int status = 0;
  waitpid(pid, &status, 0);
  r.exit_code = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
  close(out_fd);
  close(err_fd);
  r.out = ReadText(out_tmpl);
  r.err = ReadText(err_tmpl);
  unlink(out_tmpl);
  unlink(err_tmpl);
  return r;
}

Controller::Controller() {
  static int counter = 0;
  root_ = (fs::temp_directory_path() /
           ("rsl-apitest-" + std::to_string(getpid()) + "-" + std::to_string(counter++)))
              .string();
  fs::remove_all(root_);
  state_dir_ = root_ + "/state";
  work_dir_ = root_ + "/work";
  log_path_ = root_ + "/controller.log";
  fs::create_directories(state_dir_);
  fs::create_directories(work_dir_);
}

Controller::~Controller() {
  if (pid_ > 0) Terminate();
  std::error_code ec;
  fs::remove_all(root_, ec);
}

bool Controller::Start() {
  std::string listen = "127.0.0.1:" + std::to_string(port_);
  std::ofstream(log_path_, std::ios::app) << "--- start\n";
  pid_ = fork();
  if (pid_ == 0) {
    int fd = open(log_path_.c_str(), O_WRONLY | O_APPEND);
    dup2(fd, 1);
    dup2(fd, 2);
    setpgid(0, 0);  // its own process group: kill -9 hits it alone, steps survive via rsl-shim
    std::vector<std::string> args = {ControllerPath(), "--listen", listen, "--state-dir",
                                     state_dir_};
    if (!config_file_.empty()) args = {ControllerPath(), "--config", config_file_};
    args.insert(args.end(), extra_args_.begin(), extra_args_.end());
    std::vector<char*> argv;
    for (auto& a : args) argv.push_back(a.data());
    argv.push_back(nullptr);
    execv(argv[0], argv.data());
    _exit(127);
  }
  tls_ =
      std::find(extra_args_.begin(), extra_args_.end(), "--tls-cert") != extra_args_.end() ||
      std::find(extra_args_.begin(), extra_args_.end(), "--tls-self-signed") != extra_args_.end();
  static const std::regex kListening("listening on https?://127\\.0\\.0\\.1:([0-9]+)");
  for (int waited = 0; waited < kStartTimeoutMs; waited += kPollMs) {
    std::string log = Log();
    size_t last_start = log.rfind("--- start");
    std::smatch m;
    std::string tail = log.substr(last_start == std::string::npos ? 0 : last_start);
    if (std::regex_search(tail, m, kListening)) {
      port_ = std::stoi(m[1].str());
      return true;
    }
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      exit_status_ = WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
      pid_ = -1;
      return false;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(kPollMs));
  }
  return false;
}

void Controller::Kill9() {
  if (pid_ <= 0) return;
  kill(pid_, SIGKILL);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
}

int Controller::Terminate() {
  if (pid_ <= 0) return -1;
  kill(pid_, SIGTERM);
  int status = 0;
  waitpid(pid_, &status, 0);
  pid_ = -1;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

std::string Controller::Log() const { return ReadText(log_path_); }

std::string Controller::CreateToken(const std::string& ns, const std::string& role,
                                    const std::string& subject) {
  std::vector<std::string> argv = {SeedctlPath(), "token", "create", "--state-dir", state_dir_,
                                   "--namespace", ns,      "--role", role};
  if (!subject.empty()) {
    argv.push_back("--subject");
    argv.push_back(subject);
  }
  return RunCmd(argv, {}).LastOutLine();
}

CmdResult Controller::Seedctl(const std::string& token, const std::vector<std::string>& args) {
  std::vector<std::string> argv = {SeedctlPath()};
  argv.insert(argv.end(), args.begin(), args.end());
  // HOME points into the test root so no user config file leaks in.
  std::map<std::string, std::string> env = {{"SEEDCTL_SERVER", server()},
                                            {"SEEDCTL_TOKEN", token},
                                            {"HOME", root_},
                                            {"XDG_CONFIG_HOME", root_ + "/config"},
                                            {"TZ", "UTC"}};
  return RunCmd(argv, env, work_dir_);
}

std::string Controller::WaitPhase(const std::string& token, const std::string& id, int timeout_ms) {
  std::string phase;
  for (int waited = 0; waited < timeout_ms; waited += 200) {
    CmdResult r = Seedctl(token, {"workload", "status", "--id", id, "-o", "json"});
    auto j = nlohmann::json::parse(r.out, nullptr, false);
    if (j.is_object()) {
      phase = j["status"].value("phase", "");
      if (phase == "SUCCEEDED" || phase == "FAILED" || phase == "TIMED_OUT" ||
          phase == "CANCELLED" || phase == "REJECTED") {
        return phase;
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(200));
  }
  return "TIMEOUT(" + phase + ")";
}

}  // namespace rsl::apitest
