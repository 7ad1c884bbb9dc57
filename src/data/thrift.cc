#include "data/thrift.h"

#include <cstring>

namespace rsl::data::thrift {
namespace {

// Parquet's structs nest a handful of levels; anything deeper is hostile input.
constexpr int kMaxDepth = 24;

class Decoder {
 public:
  explicit Decoder(std::string_view d)
      : p_(d.data()), begin_(d.data()), end_(d.data() + d.size()) {}

  bool ok() const { return err_.empty(); }
  const std::string& err() const { return err_; }
  size_t offset() const { return p_ - begin_; }

  uint64_t Varint() {
    uint64_t v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p_ >= end_) return Fail("truncated varint"), 0;
      uint8_t b = static_cast<uint8_t>(*p_++);
      v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if ((b & 0x80) == 0) return v;
    }
    return Fail("varint too long"), 0;
  }
  int64_t Zigzag() {
    uint64_t v = Varint();
    return static_cast<int64_t>((v >> 1) ^ -(v & 1));
  }
  uint8_t Byte() {
    if (p_ >= end_) return Fail("truncated"), 0;
    return static_cast<uint8_t>(*p_++);
  }

  void Value(Type t, Node* n, int depth) {
    n->type = t;
    if (depth > kMaxDepth) return Fail("nesting too deep");
    switch (t) {
      case kTrue:
        n->i = 1;
        return;
      case kFalse:
        n->i = 0;
        return;
      case kByte:
        n->i = static_cast<int8_t>(Byte());
        return;
      case kI16:
      case kI32:
      case kI64:
        n->i = Zigzag();
        return;
      case kDouble:
        if (end_ - p_ < 8) return Fail("truncated double");
        std::memcpy(&n->d, p_, 8);
        p_ += 8;
        return;
      case kBinary: {
        uint64_t len = Varint();
        if (!ok()) return;
        if (len > static_cast<uint64_t>(end_ - p_)) return Fail("binary longer than the buffer");
        n->bin = std::string_view(p_, len);
        p_ += len;
        return;
      }
      case kList:
      case kSet: {
        uint8_t h = Byte();
        uint64_t size = h >> 4;
        Type et = static_cast<Type>(h & 0x0f);
        if (size == 15) size = Varint();
        if (!ok()) return;
        if (size > static_cast<uint64_t>(end_ - p_)) return Fail("list longer than the buffer");
        n->items.resize(size);
        for (auto& item : n->items) {
          if (et == kTrue || et == kFalse) {  // list booleans are one byte each
            item.type = kTrue;
            item.i = Byte() == 1;
          } else {
            Value(et, &item, depth + 1);
          }
          if (!ok()) return;
        }
        return;
      }
      case kMap: {
        uint64_t size = Varint();
        if (!ok() || size == 0) return;
        if (size > static_cast<uint64_t>(end_ - p_)) return Fail("map longer than the buffer");
        uint8_t kv = Byte();
        n->items.resize(size * 2);
        for (size_t k = 0; k < n->items.size() && ok(); k++) {
          Value(static_cast<Type>(k % 2 == 0 ? kv >> 4 : kv & 0x0f), &n->items[k], depth + 1);
        }
        return;
      }
      case kStruct: {
        int16_t last = 0;
        while (ok()) {
          uint8_t h = Byte();
          if (!ok()) return;
          Type ft = static_cast<Type>(h & 0x0f);
          if (ft == kStop) return;
          int16_t delta = h >> 4;
          int16_t id =
              delta != 0 ? static_cast<int16_t>(last + delta) : static_cast<int16_t>(Zigzag());
          last = id;
          n->fields.emplace_back();
          n->fields.back().id = id;
          Value(ft, &n->fields.back(), depth + 1);
        }
        return;
      }
      default:
        return Fail("unknown compact type " + std::to_string(static_cast<int>(t)));
    }
  }

 private:
  void Fail(const std::string& what) {
    if (err_.empty()) err_ = what + " at +" + std::to_string(p_ - begin_);
    p_ = end_;
  }

  const char* p_;
  const char* begin_;
  const char* end_;
  std::string err_;
};

}  // namespace

const Node* Node::Field(int16_t id) const {
  for (const auto& f : fields) {
    if (f.id == id) return &f;
  }
  return nullptr;
}

int64_t Node::Int(int16_t id, int64_t def) const {
  const Node* f = Field(id);
  return f ? f->i : def;
}

std::string_view Node::Str(int16_t id) const {
  const Node* f = Field(id);
  return f ? f->bin : std::string_view();
}

std::string ReadStruct(std::string_view data, Node* out, size_t* consumed) {
  Decoder d(data);
  d.Value(kStruct, out, 0);
  if (!d.ok()) return d.err();
  *consumed = d.offset();
  return "";
}

}  // namespace rsl::data::thrift
