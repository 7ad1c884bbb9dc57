// Secrets at rest: values the state directory must keep but never show (secret values,
// datasource credentials) are sealed with AES-256-GCM (OpenSSL EVP) before they reach the
// database, so rsl.db, its WAL and any copy of them hold no secret in clear.
//
// The key ring is a file: $RSL_SECRET_KEY_FILE when set (rsl-controller --key-file sets it),
// else <state-dir>/secret.key, created with one fresh random key (mode 0600, the state
// directory being 0700) on first use. One key per line as 64 hex characters; the first line is
// the current key (new values are sealed with it), the others only open older values (they
// are there during a key rotation). A sealed value reads
//   rslenc:v1:<key id>:<hex of 12-byte nonce | ciphertext | 16-byte tag>
// where the key id is the first 8 hex characters of the key's sha256; `context` (e.g.
// "secret:risk/db-creds") is authenticated with it, so a sealed value copied into another row
// does not open.
//
// Threading: a SecretBox is immutable after loading; Seal and Open may run on many threads.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "base/status.h"

namespace rsl {

class SecretBox {
 public:
  //! The environment variable naming the key file (overrides <state-dir>/secret.key).
  static constexpr char kKeyFileEnv[] = "RSL_SECRET_KEY_FILE";

  //! Where the key ring of `state_dir` is.
  static std::string KeyFilePath(const std::string& state_dir);
  //! Loads the ring of `state_dir` (KeyFilePath), creating it with a new key when missing.
  //! IO_ERROR naming the file when it cannot be read or written, INVALID_ARGUMENT when it is
  //! malformed or readable by others.
  static Result<std::shared_ptr<const SecretBox>> ForStateDir(const std::string& state_dir);
  //! Loads a key ring file (it must exist).
  static Result<std::shared_ptr<const SecretBox>> Load(const std::string& path);

  //! Whether `value` is a sealed value (of any key).
  static bool IsSealed(const std::string& value);
  //! `plaintext` sealed with the current key, bound to `context`.
  std::string Seal(const std::string& plaintext, const std::string& context) const;
  //! The plaintext of a sealed value. IO_ERROR when no key of the ring opens it (a wrong key
  //! file) or it was altered; never shows the value.
  Result<std::string> Open(const std::string& sealed, const std::string& context) const;
  //! Whether `sealed` is sealed with the current key (a rotation re-seals the others).
  bool SealedWithCurrentKey(const std::string& sealed) const;
  const std::string& current_key_id() const { return keys_.front().id; }

  //! Key rotation, step 1: puts a new random key first in the ring file at `path` (the old
  //! ones stay, so every value still opens). Atomic (write, fsync, rename).
  static Status AddNewKey(const std::string& path);
  //! Key rotation, last step (once every value is re-sealed): keeps only the current key.
  static Status DropOldKeys(const std::string& path);

 private:
  struct Key {
    std::string id;     // 8 hex
    std::string bytes;  // 32
  };
  explicit SecretBox(std::vector<Key> keys) : keys_(std::move(keys)) {}
  static Result<std::vector<Key>> ReadRing(const std::string& path);
  static Status WriteRing(const std::string& path, const std::vector<Key>& keys);
  static Result<Key> NewKey();

  std::vector<Key> keys_;  // never empty; [0] is current
};

class Db;

//! Seals in place, in one transaction, every value of `column` in `table` (rows chosen by the
//! SQL condition `where`) that is in clear (rows written before values were sealed) or sealed
//! with a key other than the current one (a rotation). `context_sql` is the SQL expression of
//! each row's context, e.g. "'secret:' || namespace || '/' || name". The old contents are
//! overwritten (secure_delete) and the WAL is checkpointed and truncated afterwards, so no
//! earlier form of a value stays in the database's files. Returns how many values changed.
Result<int> ResealColumn(Db& db, const SecretBox& box, const std::string& table,
                         const std::string& column, const std::string& context_sql,
                         const std::string& where);

}  // namespace rsl
