#include "model/npy.h"

#include <cctype>
#include <cstring>
#include <limits>
#include <map>
#include <optional>
#include <variant>

#include "base/codes.h"
#include "base/strings.h"

namespace rsl::model {
namespace {

constexpr char kMagic[] = "\x93NUMPY";
constexpr size_t kMagicLen = 6;
constexpr size_t kV1Preamble = 10;  // magic, version (2), uint16 header length
constexpr size_t kV2Preamble = 12;  // magic, version (2), uint32 header length

Error NpyError(const std::string& file, const std::string& message) {
  Error e(codes::kDataFormatError, message);
  e.At(SourcePos{file, 0, 0});
  e.Hint("write it with numpy.save, or check that the file is complete");
  return e;
}

// The header is a Python dict literal: {'descr': '<f4', 'fortran_order': False,
// 'shape': (3, 4), }. This parser accepts exactly the literals numpy writes: strings,
// True/False, integers and tuples of integers; anything else is an error.
using Literal = std::variant<std::string, bool, std::vector<int64_t>>;

class HeaderParser {
 public:
  explicit HeaderParser(std::string_view text) : text_(text) {}

  std::optional<std::map<std::string, Literal>> ParseDict(std::string* err) {
    std::map<std::string, Literal> dict;
    SkipSpace();
    if (!Consume('{')) return Fail(err, "expected '{'");
    while (true) {
      SkipSpace();
      if (Consume('}')) break;
      std::string key;
      if (!ParseString(&key)) return Fail(err, "expected a quoted key");
      SkipSpace();
      if (!Consume(':')) return Fail(err, "expected ':' after '" + key + "'");
      SkipSpace();
      Literal value;
      if (!ParseValue(&value, err)) return std::nullopt;
      dict[key] = std::move(value);
      SkipSpace();
      if (Consume(',')) continue;
      SkipSpace();
      if (Consume('}')) break;
      return Fail(err, "expected ',' or '}'");
    }
    return dict;
  }

 private:
  std::optional<std::map<std::string, Literal>> Fail(std::string* err, const std::string& what) {
    *err = what + " at header offset " + std::to_string(pos_);
    return std::nullopt;
  }
  void SkipSpace() {
    while (pos_ < text_.size() && std::isspace(static_cast<unsigned char>(text_[pos_]))) ++pos_;
  }
  bool Consume(char c) {
    if (pos_ < text_.size() && text_[pos_] == c) {
      ++pos_;
      return true;
    }
    return false;
  }
  bool ConsumeWord(std::string_view word) {
    if (text_.substr(pos_, word.size()) == word) {
      pos_ += word.size();
      return true;
    }
    return false;
  }
  bool ParseString(std::string* out) {
    if (pos_ >= text_.size() || (text_[pos_] != '\'' && text_[pos_] != '"')) return false;
    char quote = text_[pos_++];
    while (pos_ < text_.size() && text_[pos_] != quote) {
      if (text_[pos_] == '\\') return false;  // numpy never escapes inside its keys/descrs
      out->push_back(text_[pos_++]);
    }
    return Consume(quote);
  }
  bool ParseInt(int64_t* out) {
    size_t start = pos_;
    int64_t v = 0;
    while (pos_ < text_.size() && std::isdigit(static_cast<unsigned char>(text_[pos_]))) {
      int digit = text_[pos_] - '0';
      if (v > (std::numeric_limits<int64_t>::max() - digit) / 10) return false;
      v = v * 10 + digit;
      ++pos_;
    }
    if (pos_ == start) return false;
    Consume('L');  // Python 2 longs in files written long ago
    *out = v;
    return true;
  }
  bool ParseValue(Literal* out, std::string* err) {
    std::string s;
    if (pos_ < text_.size() && (text_[pos_] == '\'' || text_[pos_] == '"')) {
      if (!ParseString(&s)) return Fail(err, "unterminated string").has_value();
      *out = s;
      return true;
    }
    if (ConsumeWord("True")) {
      *out = true;
      return true;
    }
    if (ConsumeWord("False")) {
      *out = false;
      return true;
    }
    if (Consume('(')) {
      std::vector<int64_t> dims;
      while (true) {
        SkipSpace();
        if (Consume(')')) break;
        int64_t d;
        if (!ParseInt(&d)) return Fail(err, "expected a dimension").has_value();
        dims.push_back(d);
        SkipSpace();
        if (Consume(',')) continue;
        SkipSpace();
        if (Consume(')')) break;
        return Fail(err, "expected ',' or ')' in shape").has_value();
      }
      *out = dims;
      return true;
    }
    if (pos_ < text_.size() && text_[pos_] == '[') {
      *err = "structured (record) dtypes are not supported";
      return false;
    }
    return Fail(err, "unexpected value").has_value();
  }

  std::string_view text_;
  size_t pos_ = 0;
};

struct Descr {
  DType dtype;
  size_t item_size;
  bool big_endian;
};

// '<f4' -> float32 little-endian, '|U8' -> string of 8 UCS-4 characters (32 bytes), ...
std::optional<Descr> ParseDescr(const std::string& descr, std::string* err) {
  if (descr.size() < 2) {
    *err = "dtype descr " + Quote(descr) + " is too short";
    return std::nullopt;
  }
  char order = descr[0];
  if (order != '<' && order != '>' && order != '|' && order != '=') {
    *err = "dtype descr " + Quote(descr) + " has no byte order ('<', '>', '|' or '=')";
    return std::nullopt;
  }
  char kind = descr[1];
  std::string size_text = descr.substr(2);
  int64_t size = 0;
  for (char c : size_text) {
    if (!std::isdigit(static_cast<unsigned char>(c)) || size > (1 << 24)) {
      *err = "dtype descr " + Quote(descr) + " is not supported";
      return std::nullopt;
    }
    size = size * 10 + (c - '0');
  }
  Descr d{DType::kFloat32, static_cast<size_t>(size), order == '>'};
  auto numeric = [&](DType t) -> std::optional<Descr> {
    if (static_cast<size_t>(size) != DTypeSize(t)) return std::nullopt;
    d.dtype = t;
    return d;
  };
  std::optional<Descr> out;
  switch (kind) {
    case 'b':
      out = numeric(DType::kBool);
      break;
    case 'i':
      out = size == 1   ? numeric(DType::kInt8)
            : size == 2 ? numeric(DType::kInt16)
            : size == 4 ? numeric(DType::kInt32)
                        : numeric(DType::kInt64);
      break;
    case 'u':
      out = size == 1   ? numeric(DType::kUint8)
            : size == 2 ? numeric(DType::kUint16)
            : size == 4 ? numeric(DType::kUint32)
                        : numeric(DType::kUint64);
      break;
    case 'f':
      out = size == 2   ? numeric(DType::kFloat16)
            : size == 4 ? numeric(DType::kFloat32)
                        : numeric(DType::kFloat64);
      break;
    case 'U':  // UCS-4 code points
      d.dtype = DType::kString;
      d.item_size = static_cast<size_t>(size) * 4;
      out = d;
      break;
    case 'S':
    case 'a':
      d.dtype = DType::kString;
      out = d;
      break;
    default:
      break;
  }
  if (!out) {
    *err = "dtype descr " + Quote(descr) +
           " is not supported (bool, int8..int64, uint8..uint64, float16/32/64, <U, |S)";
    if (kind == 'V' && size == 2) *err += "; store bfloat16 tensors in .safetensors (BF16)";
    if (kind == 'O') *err += "; object arrays need pickle, which is never loaded";
  }
  return out;
}

}  // namespace

Result<Tensor> ParseNpy(std::string_view bytes, const std::string& file, const std::string& name) {
  if (bytes.size() < kV1Preamble || std::memcmp(bytes.data(), kMagic, kMagicLen) != 0) {
    return NpyError(file, "not a .npy file (missing the \\x93NUMPY magic)");
  }
  auto major = static_cast<unsigned char>(bytes[6]);
  size_t header_len = 0;
  size_t preamble = 0;
  auto byte_at = [&](size_t i) {
    return static_cast<size_t>(static_cast<unsigned char>(bytes[i]));
  };
  if (major == 1) {
    preamble = kV1Preamble;
    header_len = byte_at(8) | (byte_at(9) << 8);
  } else if (major == 2 || major == 3) {
    if (bytes.size() < kV2Preamble) return NpyError(file, "truncated .npy preamble");
    preamble = kV2Preamble;
    header_len = byte_at(8) | (byte_at(9) << 8) | (byte_at(10) << 16) | (byte_at(11) << 24);
  } else {
    return NpyError(file, ".npy format version " + std::to_string(major) + "." +
                              std::to_string(byte_at(7)) + " is not supported (1, 2, 3)");
  }
  if (header_len > kMaxNpyHeaderBytes) {
    return NpyError(file, ".npy header of " + std::to_string(header_len) +
                              " bytes exceeds the limit of " + std::to_string(kMaxNpyHeaderBytes));
  }
  if (bytes.size() - preamble < header_len) {
    return NpyError(file, "truncated .npy header: declares " + std::to_string(header_len) +
                              " bytes, file has " + std::to_string(bytes.size() - preamble));
  }
  std::string_view header = bytes.substr(preamble, header_len);
  std::string err;
  auto dict = HeaderParser(header).ParseDict(&err);
  if (!dict) return NpyError(file, "bad .npy header: " + err);

  auto descr_it = dict->find("descr");
  auto order_it = dict->find("fortran_order");
  auto shape_it = dict->find("shape");
  if (descr_it == dict->end() || order_it == dict->end() || shape_it == dict->end()) {
    return NpyError(file, "bad .npy header: needs the keys 'descr', 'fortran_order', 'shape'");
  }
  const auto* descr_text = std::get_if<std::string>(&descr_it->second);
  const auto* fortran = std::get_if<bool>(&order_it->second);
  const auto* shape = std::get_if<std::vector<int64_t>>(&shape_it->second);
  if (!descr_text || !fortran || !shape) {
    return NpyError(file,
                    "bad .npy header: 'descr' must be a string, 'fortran_order' a "
                    "bool and 'shape' a tuple of integers");
  }
  auto descr = ParseDescr(*descr_text, &err);
  if (!descr) return NpyError(file, err);

  Tensor t;
  t.name = name;
  t.dtype = descr->dtype;
  t.stored_type = *descr_text;
  t.item_size = descr->item_size;
  t.shape = *shape;
  t.fortran_order = *fortran;
  t.big_endian = descr->big_endian;
  auto data_bytes = CheckedByteCount(t.shape, t.item_size, kMaxTensorDataBytes);
  if (!data_bytes) {
    return NpyError(file, "shape " + ShapeToString(t.shape) + " is too large");
  }
  size_t available = bytes.size() - preamble - header_len;
  if (static_cast<uint64_t>(*data_bytes) != available) {
    return NpyError(file, "shape " + ShapeToString(t.shape) + " of " + *descr_text + " needs " +
                              std::to_string(*data_bytes) + " data bytes, file has " +
                              std::to_string(available));
  }
  t.data = bytes.substr(preamble + header_len);
  return t;
}

}  // namespace rsl::model
