// Thrift compact protocol, decode only, into a small generic tree: enough for Parquet's
// footer (FileMetaData) and page headers. Every read is bounds-checked and nesting is capped,
// so hostile bytes give an error, never a crash or a hang.
#pragma once

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace rsl::data::thrift {

enum Type : uint8_t {
  kStop = 0,
  kTrue = 1,
  kFalse = 2,
  kByte = 3,
  kI16 = 4,
  kI32 = 5,
  kI64 = 6,
  kDouble = 7,
  kBinary = 8,
  kList = 9,
  kSet = 10,
  kMap = 11,
  kStruct = 12,
};

struct Node {
  Type type = kStop;
  int64_t i = 0;  //!< ints, bools (0/1), byte
  double d = 0;
  std::string_view bin;      //!< binary/string: a view into the decoded buffer
  int16_t id = 0;            //!< as a struct field: its field id
  std::vector<Node> fields;  //!< struct (each with its id)
  std::vector<Node> items;   //!< list/set; map as key, value, key, value...

  //! The struct field with this id, or null.
  const Node* Field(int16_t id) const;
  int64_t Int(int16_t id, int64_t def = 0) const;
  std::string_view Str(int16_t id) const;
};

//! Decodes one struct from `data`. On success sets *consumed to the bytes used.
//! Returns "" or what went wrong (with the offset relative to `data`).
std::string ReadStruct(std::string_view data, Node* out, size_t* consumed);

}  // namespace rsl::data::thrift
