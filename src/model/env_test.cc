// Environment inspection and the registry against real Python environments: Debian's
// /usr/bin/python3 (compared with importlib.metadata, an independent reader), a venv made by
// the test with hand-written distributions, and an unpacked root with a dpkg status file.
#include <gtest/gtest.h>

#include <fstream>

#include "base/file.h"
#include "model/dependencies.h"
#include "model/env_inspect.h"
#include "model/env_registry.h"
#include "model/test_util.h"

namespace rsl::model {
namespace {

using testing::Capture;
using testing::TempDir;
using testing::WriteText;

using testing::AddDistInfo;

// A venv with torch 1.13.1, Scikit_Learn as an egg-info file and PyYAML as an egg-info
// directory, and no system packages.
std::string MakeVenv(const TempDir& dir) {
  std::string venv = dir / "venv";
  std::string site = testing::MakeVenv(venv, /*system_site=*/false);
  AddDistInfo(site, "torch", "1.13.1");
  AddDistInfo(site, "numpy", "1.26.0+local.7");
  WriteText(site + "/Scikit_Learn-1.3.0-py3.11.egg-info",
            "Metadata-Version: 1.2\nName: Scikit_Learn\nVersion: 1.3.0\n");
  WriteText(site + "/PyYAML.egg-info/PKG-INFO",
            "Metadata-Version: 1.1\nName: PyYAML\nVersion: 6.0.1\n");
  return venv;
}

TEST(EnvInspectTest, SystemPythonMatchesImportlibMetadata) {
  auto ins = InspectPython(testing::kSystemPython);
  ASSERT_TRUE(ins.ok()) << ins.status().ToString();
  EXPECT_FALSE(ins->python_version.empty());
  EXPECT_NE(ins->FindPython("numpy"), nullptr) << "python3-numpy must be installed";
  // importlib.metadata finds distributions in sys.path order; the first of a name wins.
  std::string expected =
      Capture(std::string(testing::kSystemPython) +
              " -E -s -c '"
              "import importlib.metadata as m, re\n"
              "seen = {}\n"
              "for d in m.distributions():\n"
              "    n = re.sub(r\"[-_.]+\", \"-\", d.metadata[\"Name\"]).lower()\n"
              "    seen.setdefault(n, d.version)\n"
              "for n in sorted(seen): print(n, seen[n])\n'");
  std::string ours;
  for (const auto& p : ins->packages) ours += p.normalized + " " + p.version + "\n";
  EXPECT_EQ(ours, expected);
  EXPECT_EQ(ins->digest.substr(0, 7), "sha256:");
  EXPECT_EQ(ins->digest, PackageSetDigest(ins->packages));
}

TEST(EnvInspectTest, VenvWithDistInfoAndEggInfo) {
  TempDir dir;
  std::string venv = MakeVenv(dir);
  auto ins = InspectPython(venv + "/bin/python");
  ASSERT_TRUE(ins.ok()) << ins.status().ToString();
  ASSERT_NE(ins->FindPython("torch"), nullptr);
  EXPECT_EQ(ins->FindPython("torch")->version, "1.13.1");
  ASSERT_NE(ins->FindPython("scikit-learn"), nullptr);
  EXPECT_EQ(ins->FindPython("scikit-learn")->name, "Scikit_Learn");
  EXPECT_EQ(ins->FindPython("numpy")->version, "1.26.0+local.7");
  EXPECT_EQ(ins->FindPython("pyyaml")->version, "6.0.1");
  EXPECT_EQ(ins->packages.size(), 4u);  // a venv without system site packages
  auto again = InspectPython(venv + "/bin/python");
  ASSERT_TRUE(again.ok());
  EXPECT_EQ(again->digest, ins->digest);
  AddDistInfo(ins->search_path.back(), "xformers", "0.0.22");
  auto changed = InspectPython(venv + "/bin/python");
  ASSERT_TRUE(changed.ok());
  EXPECT_NE(changed->digest, ins->digest);
}

TEST(EnvInspectTest, RootWithDpkgStatusAndPythonDirs) {
  TempDir dir;
  std::string root = dir / "rootfs";
  WriteText(root + "/var/lib/dpkg/status",
            "Package: python3-numpy\nStatus: install ok installed\nVersion: 1:1.24.2-1\n"
            "Description: numbers\n multi-line continuation\n\n"
            "Package: removed-pkg\nStatus: deinstall ok config-files\nVersion: 1.0\n\n"
            "Package: libc6\nStatus: install ok installed\nArchitecture: amd64\nVersion: 2.36-9\n");
  AddDistInfo(root + "/usr/local/lib/python3.11/dist-packages", "torch", "2.1.2+cu118");
  AddDistInfo(root + "/usr/lib/python3/dist-packages", "torch", "1.13.1");  // shadowed
  AddDistInfo(root + "/usr/lib/python3/dist-packages", "numpy", "1.24.2");
  WriteText(root + "/usr/bin/python3", "");
  auto ins = InspectRoot(root + "/");
  ASSERT_TRUE(ins.ok()) << ins.status().ToString();
  EXPECT_EQ(ins->interpreter, root + "/usr/bin/python3");
  EXPECT_EQ(ins->FindPython("torch")->version, "2.1.2+cu118");
  EXPECT_EQ(ins->FindPython("numpy")->version, "1.24.2");
  ASSERT_NE(ins->FindDpkg("libc6"), nullptr);
  EXPECT_EQ(ins->FindDpkg("python3-numpy")->version, "1:1.24.2-1");
  EXPECT_EQ(ins->FindDpkg("removed-pkg"), nullptr);
  EXPECT_EQ(ins->CountKind("dpkg"), 2u);
  EXPECT_EQ(ins->CountKind("python"), 2u);
  // Pins as docs/model.md writes them: a release prefix, a Debian version with its epoch and
  // revision, and a Debian prefix.
  std::vector<spec::Dependency> pins = {{"numpy", "1.24.*"},
                                        {"python3-numpy", "1:1.24.2-1"},
                                        {"libc6", "2.36.*"},
                                        {"torch", "2.1.*"}};
  EXPECT_EQ(DependencyDifferences(pins, *ins), std::vector<std::string>{});
  pins = {{"numpy", "1.25.*"}, {"python3-numpy", "1.24.2-1"}, {"libc6", "2.3.*"}};  // 2.3 != 2.36
  EXPECT_EQ(
      DependencyDifferences(pins, *ins),
      (std::vector<std::string>{"numpy: declared 1.25.*, environment has 1.24.2",
                                "python3-numpy: declared 1.24.2-1, environment has 1:1.24.2-1",
                                "libc6: declared 2.3.*, environment has 2.36-9"}));
  auto missing = InspectRoot(dir / "nope");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().code, "IO_ERROR");
  EXPECT_EQ(missing.error().message, "root " + (dir / "nope") + " is not a directory");
}

TEST(EnvInspectTest, BadInterpretersFailClearlyAndInTime) {
  TempDir dir;
  auto missing = InspectPython(dir / "no-python");
  ASSERT_FALSE(missing.ok());
  EXPECT_EQ(missing.error().message,
            "cannot run " + (dir / "no-python") + ": No such file or directory");
  auto not_python = InspectPython("/bin/true");
  ASSERT_FALSE(not_python.ok());
  EXPECT_EQ(not_python.error().message, "/bin/true is not a working Python interpreter (exit 0): ");
  std::string slow = dir / "slow-python";
  WriteText(slow, "#!/bin/sh\nexec sleep 30\n");
  ASSERT_EQ(chmod(slow.c_str(), 0755), 0);
  auto timed_out = InspectPython(slow, 300);
  ASSERT_FALSE(timed_out.ok());
  EXPECT_EQ(timed_out.error().message, slow + " timed out after 300 ms");
}

TEST(EnvRegistryTest, RegisterGetListReplaceRemove) {
  TempDir dir;
  std::string venv = MakeVenv(dir);
  auto reg = EnvRegistry::Open(dir / "state");
  ASSERT_TRUE(reg.ok()) << reg.status().ToString();
  auto env = (*reg)->Register(
      {"volc/train-pytorch:v2.1", venv + "/bin/python", "", "python -u 'train main.py'"});
  ASSERT_TRUE(env.ok()) << env.status().ToString();
  EXPECT_EQ(env->entrypoint, (std::vector<std::string>{"python", "-u", "train main.py"}));
  ASSERT_TRUE((*reg)->Register({"volc/sys:v1", testing::kSystemPython, "", ""}).ok());

  // A second connection (another process, in practice) sees the same registry.
  auto reg2 = EnvRegistry::Open(dir / "state");
  ASSERT_TRUE(reg2.ok());
  auto got = (*reg2)->Get("volc/train-pytorch:v2.1");
  ASSERT_TRUE(got.ok()) << got.status().ToString();
  EXPECT_EQ(got->kind, "python");
  EXPECT_EQ(got->inspection.digest, env->inspection.digest);
  EXPECT_EQ(got->inspection.FindPython("torch")->version, "1.13.1");
  EXPECT_EQ(got->entrypoint, env->entrypoint);
  auto list = (*reg2)->List();
  ASSERT_TRUE(list.ok());
  ASSERT_EQ(list->size(), 2u);
  EXPECT_EQ((*list)[0].image, "volc/sys:v1");

  auto typo = (*reg2)->Get("volc/train-pytorch:v2.2");
  ASSERT_FALSE(typo.ok());
  EXPECT_EQ(typo.error().ToString(),
            "IMAGE_NOT_FOUND: image \"volc/train-pytorch:v2.2\" is not registered (did you mean "
            "\"volc/train-pytorch:v2.1\"?)");

  ASSERT_TRUE((*reg2)->Register({"volc/train-pytorch:v2.1", testing::kSystemPython, "", ""}).ok());
  EXPECT_EQ((*reg)->Get("volc/train-pytorch:v2.1")->python, testing::kSystemPython);
  EXPECT_EQ((*reg)->List()->size(), 2u);
  ASSERT_TRUE((*reg)->Remove("volc/sys:v1").ok());
  EXPECT_EQ((*reg)->Remove("volc/sys:v1").code(), "IMAGE_NOT_FOUND");
}

TEST(EnvRegistryTest, RejectsBadRequests) {
  TempDir dir;
  auto reg = EnvRegistry::Open(dir / "state");
  ASSERT_TRUE(reg.ok());
  EXPECT_EQ((*reg)->Register({"bad image", testing::kSystemPython, "", ""}).error().ToString(),
            "INVALID_ARGUMENT: image name \"bad image\" contains whitespace, a quote or a control "
            "character (e.g. volc/train-pytorch:v2.1)");
  EXPECT_EQ((*reg)->Register({"a:b", "", "", ""}).error().message,
            "give exactly one of --python PATH and --root DIR");
  EXPECT_EQ((*reg)->Register({"a:b", testing::kSystemPython, dir.path(), ""}).error().message,
            "give exactly one of --python PATH and --root DIR");
  EXPECT_EQ((*reg)->Register({"a:b", testing::kSystemPython, "", "python 'oops"}).error().message,
            "unterminated ' in command line");
  EXPECT_EQ((*reg)->List()->size(), 0u);
}

TEST(EnvRegistryTest, SplitsCommandLinesLikeAShell) {
  auto words = SplitCommandLine(R"cmd(  python3 -c "print(\"hi\")"  'a b'c d\ e "" )cmd");
  ASSERT_TRUE(words.ok());
  EXPECT_EQ(*words,
            (std::vector<std::string>{"python3", "-c", "print(\"hi\")", "a bc", "d e", ""}));
}

}  // namespace
}  // namespace rsl::model
