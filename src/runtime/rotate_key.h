// Rotation of the key that seals secrets and datasource credentials in a state directory
// (base/secret_box.h): rsl-controller --rotate-key.
#pragma once

#include <string>

#include "base/status.h"

namespace rsl::runtime {

//! Makes every component of this process read the key ring at `path` (it sets
//! RSL_SECRET_KEY_FILE, which base/secret_box.h reads). Call before opening anything.
void UseSecretKeyFile(const std::string& path);

//! What a rotation did.
struct KeyRotation {
  std::string old_key_id;
  std::string new_key_id;
  std::string key_file;
};

//! Puts a new key first in the state directory's key ring, re-seals every secret and
//! datasource credential with it, then drops the old key. Refused (CONFLICT) while a
//! controller holds the state directory: it would go on sealing with the old key. A crash in
//! the middle leaves both keys in the ring, so every value still opens; running the rotation
//! again finishes it.
Result<KeyRotation> RotateSecretKey(const std::string& state_dir);

}  // namespace rsl::runtime
