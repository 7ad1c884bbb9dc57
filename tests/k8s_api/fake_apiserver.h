#pragma once

// An API-server test double for the Kubernetes client (tests only): an HTTPS server on
// 127.0.0.1 (cpp-httplib over OpenSSL, with a CA and certificates made by openssl at test time)
// that speaks the core/v1 wire format for pods, secrets, configmaps, services and nodes, and
// apps/v1 deployments and autoscaling/v2 horizontalpodautoscalers:
//   - objects with metadata.resourceVersion (one cluster-wide counter), uid,
//     creationTimestamp; List kinds with the List's resourceVersion; Status objects for errors
//     (NotFound 404, AlreadyExists 409, Conflict 409 on a stale resourceVersion in a patch,
//     Invalid 422, Unauthorized 401, Gone 410);
//   - LIST with labelSelector (equality and existence terms), WATCH
//     (`?watch=1&resourceVersion=RV`) as a chunked stream of newline-delimited JSON events
//     after RV, BOOKMARK at the end of a timeoutSeconds stream, 410 for an RV older than the
//     last Compact() (as the HTTP status, or as an ERROR event when gone_as_event);
//   - create (POST), get, delete (DeleteOptions body recorded), merge patch, pods/log (follow
//     streams appended text until the pod ends);
//   - faults: the next N requests matching a method and path fail with a status (429 with
//     Retry-After, 5xx, 409); the next watch stream cut after N events, mid-line; a malformed
//     line in the next watch stream;
//   - pods moved through phases by the test (SetPodPhase) as the kubelet would report them;
//   - services get a spec.clusterIP; deployments a status (no replicas ready) that the test
//     moves (SetDeploymentReplicas) as the ReplicaSet controller, the kubelets and the HPA
//     would (no Pods are made for a Deployment).
// What it does not model: admission, defaulting and validation beyond metadata.name,
// graceful deletion (deletionTimestamp; objects go at once), field selectors, set-based
// label selectors, protobuf, HTTP/2, server-side apply, other resources.

#include <condition_variable>
#include <cstdint>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include <nlohmann/json.hpp>

namespace httplib {
class Server;
}

namespace rsl::k8stest {

//! Certificates made with the openssl command in `dir`: ca.crt/key, server.crt/key (for
//! 127.0.0.1 and localhost), client.crt/key (CN=rsl-test, signed by the CA), and
//! stranger.crt/key (signed by another CA). Returns false (and says why in *err) on failure.
bool MakePki(const std::string& dir, std::string* err);

enum class PodPhase {
  kPending,  // scheduled, container creating
  kRunning,
  kSucceeded,         // exit 0, reason Completed
  kFailed,            // exit code `exit_code`, reason Error
  kOomKilled,         // exit 137, reason OOMKilled
  kEvicted,           // phase Failed, pod reason Evicted (node memory pressure)
  kDisrupted,         // phase Failed with DisruptionTarget=True (preemption / node drain)
  kDeadlineExceeded,  // phase Failed, reason DeadlineExceeded (activeDeadlineSeconds)
  kImagePullBackOff,  // Pending, waiting ImagePullBackOff with the registry's message
};

struct Fault {
  std::string method;         //!< GET, POST, ...; "" = any
  std::string path_contains;  //!< substring of the path (and "?watch" for watches)
  int status = 500;
  std::string reason = "InternalError";
  std::string retry_after;  //!< Retry-After header value, if any
  int times = 1;            //!< how many matching requests fail
};

class FakeApiServer {
 public:
  struct Options {
    std::string pki_dir;              //!< from MakePki
    bool require_client_cert = true;  //!< verify against ca.crt; the handshake fails without
    std::string token;                //!< "" = no bearer token needed
  };
  explicit FakeApiServer(Options options);
  ~FakeApiServer();

  //! Binds 127.0.0.1 on a free port and serves on a thread. False when TLS setup fails.
  bool Start();
  std::string url() const;

  // State, as the test sees it (any thread).
  //! Stores an object as if created (ADDED event); returns it with its metadata filled in.
  nlohmann::json Add(const std::string& resource, const std::string& ns, nlohmann::json object);
  nlohmann::json Get(const std::string& resource, const std::string& ns, const std::string& name);
  bool Has(const std::string& resource, const std::string& ns, const std::string& name);
  //! Every object of `resource` in `ns` ("" = cluster-scoped), as stored.
  std::vector<nlohmann::json> List(const std::string& resource, const std::string& ns);
  //! Moves a pod to `phase` on `node` (a MODIFIED event).
  void SetPodPhase(const std::string& ns, const std::string& name, PodPhase phase,
                   const std::string& node = "node-1", int exit_code = 1);
  //! A Deployment's spec.replicas becomes `desired` (as the HPA would set it) and its status
  //! `desired` replicas of which `ready` are ready (a MODIFIED event).
  void SetDeploymentReplicas(const std::string& ns, const std::string& name, int desired,
                             int ready);
  //! A Deployment's status becomes `status` (observedGeneration: its generation), as the
  //! Deployment controller reports a rollout in flight, e.g. {replicas 3, updatedReplicas 1,
  //! readyReplicas 2}: one Pod of the new template up but not ready beside two old ready ones.
  void SetDeploymentStatus(const std::string& ns, const std::string& name, nlohmann::json status);
  void DeleteObject(const std::string& resource, const std::string& ns, const std::string& name);
  void AppendPodLog(const std::string& ns, const std::string& name, const std::string& text);
  //! Forgets history: watches from an RV older than now get 410 Gone.
  void Compact();
  int64_t resource_version();

  // Faults.
  void InjectFault(Fault fault);
  void ClearFaults();
  //! The next watch stream is cut (connection closed, mid-line) after `events` events.
  void CutNextWatchAfter(int events);
  //! The next watch stream sends `line` (then ends abruptly).
  void SendMalformedInNextWatch(const std::string& line);
  //! 410 as an ERROR event in a 200 stream (true) or as the HTTP status (false, default).
  void set_gone_as_event(bool v);

  // What the server saw.
  int requests(const std::string& method, const std::string& path_contains);
  nlohmann::json last_delete_options();
  std::vector<std::string> authorizations();  //!< Authorization headers seen (tests only)

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace rsl::k8stest
