#include "base/sha256.h"

#include <openssl/evp.h>

#include <cerrno>
#include <cstdio>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl {

struct Sha256::Impl {
  EVP_MD_CTX* ctx = nullptr;
};

Sha256::Sha256() : impl_(std::make_unique<Impl>()) {
  impl_->ctx = EVP_MD_CTX_new();
  EVP_DigestInit_ex(impl_->ctx, EVP_sha256(), nullptr);
}

Sha256::~Sha256() { EVP_MD_CTX_free(impl_->ctx); }

void Sha256::Update(std::string_view bytes) {
  EVP_DigestUpdate(impl_->ctx, bytes.data(), bytes.size());
}

std::string Sha256::HexDigest() {
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned int len = 0;
  EVP_DigestFinal_ex(impl_->ctx, md, &len);
  return HexEncode(std::string_view(reinterpret_cast<const char*>(md), len));
}

std::string Sha256Hex(std::string_view bytes) {
  Sha256 h;
  h.Update(bytes);
  return h.HexDigest();
}

Result<std::string> Sha256File(const std::string& path) {
  FILE* f = std::fopen(path.c_str(), "rb");
  if (!f) return OsError(codes::kIoError, "cannot open", path, errno);
  Sha256 h;
  char buf[1 << 16];
  size_t n;
  while ((n = std::fread(buf, 1, sizeof buf, f)) > 0) h.Update(std::string_view(buf, n));
  bool bad = std::ferror(f);
  std::fclose(f);
  if (bad) return OsError(codes::kIoError, "cannot read", path, EIO);
  return h.HexDigest();
}

}  // namespace rsl
