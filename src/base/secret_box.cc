#include "base/secret_box.h"

#include <fcntl.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstdlib>

#include "base/codes.h"
#include "base/file.h"
#include "base/sha256.h"
#include "base/sqlite.h"
#include "base/strings.h"

namespace rsl {

namespace {

constexpr char kPrefix[] = "rslenc:v1:";
constexpr size_t kKeyBytes = 32;  // AES-256
constexpr size_t kNonceBytes = 12;
constexpr size_t kTagBytes = 16;
constexpr size_t kKeyIdChars = 8;
constexpr size_t kMaxKeyFileBytes = 64 * 1024;

std::string HexDecode(std::string_view hex, bool* ok) {
  *ok = hex.size() % 2 == 0;
  std::string out;
  out.reserve(hex.size() / 2);
  auto nibble = [&](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    *ok = false;
    return 0;
  };
  for (size_t i = 0; *ok && i + 1 < hex.size(); i += 2) {
    out += static_cast<char>(nibble(hex[i]) << 4 | nibble(hex[i + 1]));
  }
  return out;
}

// Parts of a sealed value: key id and the decoded nonce|ciphertext|tag.
bool SplitSealed(const std::string& sealed, std::string* key_id, std::string* blob) {
  if (!StartsWith(sealed, kPrefix)) return false;
  size_t id_start = sizeof(kPrefix) - 1;
  size_t colon = sealed.find(':', id_start);
  if (colon == std::string::npos || colon - id_start != kKeyIdChars) return false;
  *key_id = sealed.substr(id_start, kKeyIdChars);
  bool ok = false;
  *blob = HexDecode(std::string_view(sealed).substr(colon + 1), &ok);
  return ok && blob->size() >= kNonceBytes + kTagBytes;
}

}  // namespace

std::string SecretBox::KeyFilePath(const std::string& state_dir) {
  const char* env = std::getenv(kKeyFileEnv);
  if (env && *env) return env;
  return state_dir + "/secret.key";
}

Result<SecretBox::Key> SecretBox::NewKey() {
  Key k;
  k.bytes.resize(kKeyBytes);
  if (RAND_bytes(reinterpret_cast<unsigned char*>(k.bytes.data()), kKeyBytes) != 1) {
    return Error(codes::kIoError, "cannot draw a random key (OpenSSL RAND_bytes failed)");
  }
  k.id = Sha256Hex(k.bytes).substr(0, kKeyIdChars);
  return k;
}

Result<std::vector<SecretBox::Key>> SecretBox::ReadRing(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0) {
    return OsError(codes::kIoError, "cannot read the secret key file", path, errno);
  }
  if ((st.st_mode & 077) != 0) {
    return Error(codes::kInvalidArgument, "the secret key file " + path + " is readable by others")
        .Hint("chmod 600 " + path);
  }
  auto text = ReadFileIfExists(path, kMaxKeyFileBytes);
  if (!text.ok()) return text.error();
  if (!text->has_value()) return Error(codes::kIoError, "no secret key file " + path);
  std::vector<Key> keys;
  int line_no = 0;
  for (const auto& raw : Split(**text, '\n')) {
    ++line_no;
    std::string line(Trim(raw));
    if (line.empty() || line[0] == '#') continue;
    bool ok = false;
    Key k;
    k.bytes = HexDecode(line, &ok);
    if (!ok || k.bytes.size() != kKeyBytes) {
      return Error(codes::kInvalidArgument, "malformed key in the secret key file")
          .At(SourcePos{path, line_no, 1})
          .Hint("each line is a key of 64 hex characters");
    }
    k.id = Sha256Hex(k.bytes).substr(0, kKeyIdChars);
    keys.push_back(std::move(k));
  }
  if (keys.empty()) {
    return Error(codes::kInvalidArgument, "the secret key file " + path + " holds no key")
        .Hint("restore it from a backup; without it the stored secrets cannot be read");
  }
  return keys;
}

Status SecretBox::WriteRing(const std::string& path, const std::vector<Key>& keys) {
  std::string text = "# rsl secret key ring: the first key seals, all open. Keep it secret.\n";
  for (const auto& k : keys) text += HexEncode(k.bytes) + "\n";
  std::string tmp = path + ".tmp." + std::to_string(::getpid());
  int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC | O_NOFOLLOW, 0600);
  if (fd < 0) return OsError(codes::kIoError, "cannot write the secret key file", tmp, errno);
  bool ok = ::fchmod(fd, 0600) == 0 &&
            ::write(fd, text.data(), text.size()) == static_cast<ssize_t>(text.size()) &&
            ::fsync(fd) == 0;
  int err = errno;
  ::close(fd);
  if (!ok || ::rename(tmp.c_str(), path.c_str()) != 0) {
    if (ok) err = errno;
    ::unlink(tmp.c_str());
    return OsError(codes::kIoError, "cannot write the secret key file", path, err);
  }
  size_t slash = path.rfind('/');
  return SyncDir(slash == std::string::npos ? "." : path.substr(0, slash == 0 ? 1 : slash));
}

Result<std::shared_ptr<const SecretBox>> SecretBox::Load(const std::string& path) {
  auto keys = ReadRing(path);
  if (!keys.ok()) return keys.error();
  return std::shared_ptr<const SecretBox>(new SecretBox(std::move(*keys)));
}

Result<std::shared_ptr<const SecretBox>> SecretBox::ForStateDir(const std::string& state_dir) {
  std::string path = KeyFilePath(state_dir);
  if (!PathExists(path)) {
    if (std::getenv(kKeyFileEnv) && *std::getenv(kKeyFileEnv)) {
      return Error(codes::kIoError, "no secret key file " + path + " (from " + kKeyFileEnv + ")")
          .Hint("point --key-file at the key ring the state directory was sealed with");
    }
    RSL_RETURN_IF_ERROR(MakePrivateDir(state_dir));
    auto key = NewKey();
    if (!key.ok()) return key.error();
    RSL_RETURN_IF_ERROR(WriteRing(path, {*key}));
  }
  return Load(path);
}

bool SecretBox::IsSealed(const std::string& value) { return StartsWith(value, kPrefix); }

std::string SecretBox::Seal(const std::string& plaintext, const std::string& context) const {
  const Key& key = keys_.front();
  std::string nonce(kNonceBytes, '\0');
  // RAND_bytes fails only when the system has no entropy source; a fixed nonce would be far
  // worse than stopping.
  if (RAND_bytes(reinterpret_cast<unsigned char*>(nonce.data()), kNonceBytes) != 1) std::abort();
  std::string out(plaintext.size(), '\0');
  std::string tag(kTagBytes, '\0');
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int len = 0;
  auto u = [](std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); };
  auto cu = [](const std::string& s) { return reinterpret_cast<const unsigned char*>(s.data()); };
  bool ok =
      ctx && EVP_EncryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_EncryptInit_ex(ctx, nullptr, nullptr, cu(key.bytes), cu(nonce)) == 1 &&
      EVP_EncryptUpdate(ctx, nullptr, &len, cu(context), static_cast<int>(context.size())) == 1 &&
      EVP_EncryptUpdate(ctx, u(out), &len, cu(plaintext), static_cast<int>(plaintext.size())) ==
          1 &&
      EVP_EncryptFinal_ex(ctx, u(out) + len, &len) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_GET_TAG, kTagBytes, u(tag)) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) std::abort();  // AES-GCM with a valid key cannot fail but for memory exhaustion
  return std::string(kPrefix) + key.id + ":" + HexEncode(nonce + out + tag);
}

Result<std::string> SecretBox::Open(const std::string& sealed, const std::string& context) const {
  std::string key_id, blob;
  if (!SplitSealed(sealed, &key_id, &blob)) {
    return Error(codes::kIoError, "a sealed value of " + context + " is malformed");
  }
  const Key* key = nullptr;
  for (const auto& k : keys_) {
    if (k.id == key_id) key = &k;
  }
  if (!key) {
    return Error(codes::kIoError, "the value of " + context + " is sealed with key " + key_id +
                                      ", which the secret key file does not hold")
        .Hint("use the key file the state directory was sealed with (--key-file or " +
              std::string(kKeyFileEnv) + ")");
  }
  std::string nonce = blob.substr(0, kNonceBytes);
  std::string tag = blob.substr(blob.size() - kTagBytes);
  std::string ct = blob.substr(kNonceBytes, blob.size() - kNonceBytes - kTagBytes);
  std::string out(ct.size(), '\0');
  EVP_CIPHER_CTX* ctx = EVP_CIPHER_CTX_new();
  int len = 0;
  auto u = [](std::string& s) { return reinterpret_cast<unsigned char*>(s.data()); };
  auto cu = [](const std::string& s) { return reinterpret_cast<const unsigned char*>(s.data()); };
  bool ok =
      ctx && EVP_DecryptInit_ex(ctx, EVP_aes_256_gcm(), nullptr, nullptr, nullptr) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_IVLEN, kNonceBytes, nullptr) == 1 &&
      EVP_DecryptInit_ex(ctx, nullptr, nullptr, cu(key->bytes), cu(nonce)) == 1 &&
      EVP_DecryptUpdate(ctx, nullptr, &len, cu(context), static_cast<int>(context.size())) == 1 &&
      EVP_DecryptUpdate(ctx, u(out), &len, cu(ct), static_cast<int>(ct.size())) == 1 &&
      EVP_CIPHER_CTX_ctrl(ctx, EVP_CTRL_GCM_SET_TAG, kTagBytes, u(tag)) == 1 &&
      EVP_DecryptFinal_ex(ctx, u(out) + len, &len) == 1;
  EVP_CIPHER_CTX_free(ctx);
  if (!ok) {
    return Error(codes::kIoError, "the sealed value of " + context + " does not open with key " +
                                      key_id + " (altered?)");
  }
  return out;
}

bool SecretBox::SealedWithCurrentKey(const std::string& sealed) const {
  std::string key_id, blob;
  return SplitSealed(sealed, &key_id, &blob) && key_id == current_key_id();
}

Status SecretBox::AddNewKey(const std::string& path) {
  auto keys = ReadRing(path);
  if (!keys.ok()) return keys.error();
  auto key = NewKey();
  if (!key.ok()) return key.error();
  keys->insert(keys->begin(), *key);
  return WriteRing(path, *keys);
}

Status SecretBox::DropOldKeys(const std::string& path) {
  auto keys = ReadRing(path);
  if (!keys.ok()) return keys.error();
  keys->resize(1);
  return WriteRing(path, *keys);
}

Result<int> ResealColumn(Db& db, const SecretBox& box, const std::string& table,
                         const std::string& column, const std::string& context_sql,
                         const std::string& where) {
  struct Row {
    int64_t rowid;
    std::string context;
    std::string value;
  };
  const std::string select =
      "SELECT rowid, " + context_sql + ", " + column + " FROM " + table + " WHERE " + where;
  // A quick look first: opening a store must not take the write lock when nothing changes.
  auto rows = db.Rows(select, [](const Stmt& r) { return Row{r.Int(0), r.Text(1), r.Text(2)}; });
  if (!rows.ok()) return rows.error();
  if (std::all_of(rows->begin(), rows->end(),
                  [&](const Row& r) { return box.SealedWithCurrentKey(r.value); })) {
    return 0;
  }
  RSL_RETURN_IF_ERROR(db.Exec("PRAGMA secure_delete=ON"));
  int changed = 0;
  // Read again under the write lock: another process may have changed a row meanwhile.
  Status st = db.Transaction([&]() -> Status {
    auto locked = db.Rows(select, [](const Stmt& r) {
      return Row{r.Int(0), r.Text(1), r.Text(2)};
    });
    if (!locked.ok()) return locked.error();
    for (const auto& row : *locked) {
      if (box.SealedWithCurrentKey(row.value)) continue;
      std::string plain = row.value;
      if (SecretBox::IsSealed(row.value)) {
        auto opened = box.Open(row.value, row.context);
        if (!opened.ok()) return opened.error();
        plain = std::move(*opened);
      }
      RSL_RETURN_IF_ERROR(db.Run("UPDATE " + table + " SET " + column + " = ?1 WHERE rowid = ?2",
                                 box.Seal(plain, row.context), row.rowid));
      ++changed;
    }
    return Status::Ok();
  });
  (void)db.Exec("PRAGMA secure_delete=OFF");
  RSL_RETURN_IF_ERROR(st);
  // Best effort: a reader in another process right now keeps the WAL; the store's next
  // checkpoint copies the sealed pages over the old ones.
  (void)db.Exec("PRAGMA wal_checkpoint(TRUNCATE)");
  return changed;
}

}  // namespace rsl
