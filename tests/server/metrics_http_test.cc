// MetricsHttpServer: GET /metrics over real loopback sockets.
#include "server/metrics_http.h"

#include <memory>
#include <string>

#include "absl/status/status.h"
#include "gtest/gtest.h"
#include "tests/server/metrics_test_support.h"

namespace matrixd::server {
namespace {

using testing::HttpGet;
using testing::SampleValue;

std::unique_ptr<MetricsHttpServer> StartOnFreePort(Metrics& metrics) {
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> server =
      MetricsHttpServer::Start("127.0.0.1:0", &metrics);
  EXPECT_TRUE(server.ok()) << server.status();
  return server.ok() ? *std::move(server) : nullptr;
}

TEST(MetricsHttp, GetMetricsServesTheTextFormat) {
  Metrics metrics("9.9.9", "cpu");
  metrics.RecordJob(kOpMultiply, absl::StatusCode::kOk);
  std::unique_ptr<MetricsHttpServer> server = StartOnFreePort(metrics);
  ASSERT_NE(server, nullptr);
  EXPECT_GT(server->port(), 0);
  EXPECT_EQ(server->address(), absl::StrCat("127.0.0.1:", server->port()));

  absl::StatusOr<testing::HttpResponse> response = HttpGet(server->port(), "/metrics");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 200);
  EXPECT_NE(response->headers.find("text/plain; version=0.0.4"), std::string::npos)
      << response->headers;
  EXPECT_EQ(
      SampleValue(response->body, "matrixd_build_info", {{"version", "9.9.9"}, {"backend", "cpu"}}),
      1.0);
  EXPECT_EQ(
      SampleValue(response->body, "matrixd_jobs_total", {{"op", "multiply"}, {"status", "OK"}}),
      1.0);
}

TEST(MetricsHttp, EachScrapeSeesTheLatestValues) {
  Metrics metrics("0", "cpu");
  std::unique_ptr<MetricsHttpServer> server = StartOnFreePort(metrics);
  ASSERT_NE(server, nullptr);
  for (int depth : {5, 0, 12}) {
    metrics.RecordQueueDepth(depth);
    absl::StatusOr<testing::HttpResponse> response = HttpGet(server->port(), "/metrics");
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(SampleValue(response->body, "matrixd_queue_depth", {}), depth);
  }
}

TEST(MetricsHttp, OtherPathsAreNotFound) {
  Metrics metrics("0", "cpu");
  std::unique_ptr<MetricsHttpServer> server = StartOnFreePort(metrics);
  ASSERT_NE(server, nullptr);
  absl::StatusOr<testing::HttpResponse> response = HttpGet(server->port(), "/metricsx");
  ASSERT_TRUE(response.ok()) << response.status();
  EXPECT_EQ(response->status, 404);
}

TEST(MetricsHttp, BusyPortIsUnavailable) {
  Metrics metrics("0", "cpu");
  std::unique_ptr<MetricsHttpServer> first = StartOnFreePort(metrics);
  ASSERT_NE(first, nullptr);
  absl::StatusOr<std::unique_ptr<MetricsHttpServer>> second =
      MetricsHttpServer::Start(first->address(), &metrics);
  EXPECT_EQ(second.status().code(), absl::StatusCode::kUnavailable) << second.status();
}

TEST(MetricsHttp, StopsListeningWhenDestroyed) {
  Metrics metrics("0", "cpu");
  std::unique_ptr<MetricsHttpServer> server = StartOnFreePort(metrics);
  ASSERT_NE(server, nullptr);
  const int port = server->port();
  ASSERT_TRUE(HttpGet(port, "/metrics").ok());
  server.reset();
  EXPECT_EQ(HttpGet(port, "/metrics").status().code(), absl::StatusCode::kUnavailable);
}

TEST(MetricsHttp, MalformedAddressesAreInvalid) {
  Metrics metrics("0", "cpu");
  for (const char* address :
       {"127.0.0.1", "127.0.0.1:", "127.0.0.1:x", "127.0.0.1:65536", "127.0.0.1:-1", "::1:9464"}) {
    EXPECT_EQ(MetricsHttpServer::Start(address, &metrics).status().code(),
              absl::StatusCode::kInvalidArgument)
        << address;
  }
  EXPECT_EQ(MetricsHttpServer::Start("127.0.0.1:0", nullptr).status().code(),
            absl::StatusCode::kInvalidArgument);
}

TEST(MetricsHttp, SplitHostPortHandlesEmptyHostsAndIpv6Brackets) {
  using HostPort = std::pair<std::string, int>;
  EXPECT_EQ(*SplitHostPort("0.0.0.0:9464"), HostPort("0.0.0.0", 9464));
  EXPECT_EQ(*SplitHostPort(":9464"), HostPort("0.0.0.0", 9464));
  EXPECT_EQ(*SplitHostPort("[::1]:0"), HostPort("::1", 0));
  EXPECT_EQ(*SplitHostPort("localhost:65535"), HostPort("localhost", 65535));
}

}  // namespace
}  // namespace matrixd::server
