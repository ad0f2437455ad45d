// A DeviceTracker over the real SysfsDiscovery reading a copy of a committed sysfs fixture in a
// temporary directory, changed in place as the kernel changes /sys: the base of the tracker's
// tests and of its events' (tracker_events_test.cc).
#pragma once

#include <filesystem>
#include <fstream>
#include <memory>
#include <string>

#include <gtest/gtest.h>

#include "node/device_tracker.h"
#include "support/temp_dir.h"
#include "support/test_dirs.h"

namespace rdmak8s::node {

class TrackerFixture : public ::testing::Test {
 protected:
  // Copies tests/fixtures/sysfs/<name> and puts a tracker (not yet scanned) over it.
  void UseFixture(const std::string& name) {
    ASSERT_FALSE(tmp_.path().empty());
    std::filesystem::copy(std::string(RDMAK8S_FIXTURES_DIR) + "/sysfs/" + name, sys(""),
                          std::filesystem::copy_options::recursive |
                              std::filesystem::copy_options::copy_symlinks);
    discovery_ = std::make_unique<SysfsDiscovery>(DiscoveryOptions{sys(""), nullptr});
    tracker_ = std::make_unique<DeviceTracker>(discovery_.get(), sys(""));
  }
  std::string sys(const std::string& rel) const { return tmp_.path() + "/sys/" + rel; }
  void Write(const std::string& rel, const std::string& text) { std::ofstream(sys(rel)) << text; }
  const TrackedDevice& At(const std::string& dev) { return tracker_->devices().at(dev); }

  testing::TempDir tmp_;
  std::unique_ptr<SysfsDiscovery> discovery_;
  std::unique_ptr<DeviceTracker> tracker_;
};

}  // namespace rdmak8s::node
