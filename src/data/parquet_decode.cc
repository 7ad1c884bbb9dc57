#include "data/parquet_decode.h"

#include <algorithm>
#include <cstring>
#include <limits>

namespace rsl::data::parquet_decode {

int BitWidth(int max_level) {
  int w = 0;
  while ((1 << w) <= max_level) w++;
  return w;
}

bool Hybrid::Decode(size_t n, uint32_t* out) {
  size_t got = 0;
  while (got < n) {
    uint64_t h = 0;
    for (int shift = 0;; shift += 7) {
      if (p_ >= end_ || shift > 35) return false;
      uint8_t b = *p_++;
      h |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) break;
    }
    if (h & 1) {  // bit-packed groups of 8
      uint64_t count = (h >> 1) * 8;
      uint64_t bytes = (h >> 1) * static_cast<uint64_t>(bw_);
      if (bytes > static_cast<uint64_t>(end_ - p_)) {
        // Writers may end the last run short of the buffer: take what is there.
        bytes = end_ - p_;
        count = bw_ == 0 ? count : bytes * 8 / bw_;
      }
      // Value k's bits start at bit k * bw: one 64-bit load holds them all (at most 7 bits
      // of offset + 32 of value), where 8 bytes remain before the buffer's end.
      const uint64_t mask = (uint64_t{1} << bw_) - 1;
      const uint64_t left = static_cast<uint64_t>(end_ - p_);
      uint64_t bitpos = 0;
      for (uint64_t k = 0; k < count && got < n; k++, got++, bitpos += bw_) {
        const uint64_t at = bitpos >> 3;
        uint64_t word = 0;
        if (at + 8 <= left)
          std::memcpy(&word, p_ + at, 8);
        else
          std::memcpy(&word, p_ + at, left - at);
        out[got] = static_cast<uint32_t>((word >> (bitpos & 7)) & mask);
      }
      p_ += bytes;
      if (count == 0 && got < n) return false;
    } else {
      uint64_t count = h >> 1;
      int nbytes = (bw_ + 7) / 8;
      if (end_ - p_ < nbytes) return false;
      uint32_t v = 0;
      for (int b = 0; b < nbytes; b++) v |= static_cast<uint32_t>(p_[b]) << (8 * b);
      p_ += nbytes;
      if (count == 0) return false;
      for (uint64_t k = 0; k < count && got < n; k++) out[got++] = v;
    }
  }
  return true;
}

// DELTA_BINARY_PACKED integers.
bool DecodeDelta(const uint8_t** pp, const uint8_t* end, size_t n, std::vector<int64_t>* out) {
  const uint8_t* p = *pp;
  auto uvar = [&](uint64_t* v) {
    *v = 0;
    for (int shift = 0; shift < 64; shift += 7) {
      if (p >= end) return false;
      uint8_t b = *p++;
      *v |= static_cast<uint64_t>(b & 0x7f) << shift;
      if (!(b & 0x80)) return true;
    }
    return false;
  };
  uint64_t block, minis, total, first;
  if (!uvar(&block) || !uvar(&minis) || !uvar(&total) || !uvar(&first)) return false;
  if (minis == 0 || block == 0 || block % minis != 0 || block > (1u << 16)) return false;
  uint64_t per_mini = block / minis;
  int64_t value = static_cast<int64_t>((first >> 1) ^ -(first & 1));
  out->clear();
  if (total == 0) {
    *pp = p;
    return true;
  }
  out->push_back(value);
  while (out->size() < total) {
    uint64_t zz;
    if (!uvar(&zz)) return false;
    int64_t min_delta = static_cast<int64_t>((zz >> 1) ^ -(zz & 1));
    if (static_cast<uint64_t>(end - p) < minis) return false;
    const uint8_t* widths = p;
    p += minis;
    for (uint64_t m = 0; m < minis && out->size() < total; m++) {
      int bw = widths[m];
      if (bw > 64) return false;
      uint64_t bytes = per_mini * bw / 8;
      if (static_cast<uint64_t>(end - p) < bytes) return false;
      uint64_t bitpos = 0;
      for (uint64_t k = 0; k < per_mini && out->size() < total; k++) {
        uint64_t d = 0;
        for (int b = 0; b < bw; b++, bitpos++)
          d |= static_cast<uint64_t>((p[bitpos >> 3] >> (bitpos & 7)) & 1) << b;
        value = static_cast<int64_t>(static_cast<uint64_t>(value) +
                                     static_cast<uint64_t>(min_delta) + d);
        out->push_back(value);
      }
      p += bytes;
    }
  }
  if (out->size() > n + 0 && n > 0) out->resize(n);
  *pp = p;
  return true;
}

bool DecodePlain(const Column& c, const uint8_t* p, const uint8_t* end, size_t n, Values* v) {
  v->ints.clear();
  v->dbls.clear();
  v->strs.clear();
  switch (c.type) {
    case kBoolean:
      if (static_cast<size_t>(end - p) * 8 < n) return false;
      for (size_t i = 0; i < n; i++) v->ints.push_back((p[i >> 3] >> (i & 7)) & 1);
      return true;
    case kInt32:
      if (static_cast<size_t>(end - p) < n * 4) return false;
      for (size_t i = 0; i < n; i++) {
        int32_t x;
        std::memcpy(&x, p + 4 * i, 4);
        v->ints.push_back(x);
      }
      return true;
    case kInt64:
      if (static_cast<size_t>(end - p) < n * 8) return false;
      v->ints.resize(n);
      if (n > 0) std::memcpy(v->ints.data(), p, n * 8);
      return true;
    case kInt96:
      if (static_cast<size_t>(end - p) < n * 12) return false;
      for (size_t i = 0; i < n; i++) {
        int64_t nanos;
        int32_t day;
        std::memcpy(&nanos, p + 12 * i, 8);
        std::memcpy(&day, p + 12 * i + 8, 4);
        // Days far from 1970 (Spark writes some) overflow microseconds: saturate.
        __int128 us =
            static_cast<__int128>(static_cast<int64_t>(day) - kJulianEpochDay) * 86400000000ll +
            nanos / 1000;
        us = std::clamp<__int128>(us, std::numeric_limits<int64_t>::min(),
                                  std::numeric_limits<int64_t>::max());
        v->ints.push_back(static_cast<int64_t>(us));
      }
      return true;
    case kFloat:
      if (static_cast<size_t>(end - p) < n * 4) return false;
      for (size_t i = 0; i < n; i++) {
        float x;
        std::memcpy(&x, p + 4 * i, 4);
        v->dbls.push_back(x);
      }
      return true;
    case kDouble:
      if (static_cast<size_t>(end - p) < n * 8) return false;
      v->dbls.resize(n);
      if (n > 0) std::memcpy(v->dbls.data(), p, n * 8);
      return true;
    case kByteArray:
      v->strs.reserve(n);
      for (size_t i = 0; i < n; i++) {
        if (end - p < 4) return false;
        uint32_t len;
        std::memcpy(&len, p, 4);
        p += 4;
        if (static_cast<size_t>(end - p) < len) return false;
        v->strs.emplace_back(reinterpret_cast<const char*>(p), len);
        p += len;
      }
      return true;
    case kFixed:
      if (static_cast<size_t>(end - p) < n * static_cast<size_t>(c.type_length)) return false;
      for (size_t i = 0; i < n; i++) {
        v->strs.emplace_back(reinterpret_cast<const char*>(p + i * c.type_length), c.type_length);
      }
      return true;
  }
  return false;
}

}  // namespace rsl::data::parquet_decode
