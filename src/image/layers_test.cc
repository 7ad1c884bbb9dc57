// Layers written by Python's tarfile (an independent writer: PAX and GNU headers, gzip),
// applied in order with their whiteouts.
#include "image/layers.h"

#include <gtest/gtest.h>

#include "base/file.h"
#include "image/testing.h"

namespace rsl::image {
namespace {

// Writes a tar (gzip'd when `gzip`) holding `entries`: "path=content", "path->target" (a
// symbolic link) or "path/" (a directory), in order; returns its bytes.
std::string MakeTar(const std::vector<std::string>& entries, bool gzip,
                    const char* format = "PAX") {
  rsl::testing::TempDir dir("rsl-layers");
  std::string script =
      "import io, sys, tarfile\n"
      "out, fmt, gz = sys.argv[1], sys.argv[2], sys.argv[3] == '1'\n"
      "with tarfile.open(out, 'w:gz' if gz else 'w', format=getattr(tarfile, fmt + '_FORMAT')) "
      "as t:\n"
      "  for e in sys.argv[4:]:\n"
      "    if '->' in e:\n"
      "      p, target = e.split('->', 1); i = tarfile.TarInfo(p); i.type = tarfile.SYMTYPE\n"
      "      i.linkname = target; t.addfile(i)\n"
      "    elif e.endswith('/'):\n"
      "      i = tarfile.TarInfo(e[:-1]); i.type = tarfile.DIRTYPE; i.mode = 0o755; t.addfile(i)\n"
      "    else:\n"
      "      p, c = e.split('=', 1); d = c.encode(); i = tarfile.TarInfo(p); i.size = len(d)\n"
      "      t.addfile(i, io.BytesIO(d))\n";
  std::vector<std::string> argv = {"python3",       "-c", script, dir.Sub("layer.tar"), format,
                                   gzip ? "1" : "0"};
  argv.insert(argv.end(), entries.begin(), entries.end());
  std::string out;
  EXPECT_EQ(testing::RunCommand(argv, dir.Sub("python.log"), &out), 0) << out;
  auto bytes = ReadFile(dir.Sub("layer.tar"));
  EXPECT_TRUE(bytes.ok());
  return bytes.ok() ? *bytes : "";
}

bool All(const std::string&) { return true; }

std::vector<std::string> Paths(const LayerFiles& files) {
  std::vector<std::string> out;
  for (const auto& [path, f] : files) out.push_back(path);
  return out;
}

TEST(LayersTest, KeepsWantedFilesOfAGzipLayer) {
  std::string blob =
      MakeTar({"./usr/lib/python3/dist-packages/numpy-1.24.2.dist-info/METADATA="
               "Name: numpy\nVersion: 1.24.2\n",
               "usr/lib/python3/dist-packages/numpy/__init__.py=x", "etc/os-release=d",
               "var/lib/dpkg/status=Package: a\n", "usr/bin/python3->python3.11"},
              true);
  LayerFiles files;
  ASSERT_TRUE(ApplyLayer(blob, kOciLayerGzip, IsPackageMetadata, &files).ok());
  EXPECT_EQ(Paths(files),
            (std::vector<std::string>{
                "usr/bin/python3", "usr/lib/python3/dist-packages/numpy-1.24.2.dist-info/METADATA",
                "var/lib/dpkg/status"}));
  EXPECT_EQ(files["var/lib/dpkg/status"].content, "Package: a\n");
  EXPECT_TRUE(files["usr/bin/python3"].symlink);
  EXPECT_EQ(files["usr/bin/python3"].content, "python3.11");
}

TEST(LayersTest, WhiteoutsRemoveLowerLayersFilesOnly) {
  LayerFiles files;
  ASSERT_TRUE(ApplyLayer(MakeTar({"a/x=1", "a/y=2", "b/z=3", "c/keep=4", "d=5"}, false),
                         kOciLayerTar, All, &files)
                  .ok());
  // Upper layer: the new a/y comes before the opaque marker in the tar; it must survive it.
  ASSERT_TRUE(ApplyLayer(MakeTar({"a/y=new", "a/.wh..wh..opq=", "b/.wh.z=", ".wh.c=", "d/"}, true),
                         kOciLayerGzip, All, &files)
                  .ok());
  EXPECT_EQ(Paths(files), (std::vector<std::string>{"a/y"}));
  EXPECT_EQ(files["a/y"].content, "new");
}

TEST(LayersTest, LongNamesInGnuAndPaxHeaders) {
  std::string deep(120, 'p');
  std::string path = "usr/local/lib/python3.11/site-packages/" + deep + "-1.0.dist-info/METADATA";
  for (const char* format : {"PAX", "GNU"}) {
    LayerFiles files;
    ASSERT_TRUE(ApplyLayer(MakeTar({path + "=Name: " + deep + "\n"}, true, format), kOciLayerGzip,
                           IsPackageMetadata, &files)
                    .ok())
        << format;
    EXPECT_EQ(Paths(files), std::vector<std::string>{path}) << format;
  }
}

TEST(LayersTest, CorruptLayersAreErrors) {
  std::string blob = MakeTar({"var/lib/dpkg/status=" + std::string(4000, 'x')}, true);
  LayerFiles files;
  Status cut = ApplyLayer(blob.substr(0, blob.size() / 2), kOciLayerGzip, All, &files);
  ASSERT_FALSE(cut.ok());
  EXPECT_EQ(cut.code(), "IMAGE_NOT_FOUND");
  EXPECT_NE(cut.error().message.find("cannot read an image layer: "), std::string::npos)
      << cut.error().message;
  Status zstd = ApplyLayer("x", kOciLayerZstd, All, &files);
  ASSERT_FALSE(zstd.ok());
  EXPECT_EQ(zstd.code(), "IMAGE_NOT_FOUND");
  EXPECT_NE(zstd.error().message.find("cannot read an image layer: zstd: "), std::string::npos)
      << zstd.error().message;
}

// `bytes` compressed by the zstd tool (an independent writer), in `frames` frames in a row.
std::string Zstd(const std::string& bytes, int frames = 1) {
  rsl::testing::TempDir dir("rsl-zstd");
  std::string all;
  size_t part = bytes.size() / size_t(frames) + 1;
  for (int i = 0; i < frames; ++i) {
    std::string in = dir.Sub("part" + std::to_string(i));
    EXPECT_TRUE(
        WriteFileAtomic(in, bytes.substr(std::min(bytes.size(), part * size_t(i)), part)).ok());
    std::string out;
    EXPECT_EQ(testing::RunCommand({"zstd", "-q", "-f", in, "-o", in + ".zst"}, in + ".log", &out),
              0)
        << out;
    auto z = ReadFile(in + ".zst");
    EXPECT_TRUE(z.ok());
    if (z.ok()) all += *z;
  }
  return all;
}

TEST(LayersTest, ZstdLayersAreRead) {
  std::string tar = MakeTar(
      {"var/lib/dpkg/status=Package: zlib1g\n",
       "usr/lib/python3/dist-packages/six-1.16.0.dist-info/METADATA=" + std::string(100000, 'm')},
      false);
  for (int frames : {1, 3}) {
    LayerFiles files;
    std::string blob = Zstd(tar, frames);
    ASSERT_EQ(static_cast<unsigned char>(blob[0]), 0x28);
    Status s = ApplyLayer(blob, kOciLayerZstd, All, &files);
    ASSERT_TRUE(s.ok()) << s.error().ToString();
    ASSERT_EQ(files.size(), 2u) << frames;
    EXPECT_EQ(files["var/lib/dpkg/status"].content, "Package: zlib1g\n");
    EXPECT_EQ(files["usr/lib/python3/dist-packages/six-1.16.0.dist-info/METADATA"].content.size(),
              100000u);
    // Recognised by its magic bytes under a plain tar media type too.
    LayerFiles again;
    EXPECT_TRUE(ApplyLayer(blob, kOciLayerTar, All, &again).ok());
    EXPECT_EQ(again.size(), 2u);
    // Cut short: an error, never a partial read taken as the layer.
    LayerFiles cut;
    Status short_read = ApplyLayer(blob.substr(0, blob.size() - 20), kOciLayerZstd, All, &cut);
    ASSERT_FALSE(short_read.ok()) << frames;
    EXPECT_EQ(short_read.code(), "IMAGE_NOT_FOUND");
    EXPECT_NE(short_read.error().message.find("cannot read an image layer: "), std::string::npos)
        << short_read.error().message;
  }
}

TEST(LayersTest, PackageMetadataPaths) {
  for (const char* yes : {"usr/lib/python3/dist-packages/numpy-1.24.2.dist-info/METADATA",
                          "usr/local/lib/python3.11/site-packages/six-1.16.0.egg-info/PKG-INFO",
                          "usr/lib/python3/dist-packages/six-1.16.0.egg-info",
                          "var/lib/dpkg/status", "usr/bin/python3"}) {
    EXPECT_TRUE(IsPackageMetadata(yes)) << yes;
  }
  for (const char* no : {"usr/lib/python3/dist-packages/numpy/METADATA",
                         "usr/lib/python3/dist-packages/a.dist-info/RECORD",
                         "var/lib/dpkg/status-old", "usr/share/doc/x.dist-info/METADATA"}) {
    EXPECT_FALSE(IsPackageMetadata(no)) << no;
  }
}

}  // namespace
}  // namespace rsl::image
