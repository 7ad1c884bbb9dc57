// A read-only memory map of a whole file, so readers can parse multi-gigabyte tensor files
// while touching only the pages they look at (a safetensors header, one output tensor).
#pragma once

#include <memory>
#include <string>
#include <string_view>

#include "base/status.h"

namespace rsl::model {

class MappedFile {
 public:
  //! IO_ERROR (with the path and strerror) when the file cannot be opened or mapped.
  static Result<std::unique_ptr<MappedFile>> Open(const std::string& path);
  ~MappedFile();
  MappedFile(const MappedFile&) = delete;
  MappedFile& operator=(const MappedFile&) = delete;

  //! The file's bytes (empty for an empty file); valid while this object lives.
  std::string_view bytes() const { return {static_cast<const char*>(addr_), size_}; }

 private:
  MappedFile(void* addr, size_t size) : addr_(addr), size_(size) {}
  void* addr_;
  size_t size_;
};

}  // namespace rsl::model
