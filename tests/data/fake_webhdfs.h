// Test-only: an in-memory HDFS behind the WebHDFS REST API, for the conditional writes of
// data/webhdfs.cc (no Hadoop can be installed here). Each operation is atomic under one
// mutex, as the namenode makes them, with the semantics of Hadoop's WebHDFS documentation:
// - CREATE: the namenode answers 307 with a datanode URL; the datanode PUT creates the file
//   (parents made as needed); with overwrite=false an existing path is refused there with
//   403 and a RemoteException FileAlreadyExistsException (as Hadoop's ExceptionHandler
//   answers any IOException but FileNotFoundException);
// - RENAME: {"boolean": false} when the source is missing, the destination exists or its
//   parent does not exist; else the move, atomically. With renameoptions=OVERWRITE (the
//   namenode's rename2) an existing destination file is replaced atomically, a missing
//   source or destination parent is a 404 FileNotFoundException, an existing destination
//   without OVERWRITE a 403 FileAlreadyExistsException; the answer is an empty 200;
// - a file's modificationTime is its creation's (a RENAME keeps it), by the fake's clock
//   (the system's, plus what AdvanceClockMs added);
// - DELETE: {"boolean": false} for a missing path; a non-empty directory without
//   recursive=true is a 403 PathIsNotEmptyDirectoryException;
// - GETFILESTATUS / LISTSTATUS / OPEN: 404 FileNotFoundException for a missing path; OPEN
//   answers the bytes directly (the real namenode redirects to a datanode; the client follows).
#pragma once

#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <map>
#include <mutex>
#include <set>
#include <string>
#include <thread>

#include <nlohmann/json.hpp>

namespace rsl::data::testing {

class FakeWebHdfs {
 public:
  FakeWebHdfs() {
    server_.Get(R"(/webhdfs/v1(/.*))", [this](const httplib::Request& req, httplib::Response& res) {
      Handle("GET", req, &res);
    });
    server_.Put(R"(/webhdfs/v1(/.*))", [this](const httplib::Request& req, httplib::Response& res) {
      Handle("PUT", req, &res);
    });
    server_.Delete(R"(/webhdfs/v1(/.*))",
                   [this](const httplib::Request& req, httplib::Response& res) {
                     Handle("DELETE", req, &res);
                   });
    server_.Put("/datanode/create", [this](const httplib::Request& req, httplib::Response& res) {
      Gate();
      std::lock_guard<std::mutex> lock(mu_);
      std::string path = req.get_param_value("path");
      if (req.get_param_value("overwrite") == "false" && Exists(path)) {
        return Remote(&res, 403, "FileAlreadyExistsException", path + " already exists");
      }
      if (dirs_.count(path)) return Remote(&res, 403, "FileAlreadyExistsException", path);
      MakeParents(path);
      files_[path] = req.body;
      mtimes_[path] = NowMs();
      res.status = 201;
    });
    port_ = server_.bind_to_any_port("127.0.0.1");
    thread_ = std::thread([this] { server_.listen_after_bind(); });
    while (!server_.is_running()) std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  ~FakeWebHdfs() {
    Resume();
    server_.stop();
    thread_.join();
  }

  //! The datasource's --webhdfs-url.
  std::string url() const { return "http://127.0.0.1:" + std::to_string(port_); }

  //! The n-th request from now (1: the next one), namenode's or datanode's, waits before it
  //! is served until Resume(). Requests served meanwhile are counted from it on.
  void PauseAt(int n) {
    std::lock_guard<std::mutex> lock(gate_mu_);
    pause_in_ = n;
    paused_ = false;
  }
  //! Waits (up to `ms`) for the request PauseAt chose to arrive; false if none did.
  bool WaitPaused(int ms) {
    std::unique_lock<std::mutex> lock(gate_mu_);
    return gate_cv_.wait_for(lock, std::chrono::milliseconds(ms), [this] { return paused_; });
  }
  //! Lets the paused request go on (and cancels a pause not reached yet).
  void Resume() {
    std::lock_guard<std::mutex> lock(gate_mu_);
    pause_in_ = 0;
    paused_ = false;
    gate_cv_.notify_all();
  }
  //! Moves the fake's clock (files' modificationTime) forward.
  void AdvanceClockMs(int64_t ms) {
    std::lock_guard<std::mutex> lock(mu_);
    clock_offset_ms_ += ms;
  }

  //! Every file path, sorted.
  std::vector<std::string> Files() {
    std::lock_guard<std::mutex> lock(mu_);
    std::vector<std::string> out;
    for (const auto& [p, _] : files_) out.push_back(p);
    return out;
  }

 private:
  // Where a request waits when PauseAt chose it (outside mu_: others are served meanwhile).
  void Gate() {
    std::unique_lock<std::mutex> lock(gate_mu_);
    if (pause_in_ <= 0 || --pause_in_ > 0) return;
    paused_ = true;
    gate_cv_.notify_all();
    gate_cv_.wait(lock, [this] { return !paused_; });
  }

  int64_t NowMs() const {
    return std::chrono::duration_cast<std::chrono::milliseconds>(
               std::chrono::system_clock::now().time_since_epoch())
               .count() +
           clock_offset_ms_;
  }

  void Handle(const std::string& method, const httplib::Request& req, httplib::Response* res) {
    Gate();
    std::lock_guard<std::mutex> lock(mu_);
    std::string path = req.matches[1];
    while (path.size() > 1 && path.back() == '/') path.pop_back();
    std::string op = req.get_param_value("op");
    if (method == "GET" && op == "GETFILESTATUS") {
      if (!Exists(path)) return Remote(res, 404, "FileNotFoundException", "File does not exist");
      Json(res, {{"FileStatus", Status(path)}});
    } else if (method == "GET" && op == "LISTSTATUS") {
      if (!Exists(path)) return Remote(res, 404, "FileNotFoundException", "File does not exist");
      nlohmann::json list = nlohmann::json::array();
      if (files_.count(path)) {
        list.push_back(Status(path));
      } else {
        for (const auto& child : Children(path)) list.push_back(Status(child.first));
      }
      Json(res, {{"FileStatuses", {{"FileStatus", list}}}});
    } else if (method == "GET" && op == "OPEN") {
      auto it = files_.find(path);
      if (it == files_.end()) return Remote(res, 404, "FileNotFoundException", "not found");
      size_t offset = std::stoul(req.has_param("offset") ? req.get_param_value("offset") : "0");
      std::string bytes = offset < it->second.size() ? it->second.substr(offset) : "";
      if (req.has_param("length"))
        bytes = bytes.substr(0, std::stoul(req.get_param_value("length")));
      res->status = 200;
      res->set_content(bytes, "application/octet-stream");
    } else if (method == "PUT" && op == "CREATE") {
      res->status = 307;
      res->set_header("Location",
                      url() + "/datanode/create?path=" + httplib::detail::encode_query_param(path) +
                          "&overwrite=" + req.get_param_value("overwrite"));
    } else if (method == "PUT" && op == "RENAME") {
      std::string to = req.get_param_value("destination");
      if (req.has_param("renameoptions")) {
        bool overwrite = req.get_param_value("renameoptions") == "OVERWRITE";
        if (!Exists(path) || !dirs_.count(Parent(to)))
          return Remote(res, 404, "FileNotFoundException", "rename source or parent missing");
        if (Exists(to) && (!overwrite || dirs_.count(to) || dirs_.count(path)))
          return Remote(res, 403, "FileAlreadyExistsException", "rename destination " + to);
        if (Exists(to)) Erase(to);
        Move(path, to);
        res->status = 200;
        return;
      }
      bool ok = Exists(path) && !Exists(to) && dirs_.count(Parent(to)) > 0;
      if (ok) Move(path, to);
      Json(res, {{"boolean", ok}});
    } else if (method == "PUT" && op == "MKDIRS") {
      MakeParents(path + "/x");
      Json(res, {{"boolean", true}});
    } else if (method == "DELETE" && op == "DELETE") {
      if (!Exists(path)) return Json(res, {{"boolean", false}});
      if (dirs_.count(path) && !Children(path).empty() &&
          req.get_param_value("recursive") != "true") {
        return Remote(res, 403, "PathIsNotEmptyDirectoryException", path + " is non empty");
      }
      Erase(path);
      Json(res, {{"boolean", true}});
    } else {
      Remote(res, 400, "IllegalArgumentException", "unsupported " + method + " " + op);
    }
  }

  bool Exists(const std::string& p) const { return files_.count(p) || dirs_.count(p); }

  static std::string Parent(const std::string& p) {
    size_t slash = p.rfind('/');
    return slash == 0 || slash == std::string::npos ? "/" : p.substr(0, slash);
  }

  void MakeParents(const std::string& p) {
    for (std::string d = Parent(p); dirs_.insert(d).second && d != "/"; d = Parent(d)) {
    }
  }

  // Direct children: path -> "FILE" | "DIRECTORY".
  std::map<std::string, std::string> Children(const std::string& dir) const {
    std::string prefix = dir == "/" ? "/" : dir + "/";
    std::map<std::string, std::string> out;
    for (const auto& [p, _] : files_) {
      if (p.rfind(prefix, 0) == 0 && p.find('/', prefix.size()) == std::string::npos)
        out[p] = "FILE";
    }
    for (const auto& d : dirs_) {
      if (d != dir && d.rfind(prefix, 0) == 0 && d.find('/', prefix.size()) == std::string::npos)
        out[d] = "DIRECTORY";
    }
    return out;
  }

  nlohmann::json Status(const std::string& p) const {
    bool file = files_.count(p) > 0;
    size_t slash = p.rfind('/');
    return {{"pathSuffix", p == "/" ? "" : p.substr(slash + 1)},
            {"type", file ? "FILE" : "DIRECTORY"},
            {"length", file ? files_.at(p).size() : 0},
            {"modificationTime", file ? mtimes_.at(p) : int64_t{1700000000000}}};
  }

  void Move(const std::string& from, const std::string& to) {
    std::map<std::string, std::string> moved_files;
    std::map<std::string, int64_t> moved_mtimes;
    std::set<std::string> moved_dirs;
    for (auto it = files_.begin(); it != files_.end();) {
      if (it->first == from || it->first.rfind(from + "/", 0) == 0) {
        moved_files[to + it->first.substr(from.size())] = it->second;
        moved_mtimes[to + it->first.substr(from.size())] = mtimes_[it->first];
        mtimes_.erase(it->first);
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = dirs_.begin(); it != dirs_.end();) {
      if (*it == from || it->rfind(from + "/", 0) == 0) {
        moved_dirs.insert(to + it->substr(from.size()));
        it = dirs_.erase(it);
      } else {
        ++it;
      }
    }
    files_.insert(moved_files.begin(), moved_files.end());
    mtimes_.insert(moved_mtimes.begin(), moved_mtimes.end());
    dirs_.insert(moved_dirs.begin(), moved_dirs.end());
  }

  void Erase(const std::string& p) {
    for (auto it = files_.begin(); it != files_.end();) {
      if (it->first == p || it->first.rfind(p + "/", 0) == 0) {
        mtimes_.erase(it->first);
        it = files_.erase(it);
      } else {
        ++it;
      }
    }
    for (auto it = dirs_.begin(); it != dirs_.end();) {
      it = (*it == p || it->rfind(p + "/", 0) == 0) ? dirs_.erase(it) : ++it;
    }
  }

  static void Json(httplib::Response* res, const nlohmann::json& j) {
    res->status = 200;
    res->set_content(j.dump(), "application/json");
  }

  static void Remote(httplib::Response* res, int status, const std::string& exception,
                     const std::string& message) {
    res->status = status;
    nlohmann::json j = {{"RemoteException",
                         {{"exception", exception},
                          {"javaClassName", "org.apache.hadoop.fs." + exception},
                          {"message", message}}}};
    res->set_content(j.dump(), "application/json");
  }

  httplib::Server server_;
  std::thread thread_;
  int port_ = 0;
  std::mutex mu_;
  std::map<std::string, std::string> files_;
  std::map<std::string, int64_t> mtimes_;  // a file's creation, by NowMs()
  std::set<std::string> dirs_{"/"};
  int64_t clock_offset_ms_ = 0;
  std::mutex gate_mu_;  // PauseAt's
  std::condition_variable gate_cv_;
  int pause_in_ = 0;
  bool paused_ = false;
};

}  // namespace rsl::data::testing
