// The image cache of the local backend: each manifest digest pulled once (skopeo copy to an OCI
// layout) and unpacked once (umoci unpack) into a runtime bundle under
// <state-dir>/images/bundles/<hex>/ (rootfs/, umoci's config.json, image.json, in-use),
// atomically (unpacked in a temporary directory, then renamed). A pull holds a lock of its
// digest only (two attempts wanting one digest: one pull; other digests pull and launch
// meanwhile); the cache's own lock is held briefly, to move a bundle in and to evict. The cache
// keeps to a size bound by evicting the least recently used bundles that are not in use: a bundle
// is in use while someone holds a shared flock on its `in-use` file (the local backend from Ensure
// until the attempt's exit is reported, rsl-shim while the attempt runs), and eviction takes that
// file's exclusive lock without waiting.
#pragma once

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "base/status.h"
#include "image/registry.h"

namespace rsl::image {

struct CachedImage {
  std::string digest;     //!< the manifest digest, "sha256:<hex>"
  std::string reference;  //!< what it was pulled by: registry/repository@digest
  std::string dir;        //!< the bundle directory
  std::string rootfs;     //!< dir + "/rootfs"
  int64_t bytes = 0;      //!< the unpacked size (regular files under rootfs)
  int64_t last_used_ms = 0;
  bool in_use = false;
  //! From the image's config (umoci's runtime config): environment, working directory, user.
  std::vector<std::string> env;
  std::string cwd;
  int64_t uid = 0, gid = 0;
  //! The in-use file's descriptor holding a shared lock (Ensure only); the caller closes it
  //! when the attempt has ended (and not before it has been handed on).
  int in_use_fd = -1;
  //! Ensure pulled and unpacked it now (it was not cached), taking pull_ms.
  bool pulled = false;
  int64_t pull_ms = 0;
};

struct PruneResult {
  std::vector<CachedImage> removed;
  int64_t freed_bytes = 0;
  int64_t kept_bytes = 0;
};

class BundleCache {
 public:
  //! The default size bound: 10 GiB (RSL_IMAGE_CACHE_BYTES overrides it for the backend).
  static constexpr int64_t kDefaultMaxBytes = int64_t(10) << 30;

  //! `state_dir`: the local backend's state directory; the cache is state_dir/images/bundles.
  BundleCache(std::string state_dir, int64_t max_bytes = kDefaultMaxBytes);

  const std::string& dir() const { return dir_; }

  //! The bundle of `pinned` (registry/repository@sha256:...), pulled and unpacked when it is
  //! not cached yet, marked used now and locked in use (see CachedImage::in_use_fd); then
  //! bundles beyond the size bound are evicted. `plain_http`: the registry is reached without
  //! TLS (loopback or marked insecure). `credentials` (may be null): the registry's, given to
  //! skopeo in an authfile of mode 0600 that is removed as soon as skopeo ends (never on a
  //! command line). IMAGE_PULL_FAILED with skopeo's or umoci's answer (the password masked).
  Result<CachedImage> Ensure(const std::string& pinned, const std::string& digest, bool plain_http,
                             const Credentials* credentials = nullptr);

  //! Whether the digest's bundle is in the cache now (it may be evicted any time after).
  bool Has(const std::string& digest) const;

  //! Every cached bundle, least recently used first.
  Result<std::vector<CachedImage>> List() const;

  //! Evicts least recently used bundles that are not in use until at most `keep_bytes`
  //! remain (0: all that are not in use).
  Result<PruneResult> Prune(int64_t keep_bytes);

 private:
  Result<PruneResult> PruneLocked(int64_t keep_bytes, const std::string& keep_digest);
  //! skopeo copy + umoci unpack of `pinned` into tmp/bundle (holding the digest's pull lock).
  Status Pull(const std::string& pinned, const std::string& tmp, bool plain_http,
              const Credentials* credentials);
  std::string dir_;
  int64_t max_bytes_;
};

}  // namespace rsl::image
