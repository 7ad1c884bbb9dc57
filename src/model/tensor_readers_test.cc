// The .npy and .safetensors readers against files written by numpy and by Python's json and
// struct modules (independent writers), plus corrupt inputs and their exact messages.
#include <gtest/gtest.h>

#include <cmath>

#include "base/file.h"
#include "model/npy.h"
#include "model/safetensors.h"
#include "model/test_util.h"

namespace rsl::model {
namespace {

using testing::RunPython;
using testing::TempDir;

// Flat C-order position of a logical index.
int64_t FlatC(const std::vector<int64_t>& shape, const std::vector<int64_t>& index) {
  int64_t flat = 0;
  for (size_t k = 0; k < shape.size(); ++k) flat = flat * shape[k] + index[k];
  return flat;
}

// numpy writes arange(24).reshape(2, 3, 4) in every dtype, order, byte order and format
// version; every element read back must equal its logical C-order position.
TEST(NpyTest, ReadsEveryDtypeOrderAndVersionWrittenByNumpy) {
  TempDir dir;
  ASSERT_EQ(RunPython(R"(
import numpy as np
from numpy.lib import format as fmt
dtypes = ['?', 'i1', 'i2', 'i4', 'i8', 'u1', 'u2', 'u4', 'u8', 'f2', 'f4', 'f8']
for dt in dtypes:
    for order in 'CF':
        for endian in '<>':
            for version in [(1, 0), (2, 0), (3, 0)]:
                a = np.arange(24).reshape(2, 3, 4)
                if dt == '?':
                    a = a % 2 == 1
                a = np.array(a, dtype=np.dtype(dt).newbyteorder(endian), order=order)
                name = '%s_%s_%s_v%d.npy' % (dt.replace('?', 'bool'), order, 'le' if endian == '<' else 'be', version[0])
                with open(name, 'wb') as f:
                    fmt.write_array(f, a, version=version)
)",
                      dir.path()),
            0);
  const std::vector<std::pair<std::string, DType>> kinds = {
      {"bool", DType::kBool},  {"i1", DType::kInt8},    {"i2", DType::kInt16},
      {"i4", DType::kInt32},   {"i8", DType::kInt64},   {"u1", DType::kUint8},
      {"u2", DType::kUint16},  {"u4", DType::kUint32},  {"u8", DType::kUint64},
      {"f2", DType::kFloat16}, {"f4", DType::kFloat32}, {"f8", DType::kFloat64}};
  int files = 0;
  for (const auto& [code, dtype] : kinds) {
    for (std::string order : {"C", "F"}) {
      for (std::string endian : {"le", "be"}) {
        for (int version = 1; version <= 3; ++version) {
          std::string name = code + "_" + order + "_" + endian + "_v" + std::to_string(version);
          auto bytes = ReadFile(dir / (name + ".npy"));
          ASSERT_TRUE(bytes.ok()) << name;
          auto t = ParseNpy(*bytes, name + ".npy", name);
          ASSERT_TRUE(t.ok()) << t.status().ToString();
          EXPECT_EQ(t->dtype, dtype) << name;
          EXPECT_EQ(t->shape, (std::vector<int64_t>{2, 3, 4})) << name;
          EXPECT_EQ(t->fortran_order, order == "F") << name;
          for (int64_t pos = 0; pos < t->ElementCount(); ++pos) {
            int64_t flat = FlatC(t->shape, t->LogicalIndex(pos));
            double expected = dtype == DType::kBool ? flat % 2 : flat;
            ASSERT_EQ(t->ValueAt(pos), expected) << name << " at " << pos;
          }
          ++files;
        }
      }
    }
  }
  EXPECT_EQ(files, 12 * 2 * 2 * 3);
}

TEST(NpyTest, ReadsStringsScalarsEmptyAndSpecialFloats) {
  TempDir dir;
  ASSERT_EQ(RunPython(R"(
import numpy as np
np.save('u.npy', np.array(['ab', 'cde'], dtype='<U5'))
np.save('s.npy', np.array([b'xy', b'z'], dtype='S3'))
np.save('scalar.npy', np.float32(0.5))
np.save('empty.npy', np.zeros((0, 7), dtype=np.float64))
np.save('special.npy', np.array([1.0, np.nan, np.inf, -np.inf], dtype=np.float16))
)",
                      dir.path()),
            0);
  auto u = ReadFile(dir / "u.npy");
  auto ut = ParseNpy(*u, "u.npy", "u");
  ASSERT_TRUE(ut.ok()) << ut.status().ToString();
  EXPECT_EQ(ut->dtype, DType::kString);
  EXPECT_EQ(ut->item_size, 20u);
  EXPECT_EQ(ut->stored_type, "<U5");
  auto s = ReadFile(dir / "s.npy");
  auto st = ParseNpy(*s, "s.npy", "s");
  ASSERT_TRUE(st.ok());
  EXPECT_EQ(st->dtype, DType::kString);
  EXPECT_EQ(st->data.substr(0, 3), std::string("xy\0", 3));
  auto sc = ReadFile(dir / "scalar.npy");
  auto sct = ParseNpy(*sc, "scalar.npy", "scalar");
  ASSERT_TRUE(sct.ok());
  EXPECT_TRUE(sct->shape.empty());
  EXPECT_EQ(sct->ElementCount(), 1);
  EXPECT_EQ(sct->ValueAt(0), 0.5);
  auto e = ReadFile(dir / "empty.npy");
  auto et = ParseNpy(*e, "empty.npy", "empty");
  ASSERT_TRUE(et.ok());
  EXPECT_EQ(et->ElementCount(), 0);
  auto sp = ReadFile(dir / "special.npy");
  auto spt = ParseNpy(*sp, "special.npy", "special");
  ASSERT_TRUE(spt.ok());
  EXPECT_EQ(spt->ValueAt(0), 1.0);
  EXPECT_TRUE(std::isnan(spt->ValueAt(1)));
  EXPECT_EQ(spt->ValueAt(2), INFINITY);
  EXPECT_EQ(spt->ValueAt(3), -INFINITY);
}

// A valid v1 file built by hand, then broken in each way a reader must survive.
std::string NpyV1(const std::string& dict, const std::string& data) {
  std::string header = dict;
  while ((10 + header.size() + 1) % 64 != 0) header += ' ';
  header += '\n';
  std::string out = "\x93NUMPY";
  out += '\x01';
  out += '\x00';
  out += static_cast<char>(header.size() & 0xff);
  out += static_cast<char>(header.size() >> 8);
  return out + header + data;
}

TEST(NpyTest, CorruptHeadersYieldClearErrors) {
  const std::string good_dict = "{'descr': '<f4', 'fortran_order': False, 'shape': (2,), }";
  const std::string eight(8, '\0');
  ASSERT_TRUE(ParseNpy(NpyV1(good_dict, eight), "x.npy", "x").ok());
  struct Case {
    std::string bytes;
    std::string message;
  };
  const std::vector<Case> cases = {
      {"PK\x03\x04", "x.npy: DATA_FORMAT_ERROR: not a .npy file (missing the \\x93NUMPY magic)"},
      {NpyV1(good_dict, eight).substr(0, 30),
       "x.npy: DATA_FORMAT_ERROR: truncated .npy header: declares 118 bytes, file has 20"},
      {NpyV1(good_dict, std::string(7, '\0')),
       "x.npy: DATA_FORMAT_ERROR: shape [2] of <f4 needs 8 data bytes, file has 7"},
      {NpyV1("{'descr': [('a', '<f4')], 'fortran_order': False, 'shape': (2,), }", eight),
       "x.npy: DATA_FORMAT_ERROR: bad .npy header: structured (record) dtypes are not supported"},
      {NpyV1("{'descr': '|O', 'fortran_order': False, 'shape': (2,), }", eight),
       "x.npy: DATA_FORMAT_ERROR: dtype descr \"|O\" is not supported (bool, int8..int64, "
       "uint8..uint64, float16/32/64, <U, |S); object arrays need pickle, which is never loaded"},
      {NpyV1("{'descr': '<f4', 'shape': (2,), }", eight),
       "x.npy: DATA_FORMAT_ERROR: bad .npy header: needs the keys 'descr', 'fortran_order', "
       "'shape'"},
      {NpyV1("{'descr': '<f4', 'fortran_order': False, 'shape': (99999999999, 99999999999, "
             "99999999999), }",
             eight),
       "x.npy: DATA_FORMAT_ERROR: shape [99999999999, 99999999999, 99999999999] is too large"},
      {NpyV1("{'descr': '<f4', 'fortran_order': Nope, 'shape': (2,), }", eight),
       "x.npy: DATA_FORMAT_ERROR: bad .npy header: unexpected value at header offset 34"},
      {std::string("\x93NUMPY\x04\x00\x00\x00", 10),
       "x.npy: DATA_FORMAT_ERROR: .npy format version 4.0 is not supported (1, 2, 3)"},
  };
  for (const auto& c : cases) {
    auto t = ParseNpy(c.bytes, "x.npy", "x");
    ASSERT_FALSE(t.ok()) << c.message;
    Error e = t.error();
    e.hint.clear();
    EXPECT_EQ(e.ToString(), c.message);
  }
}

// Python's struct and json modules write the files; numpy provides the bytes.
TEST(SafetensorsTest, ReadsFilesWrittenByPython) {
  TempDir dir;
  ASSERT_EQ(RunPython(R"(
import json, struct
import numpy as np
def save(path, tensors, metadata=None):
    header, data = {}, b''
    for name, (dtype, arr_bytes, shape) in tensors.items():
        header[name] = {'dtype': dtype, 'shape': shape, 'data_offsets': [len(data), len(data) + len(arr_bytes)]}
        data += arr_bytes
    if metadata:
        header['__metadata__'] = metadata
    h = json.dumps(header).encode()
    with open(path, 'wb') as f:
        f.write(struct.pack('<Q', len(h)) + h + data)
probs = np.array([[0.25], [0.75], [1.0]], dtype='<f4')
bf16 = (np.array([1.5, -2.0, 3.0], dtype='<f4').view('<u4') >> 16).astype('<u2')
save('model.safetensors', {
    'fraud_prob': ('F32', probs.tobytes(), [3, 1]),
    'w': ('BF16', bf16.tobytes(), [3]),
    'ids': ('I64', np.array([7, -8], dtype='<i8').tobytes(), [2]),
    'mask': ('BOOL', np.array([True, False], dtype='?').tobytes(), [2]),
    'h': ('F16', np.array([0.5, 65504], dtype='<f2').tobytes(), [2]),
}, {'format': 'pt'})
)",
                      dir.path()),
            0);
  auto bytes = ReadFile(dir / "model.safetensors");
  ASSERT_TRUE(bytes.ok());
  auto f = ParseSafetensors(*bytes, "model.safetensors");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  EXPECT_EQ(f->metadata.at("format"), "pt");
  ASSERT_EQ(f->tensors.size(), 5u);
  std::map<std::string, const Tensor*> by_name;
  for (const auto& t : f->tensors) by_name[t.name] = &t;
  const Tensor& probs = *by_name.at("fraud_prob");
  EXPECT_EQ(probs.dtype, DType::kFloat32);
  EXPECT_EQ(probs.shape, (std::vector<int64_t>{3, 1}));
  EXPECT_EQ(probs.ValueAt(1), 0.75);
  const Tensor& w = *by_name.at("w");
  EXPECT_EQ(w.dtype, DType::kBfloat16);
  EXPECT_EQ(w.ValueAt(0), 1.5);
  EXPECT_EQ(w.ValueAt(1), -2.0);
  EXPECT_EQ(by_name.at("ids")->ValueAt(1), -8);
  EXPECT_EQ(by_name.at("mask")->ValueAt(0), 1);
  EXPECT_EQ(by_name.at("h")->ValueAt(1), 65504);
}

TEST(SafetensorsTest, WriterRoundTrips) {
  std::string four_floats(16, '\0');
  std::string file =
      WriteSafetensors({{"a", "F32", {2, 2}, four_floats}, {"b", "U8", {3}, "xyz"}}, {{"k", "v"}});
  auto f = ParseSafetensors(file, "rt.safetensors");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->tensors.size(), 2u);
  EXPECT_EQ(f->tensors[1].data, "xyz");
  EXPECT_EQ(f->metadata.at("k"), "v");
}

std::string WithHeader(const std::string& json, const std::string& data) {
  std::string out;
  uint64_t n = json.size();
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<char>((n >> (8 * i)) & 0xff));
  return out + json + data;
}

// FP8 elements against values the formats define (OCP 8-bit floating point: E4M3 has no
// infinities and one NaN pattern per sign; E5M2 is IEEE-like); a dtype RSL does not read is
// listed, not refused.
TEST(SafetensorsTest, ReadsFp8AndListsUnreadDtypes) {
  std::string bytes = WithHeader(
      "{\"e4\": {\"dtype\": \"F8_E4M3\", \"shape\": [7], \"data_offsets\": [0, 7]}, "
      "\"e5\": {\"dtype\": \"F8_E5M2\", \"shape\": [5], \"data_offsets\": [7, 12]}, "
      "\"x\": {\"dtype\": \"F4\", \"shape\": [4], \"data_offsets\": [12, 14]}}",
      std::string("\x38\xb8\x7e\x01\x08\x7f\xff"
                  "\x3c\x7b\x7c\xfc\x01"
                  "\x12\x34",
                  14));
  auto f = ParseSafetensors(bytes, "q.safetensors");
  ASSERT_TRUE(f.ok()) << f.status().ToString();
  ASSERT_EQ(f->tensors.size(), 2u);
  const Tensor& e4 = f->tensors[0];
  EXPECT_EQ(e4.dtype, DType::kFloat8E4M3);
  std::vector<double> want4 = {1.0, -1.0, 448.0, 0.001953125, 0.015625};
  for (size_t k = 0; k < want4.size(); ++k) EXPECT_EQ(e4.ValueAt(int64_t(k)), want4[k]) << k;
  EXPECT_TRUE(std::isnan(e4.ValueAt(5)));
  EXPECT_TRUE(std::isnan(e4.ValueAt(6)));
  const Tensor& e5 = f->tensors[1];
  EXPECT_EQ(e5.dtype, DType::kFloat8E5M2);
  std::vector<double> want5 = {1.0, 57344.0, INFINITY, -INFINITY, 0.0000152587890625};
  for (size_t k = 0; k < want5.size(); ++k) EXPECT_EQ(e5.ValueAt(int64_t(k)), want5[k]) << k;
  ASSERT_EQ(f->unread.size(), 1u);
  EXPECT_EQ(f->unread[0].name, "x");
  EXPECT_EQ(f->unread[0].stored_type, "F4");
  EXPECT_EQ(f->unread[0].shape, (std::vector<int64_t>{4}));
}

TEST(SafetensorsTest, CorruptHeadersYieldClearErrors) {
  struct Case {
    std::string bytes;
    std::string message;
  };
  const std::string p = "m.safetensors: DATA_FORMAT_ERROR: ";
  const std::vector<Case> cases = {
      {"abc", p + "not a .safetensors file: 3 bytes, shorter than the 8-byte header length"},
      {WithHeader("{}", "").substr(0, 9), p + "truncated: header length 2 but only 1 bytes follow"},
      {std::string("\xff\xff\xff\xff\xff\xff\xff\x7f", 8) + "{}",
       p + "header length 9223372036854775807 exceeds the limit of 104857600 bytes"},
      {WithHeader("[1, 2]", ""), p + "header is not a JSON object"},
      {WithHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [2], \"data_offsets\": [0, 8]}}",
                  std::string(4, '\0')),
       p + "tensor \"a\": data_offsets [0, 8] outside the data region of 4 bytes"},
      {WithHeader("{\"a\": {\"dtype\": \"F32\", \"shape\": [3], \"data_offsets\": [0, 8]}}",
                  std::string(8, '\0')),
       p + "tensor \"a\": shape [3] of F32 does not match data_offsets [0, 8]"},
      {WithHeader("{\"a\": {\"dtype\": \"F8_E8M0\", \"shape\": [1], \"data_offsets\": [0, 2]}}",
                  std::string(1, '\0')),
       p + "tensor \"a\": data_offsets [0, 2] outside the data region of 1 bytes"},
      {WithHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [0, 4]}, "
                  "\"b\": {\"dtype\": \"U8\", \"shape\": [2], \"data_offsets\": [2, 4]}}",
                  std::string(4, '\0')),
       p + "tensor data regions overlap at offset 2"},
      {WithHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [-1], \"data_offsets\": [0, 4]}}",
                  std::string(4, '\0')),
       p + "tensor \"a\": shape entries must be non-negative integers"},
      {WithHeader("{\"a\": {\"dtype\": \"U8\", \"shape\": [4], \"data_offsets\": [4, 0]}}",
                  std::string(4, '\0')),
       p + "tensor \"a\": data_offsets [4, 0] outside the data region of 4 bytes"},
      {WithHeader("{\"__metadata__\": {\"k\": 1}}", ""), p + "__metadata__.k must be a string"},
  };
  for (const auto& c : cases) {
    auto f = ParseSafetensors(c.bytes, "m.safetensors");
    ASSERT_FALSE(f.ok()) << c.message;
    Error e = f.error();
    e.hint.clear();
    EXPECT_EQ(e.ToString(), c.message);
  }
}

}  // namespace
}  // namespace rsl::model
