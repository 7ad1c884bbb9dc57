// Container image references as Docker reads them: `[registry/]name[:tag][@sha256:hex]`, with
// Docker Hub's short names expanded (`ubuntu` -> docker.io/library/ubuntu:latest), and the
// transport each registry is reached over (HTTPS; plain HTTP for loopback registries, as
// Docker allows by default, and for registries marked insecure).
#pragma once

#include <string>
#include <vector>

#include "base/status.h"

namespace rsl::image {

//! Docker Hub's name in references and the host its API answers on.
inline constexpr char kDockerHub[] = "docker.io";
inline constexpr char kDockerHubApiHost[] = "registry-1.docker.io";

struct Reference {
  std::string registry;     //!< "docker.io", "127.0.0.1:5000", "ghcr.io"
  std::string repository;   //!< "library/ubuntu", "volc/train"
  std::string tag;          //!< "latest" when neither a tag nor a digest was written
  std::string digest;       //!< "sha256:<64 hex>" or ""
  bool plain_http = false;  //!< loopback or marked insecure: http:// instead of https://

  //! The fully qualified name: registry/repository[:tag][@digest].
  std::string ToString() const;
  //! registry/repository (no tag, no digest).
  std::string Name() const;
  //! What the manifest is fetched by: the digest when there is one, else the tag.
  std::string ManifestRef() const { return digest.empty() ? tag : digest; }
  //! "https://registry-1.docker.io", "http://127.0.0.1:5000".
  std::string BaseUrl() const;
};

struct ParseOptions {
  //! Registries (host or host:port, as written in references) reached over plain HTTP.
  std::vector<std::string> insecure_registries;
};

//! Parses and normalises `ref` as Docker does (distribution/reference ParseNormalizedNamed,
//! then TagNameOnly). A bad reference is IMAGE_REFERENCE_INVALID naming the part that is wrong,
//! with `ref` as the value and a hint.
Result<Reference> ParseReference(const std::string& ref, const ParseOptions& options = {});

//! True for localhost, 127.0.0.0/8 and ::1, with or without a port.
bool IsLoopbackRegistry(const std::string& registry);

}  // namespace rsl::image
