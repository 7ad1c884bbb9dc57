// The API client against the test double over real TLS: client certificates and bearer
// tokens, the API's Status errors as typed errors, 429 Retry-After and 5xx retries, nodes.
#include <gtest/gtest.h>

#include <chrono>

#include "base/codes.h"
#include "harness.h"
#include "k8s/kubeconfig.h"
#include "k8s/nodes.h"
#include "k8s/watch.h"

namespace rsl::k8stest {
namespace {

using k8s::ApiClient;
using Clock = std::chrono::steady_clock;

TEST_F(DoubleTest, CreateGetPatchDeleteWithAClientCertificate) {
  ApiClient client = Client();
  auto created = client.Create(kPods, PodObject("train-1"));
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  EXPECT_EQ((*created)["metadata"]["namespace"], "risk");
  EXPECT_FALSE((*created)["metadata"]["uid"].get<std::string>().empty());
  EXPECT_FALSE((*created)["metadata"]["creationTimestamp"].get<std::string>().empty());
  std::string rv = (*created)["metadata"]["resourceVersion"];

  auto got = client.Get(std::string(kPods) + "/train-1");
  ASSERT_TRUE(got.ok()) << got.error().ToString();
  EXPECT_EQ((*got)["status"]["phase"], "Pending");

  auto patched = client.MergePatch(std::string(kPods) + "/train-1",
                                   {{"metadata", {{"labels", {{"rsl.dev/adopted", "yes"}}}}}});
  ASSERT_TRUE(patched.ok()) << patched.error().ToString();
  EXPECT_EQ((*patched)["metadata"]["labels"]["rsl.dev/adopted"], "yes");
  EXPECT_EQ((*patched)["metadata"]["labels"]["rsl.dev/run"], "run-1");
  EXPECT_NE((*patched)["metadata"]["resourceVersion"], rv);

  // A patch that names the old resourceVersion: optimistic concurrency says Conflict.
  auto stale =
      client.MergePatch(std::string(kPods) + "/train-1",
                        {{"metadata", {{"resourceVersion", rv}, {"labels", {{"x", "y"}}}}}});
  ASSERT_FALSE(stale.ok());
  EXPECT_EQ(stale.error().code, codes::kConflict);
  EXPECT_EQ(stale.error().value, "Conflict");

  auto deleted = client.Delete(std::string(kPods) + "/train-1", {30, "Background"});
  ASSERT_TRUE(deleted.ok()) << deleted.error().ToString();
  EXPECT_FALSE(server_->Has("pods", "risk", "train-1"));
  nlohmann::json opts = server_->last_delete_options();
  EXPECT_EQ(opts["kind"], "DeleteOptions");
  EXPECT_EQ(opts["gracePeriodSeconds"], 30);
  EXPECT_EQ(opts["propagationPolicy"], "Background");
  EXPECT_TRUE(server_->authorizations().empty());  // the certificate alone authenticated
}

TEST_F(DoubleTest, StatusErrorsAreTyped) {
  ApiClient client = Client();
  auto missing = client.Get(std::string(kPods) + "/nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().ToString(),
            "NOT_FOUND: GET /api/v1/namespaces/risk/pods/nope: NotFound: pods \"nope\" not found "
            "(HTTP 404)");

  ASSERT_TRUE(client.Create(kPods, PodObject("p")).ok());
  auto again = client.Create(kPods, PodObject("p"));
  ASSERT_FALSE(again.ok());
  EXPECT_EQ(again.error().code, codes::kConflict);
  EXPECT_EQ(again.error().value, "AlreadyExists");
  EXPECT_EQ(
      again.error().message,
      "POST /api/v1/namespaces/risk/pods: AlreadyExists: pods \"p\" already exists (HTTP 409)");
  EXPECT_EQ(server_->requests("POST", kPods), 2);  // a 409 is not retried

  nlohmann::json nameless = PodObject("x");
  nameless["metadata"].erase("name");
  auto invalid = client.Create(kPods, nameless);
  ASSERT_FALSE(invalid.ok());
  EXPECT_EQ(invalid.error().code, codes::kK8sInvalid);
  EXPECT_EQ(invalid.error().value, "Invalid");

  auto gone_delete = client.Delete(std::string(kPods) + "/nope");
  ASSERT_FALSE(gone_delete.ok());
  EXPECT_EQ(gone_delete.error().code, codes::kNotFound);
}

TEST_F(DoubleTest, RetryAfterIsHonoured) {
  ApiClient client = Client();
  server_->InjectFault({"POST", kPods, 429, "TooManyRequests", "1", 1});
  auto t0 = Clock::now();
  auto created = client.Create(kPods, PodObject("p"));
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  ASSERT_TRUE(created.ok()) << created.error().ToString();
  // Retry-After: 1 is one second, far above the 20 ms backoff these tests use.
  EXPECT_GE(waited, 1000);
  EXPECT_LT(waited, 10000);
  EXPECT_EQ(server_->requests("POST", kPods), 2);
  EXPECT_EQ(client.stats().retries.load(), 1);
  EXPECT_EQ(client.stats().waited_ms.load(), 1000);
}

TEST_F(DoubleTest, TooManyRequestsForeverEndsWithACode) {
  ApiClient client = Client({3, 10, 50, 100});
  server_->InjectFault({"GET", kPods, 429, "TooManyRequests", "60", 100});
  auto t0 = Clock::now();
  auto r = client.Get(kPods);
  auto waited = std::chrono::duration_cast<std::chrono::milliseconds>(Clock::now() - t0).count();
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, codes::kTooManyRequests);
  EXPECT_EQ(server_->requests("GET", kPods), 3);
  // Retry-After: 60 is capped at max_retry_after_ms (100 ms here): two waits.
  EXPECT_GE(waited, 200);
  EXPECT_LT(waited, 20000);
}

TEST_F(DoubleTest, ServerErrorsAreRetriedWithBackoffThenGiveUp) {
  ApiClient client = Client();
  server_->InjectFault({"GET", kPods, 503, "ServiceUnavailable", "", 2});
  auto list = client.Get(kPods);
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  EXPECT_EQ((*list)["kind"], "PodList");
  EXPECT_EQ(server_->requests("GET", kPods), 3);
  EXPECT_EQ(client.stats().retries.load(), 2);
  EXPECT_EQ(client.stats().waited_ms.load(), 20 + 40);  // exponential

  server_->InjectFault({"GET", kPods, 500, "InternalError", "", 100});
  auto failed = client.Get(kPods);
  ASSERT_FALSE(failed.ok());
  EXPECT_EQ(failed.error().code, codes::kK8sApiError);
  EXPECT_EQ(failed.error().message,
            "GET /api/v1/namespaces/risk/pods: InternalError: injected InternalError (HTTP 500)");
  EXPECT_EQ(server_->requests("GET", kPods), 3 + 4);  // max_attempts 4
}

TEST_F(DoubleTest, UnreachableServerIsAnIoError) {
  k8s::Connection c = ClientConnection(*server_);
  c.server = "https://127.0.0.1:1";
  ApiClient client(c, {2, 10, 10, 10});
  auto r = client.Get(kPods);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, codes::kIoError);
}

TEST_F(DoubleTest, TlsIsVerifiedBothWays) {
  // No client certificate: the double requires one, the handshake fails.
  k8s::Connection no_cert = ClientConnection(*server_);
  no_cert.client_cert_pem.clear();
  no_cert.client_key_pem.clear();
  auto r = ApiClient(no_cert, {1}).Get(kPods);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, codes::kIoError);
  // A certificate from a CA the server does not trust.
  k8s::Connection stranger = ClientConnection(*server_);
  stranger.client_cert_pem = Pem("stranger.crt");
  stranger.client_key_pem = Pem("stranger.key");
  r = ApiClient(stranger, {1}).Get(kPods);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, codes::kIoError);
  // A server certificate the client's CA did not sign.
  k8s::Connection wrong_ca = ClientConnection(*server_);
  wrong_ca.ca_pem = Pem("other-ca.crt");
  r = ApiClient(wrong_ca, {1}).Get(kPods);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.error().code, codes::kIoError);
  // ... accepted only with insecure-skip-tls-verify.
  wrong_ca.insecure_skip_tls_verify = true;
  r = ApiClient(wrong_ca, {1}).Get(kPods);
  EXPECT_TRUE(r.ok()) << r.error().ToString();
}

TEST(Double, BearerTokenAndAKubeconfigEndToEnd) {
  FakeApiServer server(FakeApiServer::Options{PkiDir(), false, "s3cr3t-t0ken"});
  ASSERT_TRUE(server.Start());
  rsl::testing::TempDir dir("kcfg");
  std::string cfg = dir.Write(
      "config", "current-context: t\nclusters:\n- name: c\n  cluster:\n    server: " +
                    server.url() + "\n    certificate-authority: " + PkiDir() +
                    "/ca.crt\ncontexts:\n- name: t\n  context: {cluster: c, user: u, namespace: "
                    "risk}\n- name: bad\n  context: {cluster: c, user: w}\nusers:\n- name: u\n  "
                    "user: {token: s3cr3t-t0ken}\n- name: w\n  user: {token: wr0ng-t0ken}\n");
  auto conn = k8s::ResolveConnection({{"KUBECONFIG", cfg}});
  ASSERT_TRUE(conn.ok()) << conn.error().ToString();
  ApiClient client(*conn);
  auto list = client.Get("/api/v1/namespaces/" + conn->namespace_ + "/pods");
  ASSERT_TRUE(list.ok()) << list.error().ToString();
  EXPECT_EQ(server.authorizations().back(), "Bearer s3cr3t-t0ken");

  auto bad = k8s::ResolveConnection({{"KUBECONFIG", cfg}}, "", "bad");
  ASSERT_TRUE(bad.ok());
  auto denied = ApiClient(*bad).Get(kPods);
  ASSERT_FALSE(denied.ok());
  EXPECT_EQ(denied.error().code, codes::kUnauthenticated);
  EXPECT_EQ(denied.error().ToString().find("wr0ng"), std::string::npos);
  EXPECT_EQ(bad->Describe().find("wr0ng"), std::string::npos);
}

TEST_F(DoubleTest, NodeInventory) {
  server_->Add(
      "nodes", "",
      {{"metadata",
        {{"name", "gpu-1"},
         {"labels",
          {{"nvidia.com/gpu.product", "NVIDIA-H100-80GB-HBM3"},
           {"nvidia.com/gpu.compute.major", "9"}}}}},
       {"status",
        {{"allocatable", {{"cpu", "31750m"}, {"memory", "250Gi"}, {"nvidia.com/gpu", "4"}}},
         {"conditions", {{{"type", "Ready"}, {"status", "True"}}}}}}});
  server_->Add("nodes", "",
               {{"metadata", {{"name", "cpu-1"}}},
                {"status",
                 {{"allocatable", {{"cpu", "8"}, {"memory", "32Gi"}}},
                  {"conditions", {{{"type", "Ready"}, {"status", "False"}}}}}}});
  ApiClient client = Client();
  auto nodes = k8s::ListNodes(&client, k8s::DefaultLabelCapabilities());
  ASSERT_TRUE(nodes.ok()) << nodes.error().ToString();
  ASSERT_EQ(nodes->size(), 2u);
  const auto& cpu = (*nodes)[0];  // the double lists by name
  const auto& gpu = (*nodes)[1];
  EXPECT_EQ(cpu.name, "cpu-1");
  EXPECT_EQ(cpu.state, spec::NodeState::kNotReady);
  EXPECT_EQ(gpu.cpu_millis, 31750);
  EXPECT_EQ(gpu.gpus.size(), 4u);
  EXPECT_EQ(gpu.gpus[0].model, "NVIDIA-H100-80GB-HBM3");
  EXPECT_EQ(gpu.capabilities, std::vector<std::string>{"compute_capability_9"});
}

TEST_F(DoubleTest, PodLogFollowStreamsUntilThePodEnds) {
  ApiClient client = Client();
  ASSERT_TRUE(client.Create(kPods, PodObject("p")).ok());
  server_->SetPodPhase("risk", "p", PodPhase::kRunning);
  server_->AppendPodLog("risk", "p", "epoch 1\n");
  std::string got;
  std::mutex mu;
  Status st;
  std::thread reader([&] {
    st = k8s::StreamPodLog(&client, "risk", "p", "main", true, [&](std::string_view d) {
      std::lock_guard<std::mutex> lock(mu);
      got.append(d);
      return true;
    });
  });
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return got == "epoch 1\n";
  }));
  server_->AppendPodLog("risk", "p", "epoch 2\n");
  ASSERT_TRUE(WaitFor([&] {
    std::lock_guard<std::mutex> lock(mu);
    return got == "epoch 1\nepoch 2\n";
  }));
  server_->SetPodPhase("risk", "p", PodPhase::kSucceeded);
  reader.join();
  EXPECT_TRUE(st.ok()) << st.ToString();
  EXPECT_EQ(server_->requests("GET", "/pods/p/log"), 1);

  std::string once;
  ASSERT_TRUE(k8s::StreamPodLog(&client, "risk", "p", "", false, [&](std::string_view d) {
                once.append(d);
                return true;
              }).ok());
  EXPECT_EQ(once, "epoch 1\nepoch 2\n");
  auto missing =
      k8s::StreamPodLog(&client, "risk", "nope", "", false, [](std::string_view) { return true; });
  EXPECT_EQ(missing.code(), codes::kNotFound);
}

}  // namespace
}  // namespace rsl::k8stest
