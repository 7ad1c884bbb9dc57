// GPU utilization of replicas, from nvidia-smi output recorded on real machines (an 8-GPU
// A100 host and a host whose GPU does not report utilization). Not run against a real GPU
// here: these tests only parse recorded text.
#include "serve/gpu_utilization.h"

#include <gtest/gtest.h>

namespace rsl::serve {
namespace {

// `nvidia-smi --query-gpu=index,utilization.gpu --format=csv,noheader,nounits` on 8 A100s.
constexpr char kEightGpus[] =
    "0, 93\n"
    "1, 87\n"
    "2, 0\n"
    "3, 0\n"
    "4, 45\n"
    "5, 100\n"
    "6, 12\n"
    "7, 3\n";

TEST(GpuUtilizationTest, TheQueryIsNvidiaSmisCsvWithoutHeaderOrUnits) {
  EXPECT_EQ(GpuUtilizationCommand("/usr/bin/nvidia-smi"),
            (std::vector<std::string>{"/usr/bin/nvidia-smi", "--query-gpu=index,utilization.gpu",
                                      "--format=csv,noheader,nounits"}));
}

TEST(GpuUtilizationTest, ParsesEveryDevice) {
  auto by = ParseGpuUtilization(kEightGpus);
  ASSERT_TRUE(by.ok()) << by.error().ToString();
  ASSERT_EQ(by->size(), 8u);
  EXPECT_DOUBLE_EQ(by->at(0), 0.93);
  EXPECT_DOUBLE_EQ(by->at(5), 1.0);
  EXPECT_DOUBLE_EQ(by->at(7), 0.03);
}

TEST(GpuUtilizationTest, ADeviceWithoutANumberIsLeftOut) {
  auto by = ParseGpuUtilization("0, [N/A]\n1, [Not Supported]\n2, 40\n");
  ASSERT_TRUE(by.ok()) << by.error().ToString();
  EXPECT_EQ(by->size(), 1u);
  EXPECT_DOUBLE_EQ(by->at(2), 0.4);
}

TEST(GpuUtilizationTest, AnythingElseIsAnErrorNamingTheLine) {
  for (const char* bad : {"NVIDIA-SMI has failed because it couldn't communicate with the driver",
                          "0, 93, 1\n", "x, 93\n", "0, lots\n", "-1, 5\n"}) {
    auto by = ParseGpuUtilization(bad);
    ASSERT_FALSE(by.ok()) << bad;
    EXPECT_EQ(by.error().code, "INTERNAL") << bad;
    EXPECT_FALSE(by.error().value.empty()) << bad;
  }
  auto empty = ParseGpuUtilization("");
  ASSERT_TRUE(empty.ok());
  EXPECT_TRUE(empty->empty());
}

TEST(GpuUtilizationTest, AReplicaIsTheAverageOfItsOwnDevices) {
  auto by = ParseGpuUtilization(kEightGpus);
  ASSERT_TRUE(by.ok());
  EXPECT_EQ(VisibleDevices("0,1"), (std::vector<int>{0, 1}));
  EXPECT_DOUBLE_EQ(*DevicesUtilization(*by, VisibleDevices("0,1")), 0.90);
  EXPECT_DOUBLE_EQ(*DevicesUtilization(*by, VisibleDevices("4")), 0.45);
  EXPECT_DOUBLE_EQ(*DevicesUtilization(*by, VisibleDevices("2, 3")), 0.0);
  // Devices nvidia-smi did not report do not count; none at all: no GPU figure.
  EXPECT_DOUBLE_EQ(*DevicesUtilization(*by, {5, 9}), 1.0);
  EXPECT_FALSE(DevicesUtilization(*by, {9}).has_value());
  EXPECT_FALSE(DevicesUtilization(*by, VisibleDevices("")).has_value());
  EXPECT_TRUE(VisibleDevices("GPU-8f6c1d2e-aaaa-bbbb-cccc-000000000000").empty());
}

}  // namespace
}  // namespace rsl::serve
