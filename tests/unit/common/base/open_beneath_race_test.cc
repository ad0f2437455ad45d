// OpenBeneath while the system renames files: openat2 with RESOLVE_BENEATH answers EAGAIN for a
// ".." met during any concurrent rename (openat2(2)); sysfs links are "../..". Found by
// tests/reliability/cni_crash_test.cc running beside the concurrency test (a CNI knob read failed
// with "Resource temporarily unavailable").
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <filesystem>
#include <fstream>
#include <thread>

#include <gtest/gtest.h>

#include "rdmak8s/base/file_util.h"
#include "support/temp_dir.h"

namespace rdmak8s {
namespace {

TEST(OpenBeneathRaceTest, OpensThroughDotDotLinksWhileAnotherThreadRenames) {
  testing::TempDir tmp;
  const std::string root = tmp.path() + "/sys";
  std::filesystem::create_directories(root + "/devices/virtual/infiniband/rxe0");
  std::filesystem::create_directories(root + "/class/infiniband");
  std::ofstream(root + "/devices/virtual/infiniband/rxe0/node_type") << "1: CA\n";
  std::filesystem::create_symlink("../../devices/virtual/infiniband/rxe0", root + "/class/infiniband/rxe0");
  std::atomic<bool> stop{false};
  std::thread renamer([&] {  // what a busy node does all the time: atomic writes elsewhere
    const std::string a = tmp.path() + "/a", b = tmp.path() + "/b";
    std::ofstream(a) << "x";
    while (!stop) {
      (void)rename(a.c_str(), b.c_str());
      (void)rename(b.c_str(), a.c_str());
    }
  });
  int failures = 0;
  std::string first;
  for (int i = 0; i < 20000; ++i) {
    auto fd = OpenBeneath(root, "class/infiniband/rxe0/node_type", O_RDONLY);
    if (fd.ok()) {
      close(*fd);
    } else if (failures++ == 0) {
      first = fd.status().ToString();
    }
  }
  stop = true;
  renamer.join();
  EXPECT_EQ(failures, 0) << first;
}

}  // namespace
}  // namespace rdmak8s
