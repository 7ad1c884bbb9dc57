// A client of the OCI distribution API v2 (a container registry): resolves an image reference
// to the manifest of one platform, following image indexes and Docker manifest lists,
// authenticating as the registry's WWW-Authenticate challenge asks (Bearer token or Basic).
//
// Threading: a RegistryClient caches tokens; use one per thread.
#pragma once

#include <cstdint>
#include <map>
#include <string>
#include <vector>

#include "base/http_client.h"
#include "base/status.h"
#include "image/reference.h"

namespace rsl::image {

inline constexpr char kOciIndex[] = "application/vnd.oci.image.index.v1+json";
inline constexpr char kOciManifest[] = "application/vnd.oci.image.manifest.v1+json";
inline constexpr char kDockerManifestList[] =
    "application/vnd.docker.distribution.manifest.list.v2+json";
inline constexpr char kDockerManifest[] = "application/vnd.docker.distribution.manifest.v2+json";

struct Credentials {
  std::string username;
  std::string password;  //!< a secret: never in messages
};

struct RegistryOptions {
  std::string os = "linux";
  std::string architecture = "amd64";
  //! Per registry host as written in references ("127.0.0.1:5000", "docker.io").
  std::map<std::string, Credentials> credentials;
  long connect_timeout_ms = 10000;
  long timeout_ms = 60000;
};

struct Descriptor {
  std::string media_type;
  std::string digest;
  int64_t size = 0;
};

//! What a reference resolves to.
struct ResolvedImage {
  Reference reference;
  std::string digest;      //!< the platform manifest's digest: what a run pins
  std::string media_type;  //!< the manifest's media type
  int64_t manifest_size = 0;
  std::string index_digest;  //!< the index (or list) it was chosen from, "" if none
  std::string index_media_type;
  std::string platform;  //!< "linux/amd64", from the config
  Descriptor config;
  std::vector<Descriptor> layers;

  //! config + compressed layers, in bytes.
  int64_t Size() const;
};

class RegistryClient {
 public:
  explicit RegistryClient(RegistryOptions options = {});

  //! The manifest for options.os/architecture that `ref` names, checked against every digest
  //! that names it. Any failure (unknown repository or tag, refused credentials, no manifest
  //! for the platform, unreachable registry, a manifest whose digest is wrong) is
  //! IMAGE_NOT_FOUND quoting the registry's answer, with the reference as the value.
  Result<ResolvedImage> Resolve(const Reference& ref);

  //! A blob's bytes (config, layer), checked against its digest.
  Result<std::string> FetchBlob(const Reference& ref, const std::string& digest);

 private:
  //! GET {base}/v2/{repo}/{what}, answering one auth challenge.
  Result<HttpResponse> Get(const Reference& ref, const std::string& what,
                           const std::vector<std::string>& accept, bool follow);
  Status Authenticate(const Reference& ref, const std::string& challenge);
  Result<HttpResponse> FetchManifest(const Reference& ref, const std::string& manifest_ref,
                                     const std::string& expected_digest);

  RegistryOptions options_;
  std::map<std::string, std::string> auth_;  //!< registry/repository -> Authorization header
};

//! Parses a WWW-Authenticate header: the scheme ("bearer", "basic", lower case) and its
//! parameters (realm, service, scope, ...).
struct Challenge {
  std::string scheme;
  std::map<std::string, std::string> params;
};
Challenge ParseChallenge(const std::string& header);

std::string Base64(std::string_view bytes);

}  // namespace rsl::image
