// SHA-256 (OpenSSL EVP) for digests of specs, data and model artifacts.
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace rsl {

//! Incremental SHA-256. Not thread-safe; one hasher per thread.
class Sha256 {
 public:
  Sha256();
  ~Sha256();
  Sha256(const Sha256&) = delete;
  Sha256& operator=(const Sha256&) = delete;
  void Update(std::string_view bytes);
  //! Lower-case hex digest (64 chars). The hasher must not be used afterwards.
  std::string HexDigest();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

//! Hex sha256 of bytes.
std::string Sha256Hex(std::string_view bytes);
//! Hex sha256 of a file's contents, read in chunks.
Result<std::string> Sha256File(const std::string& path);

}  // namespace rsl
