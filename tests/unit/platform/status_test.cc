#include "cairn/platform/status.h"

#include <memory>
#include <string>

#include <gtest/gtest.h>

namespace cairn {
namespace {

TEST(StatusTest, DefaultIsOkWithEmptyMessage) {
  Status status;
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.code(), StatusCode::kOk);
  EXPECT_EQ(status.message(), "");
  EXPECT_EQ(status.ToString(), "OK");
  EXPECT_TRUE(Status::Ok().ok());
}

TEST(StatusTest, OkCodeWithMessageIsStillOk) {
  Status status(StatusCode::kOk, "ignored");
  EXPECT_TRUE(status.ok());
  EXPECT_EQ(status.message(), "");
}

TEST(StatusTest, EachFactoryCarriesItsCodeAndMessage) {
  struct Case {
    Status status;
    StatusCode code;
    const char* name;
  };
  const Case cases[] = {
      {Status::InvalidArgument("m"), StatusCode::kInvalidArgument, "InvalidArgument"},
      {Status::NotFound("m"), StatusCode::kNotFound, "NotFound"},
      {Status::AlreadyExists("m"), StatusCode::kAlreadyExists, "AlreadyExists"},
      {Status::Corruption("m"), StatusCode::kCorruption, "Corruption"},
      {Status::IOError("m"), StatusCode::kIOError, "IOError"},
      {Status::Busy("m"), StatusCode::kBusy, "Busy"},
      {Status::ResourceExhausted("m"), StatusCode::kResourceExhausted, "ResourceExhausted"},
      {Status::FailedPrecondition("m"), StatusCode::kFailedPrecondition, "FailedPrecondition"},
      {Status::TimedOut("m"), StatusCode::kTimedOut, "TimedOut"},
      {Status::Unavailable("m"), StatusCode::kUnavailable, "Unavailable"},
      {Status::PermissionDenied("m"), StatusCode::kPermissionDenied, "PermissionDenied"},
      {Status::Internal("m"), StatusCode::kInternal, "Internal"},
  };
  for (const Case& c : cases) {
    EXPECT_FALSE(c.status.ok()) << c.name;
    EXPECT_EQ(c.status.code(), c.code) << c.name;
    EXPECT_TRUE(c.status.Is(c.code)) << c.name;
    EXPECT_EQ(c.status.message(), "m") << c.name;
    EXPECT_EQ(StatusCodeName(c.code), c.name);
    EXPECT_EQ(c.status.ToString(), std::string(c.name) + ": m");
  }
  EXPECT_EQ(StatusCodeName(StatusCode::kOk), "OK");
}

TEST(StatusTest, ToStringOmitsSeparatorForEmptyMessage) { EXPECT_EQ(Status::Busy("").ToString(), "Busy"); }

TEST(StatusTest, WithContextPrefixesMessageAndKeepsCode) {
  Status status = Status::Corruption("bad CRC").WithContext("log/000003.log offset 4096");
  EXPECT_TRUE(status.Is(StatusCode::kCorruption));
  EXPECT_EQ(status.message(), "log/000003.log offset 4096: bad CRC");
  EXPECT_EQ(status.ToString(), "Corruption: log/000003.log offset 4096: bad CRC");
  EXPECT_TRUE(Status::Ok().WithContext("anything").ok());
  EXPECT_EQ(Status::IOError("").WithContext("ctx").message(), "ctx");
}

TEST(StatusTest, CopiesShareTheImmutableError) {
  Status original = Status::NotFound("table t");
  Status copy = original;
  Status derived = copy.WithContext("query");
  EXPECT_EQ(original.message(), "table t");
  EXPECT_EQ(copy.message(), "table t");
  EXPECT_EQ(derived.message(), "query: table t");
}

TEST(ResultTest, HoldsValue) {
  Result<int> result(42);
  ASSERT_TRUE(result.ok());
  EXPECT_TRUE(result.status().ok());
  EXPECT_EQ(result.value(), 42);
  EXPECT_EQ(*result, 42);
}

TEST(ResultTest, HoldsError) {
  Result<std::string> result(Status::TimedOut("deadline"));
  EXPECT_FALSE(result.ok());
  EXPECT_TRUE(result.status().Is(StatusCode::kTimedOut));
  EXPECT_EQ(result.status().message(), "deadline");
}

TEST(ResultTest, MovesOutMoveOnlyValue) {
  Result<std::unique_ptr<int>> result(std::make_unique<int>(7));
  ASSERT_TRUE(result.ok());
  EXPECT_EQ(**result, 7);
  std::unique_ptr<int> taken = std::move(result).value();
  EXPECT_EQ(*taken, 7);
}

TEST(ResultTest, ArrowReachesMembers) {
  Result<std::string> result(std::string("abc"));
  EXPECT_EQ(result->size(), 3u);
}

Status FailIfNegative(int x) { return x < 0 ? Status::InvalidArgument("negative") : Status::Ok(); }

Status ChainReturnIfError(int x, int* reached) {
  CAIRN_RETURN_IF_ERROR(FailIfNegative(x));
  *reached = 1;
  return Status::Ok();
}

Result<int> Half(int x) {
  if (x % 2 != 0) return Status::InvalidArgument("odd");
  return x / 2;
}

Result<int> Quarter(int x) {
  CAIRN_ASSIGN_OR_RETURN(int half, Half(x));
  CAIRN_ASSIGN_OR_RETURN(int quarter, Half(half));
  return quarter;
}

TEST(StatusMacrosTest, ReturnIfErrorStopsAtFirstError) {
  int reached = 0;
  EXPECT_TRUE(ChainReturnIfError(-1, &reached).Is(StatusCode::kInvalidArgument));
  EXPECT_EQ(reached, 0);
  EXPECT_TRUE(ChainReturnIfError(1, &reached).ok());
  EXPECT_EQ(reached, 1);
}

TEST(StatusMacrosTest, AssignOrReturnPropagatesOrAssigns) {
  Result<int> ok = Quarter(12);
  ASSERT_TRUE(ok.ok());
  EXPECT_EQ(*ok, 3);
  Result<int> first_fails = Quarter(3);
  EXPECT_EQ(first_fails.status().message(), "odd");
  Result<int> second_fails = Quarter(6);
  EXPECT_EQ(second_fails.status().message(), "odd");
}

}  // namespace
}  // namespace cairn
