#include "rdmak8s/discovery/verbs.h"

#include <gmock/gmock.h>
#include <gtest/gtest.h>

namespace rdmak8s {
namespace {

// No RDMA hardware on build machines: only the "not listed" path is testable for real; the
// enrichment itself is covered by discovery_test with a fake VerbsQuery.
TEST(IbverbsQueryTest, DeviceLibibverbsDoesNotListIsNotFound) {
  std::unique_ptr<VerbsQuery> verbs = NewIbverbsQuery();
  StatusOr<VerbsAttrs> r = verbs->QueryDevice("rdmak8s_no_such_dev0");
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().code(), StatusCode::kNotFound) << r.status().ToString();
  EXPECT_THAT(r.status().message(), ::testing::HasSubstr("rdmak8s_no_such_dev0"));
}

}  // namespace
}  // namespace rdmak8s
