#include "rdmak8s/base/status.h"

#include <cerrno>

#include <gtest/gtest.h>

namespace rdmak8s {
namespace {

StatusOr<int> Half(int x) {
  if (x % 2 != 0) return InvalidArgumentError("odd value " + std::to_string(x));
  return x / 2;
}

StatusOr<int> Quarter(int x) {
  RDMAK8S_ASSIGN_OR_RETURN(int h, Half(x));
  RDMAK8S_ASSIGN_OR_RETURN(int q, Half(h));
  return q;
}

Status Check(int x) {
  RDMAK8S_RETURN_IF_ERROR_CTX(Half(x).status(), "check " + std::to_string(x));
  return Status::Ok();
}

TEST(StatusTest, ErrnoErrorMapsNotFoundSeparatelyFromFailure) {
  Status missing = ErrnoError(ENOENT, "read /sys/x");
  EXPECT_EQ(missing.code(), StatusCode::kNotFound);
  EXPECT_EQ(missing.message(), "read /sys/x: No such file or directory");
  EXPECT_EQ(missing.sys_errno(), ENOENT);
  EXPECT_EQ(ErrnoError(EACCES, "read").code(), StatusCode::kPermissionDenied);
  EXPECT_EQ(ErrnoError(EOPNOTSUPP, "set").code(), StatusCode::kUnimplemented);
  EXPECT_EQ(ErrnoError(EIO, "read").code(), StatusCode::kInternal);
}

TEST(StatusTest, AssignOrReturnPropagatesFirstError) {
  EXPECT_EQ(*Quarter(8), 2);
  StatusOr<int> r = Quarter(6);
  ASSERT_FALSE(r.ok());
  EXPECT_EQ(r.status().message(), "odd value 3");
}

TEST(StatusTest, ContextIsPrependedOnErrorOnly) {
  EXPECT_TRUE(Check(4).ok());
  Status s = Check(5);
  EXPECT_EQ(s.ToString(), "INVALID_ARGUMENT: check 5: odd value 5");
}

}  // namespace
}  // namespace rdmak8s
