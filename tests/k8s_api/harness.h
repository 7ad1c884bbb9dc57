#pragma once

// Shared setup of the k8s_api tests: one set of certificates per test binary, a double
// requiring client certificates, and connections made from them.
#include <gtest/gtest.h>

#include <chrono>
#include <functional>
#include <memory>
#include <thread>

#include "base/file.h"
#include "base/test_util.h"
#include "fake_apiserver.h"
#include "k8s/api_client.h"

namespace rsl::k8stest {

//! The pods of namespace "risk", where the client's tests make theirs.
inline constexpr char kPods[] = "/api/v1/namespaces/risk/pods";

inline const std::string& PkiDir() {
  static rsl::testing::TempDir* dir = [] {
    auto* d = new rsl::testing::TempDir("k8s-pki");
    std::string err;
    if (!MakePki(d->path(), &err)) ADD_FAILURE() << err;
    return d;
  }();
  return dir->path();
}

inline std::string Pem(const std::string& name) {
  auto text = ReadFile(PkiDir() + "/" + name);
  return text.ok() ? *text : std::string();
}

//! A connection to `server` with the CA and the test client's certificate.
inline k8s::Connection ClientConnection(const FakeApiServer& server) {
  k8s::Connection c;
  c.server = server.url();
  c.ca_pem = Pem("ca.crt");
  c.client_cert_pem = Pem("client.crt");
  c.client_key_pem = Pem("client.key");
  c.context = "test";
  c.source = "test";
  return c;
}

//! Polls `pred` every 10 ms for up to `timeout_ms`.
inline bool WaitFor(const std::function<bool()>& pred, int timeout_ms = 15000) {
  auto end = std::chrono::steady_clock::now() + std::chrono::milliseconds(timeout_ms);
  while (std::chrono::steady_clock::now() < end) {
    if (pred()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(10));
  }
  return pred();
}

class DoubleTest : public ::testing::Test {
 protected:
  void SetUp() override {
    server_ = std::make_unique<FakeApiServer>(FakeApiServer::Options{PkiDir(), true, ""});
    ASSERT_TRUE(server_->Start());
  }
  // Fast retries: the tests measure behaviour, not patience.
  k8s::ApiClient Client(k8s::RetryPolicy retry = {4, 20, 200, 30'000}) {
    return k8s::ApiClient(ClientConnection(*server_), retry);
  }
  std::unique_ptr<FakeApiServer> server_;
};

inline nlohmann::json PodObject(const std::string& name,
                                const std::map<std::string, std::string>& labels = {
                                    {"rsl.dev/run", "run-1"}}) {
  nlohmann::json pod = {
      {"apiVersion", "v1"},
      {"kind", "Pod"},
      {"metadata", {{"name", name}, {"labels", labels}}},
      {"spec",
       {{"restartPolicy", "Never"},
        {"containers", nlohmann::json::array({{{"name", "main"},
                                               {"image", "registry.example/team/train:v1"},
                                               {"command", {"python", "train.py"}}}})}}}};
  return pod;
}

}  // namespace rsl::k8stest
