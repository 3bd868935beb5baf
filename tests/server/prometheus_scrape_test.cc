// End to end with a real Prometheus (Debian package `prometheus`): matrixd (CPU backend) serves
// /metrics on loopback, runs a known set of jobs, Prometheus scrapes it every second, and the
// series are read back through Prometheus's HTTP API (/api/v1/query) and checked against the jobs.
// Skips when /usr/bin/prometheus is missing.
#include <fcntl.h>
#include <signal.h>
#include <spawn.h>
#include <stdlib.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cmath>
#include <filesystem>
#include <fstream>
#include <memory>
#include <optional>
#include <regex>
#include <string>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "client/client.h"
#include "core/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/server/metrics_test_support.h"
#include "tests/server/test_server.h"

extern char** environ;

namespace matrixd::server::testing {
namespace {

constexpr char kPrometheus[] = "/usr/bin/prometheus";
// Bounded waits. Prometheus's service discovery hands over its first targets after 5 s, then a
// scrape comes every second: the test takes about 7 s.
constexpr absl::Duration kScrapeWait = absl::Seconds(30);

// A port that was free a moment ago (Prometheus takes its listen address as a flag).
int FreeLoopbackPort() {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in address{};
  address.sin_family = AF_INET;
  address.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  socklen_t length = sizeof(address);
  int port = 0;
  if (bind(fd, reinterpret_cast<sockaddr*>(&address), sizeof(address)) == 0 &&
      getsockname(fd, reinterpret_cast<sockaddr*>(&address), &length) == 0) {
    port = ntohs(address.sin_port);
  }
  close(fd);
  return port;
}

std::string UrlEncode(const std::string& text) {
  std::string encoded;
  for (unsigned char c : text) {
    if (std::isalnum(c) || c == '-' || c == '_' || c == '.' || c == '~') {
      encoded.push_back(static_cast<char>(c));
    } else {
      encoded += absl::StrCat("%", absl::Hex(c, absl::kZeroPad2));
    }
  }
  return encoded;
}

// A Prometheus server on loopback with its own config and storage in a temporary directory;
// killed and cleaned up when destroyed.
class PrometheusProcess {
 public:
  static absl::StatusOr<std::unique_ptr<PrometheusProcess>> Start(int matrixd_metrics_port) {
    std::string pattern = std::filesystem::temp_directory_path() / "matrixd_prometheus_XXXXXX";
    if (mkdtemp(pattern.data()) == nullptr) return absl::InternalError("mkdtemp failed");
    std::unique_ptr<PrometheusProcess> process(new PrometheusProcess(pattern));
    process->port_ = FreeLoopbackPort();
    const std::string config = process->dir_ + "/prometheus.yml";
    std::ofstream(config) << "global:\n"
                          << "  scrape_interval: 1s\n"
                          << "  scrape_timeout: 1s\n"
                          << "  evaluation_interval: 1s\n"
                          << "scrape_configs:\n"
                          << "  - job_name: matrixd\n"
                          << "    static_configs:\n"
                          << "      - targets: ['127.0.0.1:" << matrixd_metrics_port << "']\n";
    std::vector<std::string> args = {
        kPrometheus,
        "--config.file=" + config,
        "--storage.tsdb.path=" + process->dir_ + "/data",
        absl::StrCat("--web.listen-address=127.0.0.1:", process->port_),
        "--log.level=warn",
    };
    std::vector<char*> argv;
    for (std::string& arg : args) argv.push_back(arg.data());
    argv.push_back(nullptr);
    posix_spawn_file_actions_t actions;
    posix_spawn_file_actions_init(&actions);
    const std::string log = process->log_path();
    posix_spawn_file_actions_addopen(&actions, STDOUT_FILENO, log.c_str(),
                                     O_WRONLY | O_CREAT | O_TRUNC, 0644);
    posix_spawn_file_actions_adddup2(&actions, STDOUT_FILENO, STDERR_FILENO);
    const int spawned =
        posix_spawn(&process->pid_, kPrometheus, &actions, nullptr, argv.data(), environ);
    posix_spawn_file_actions_destroy(&actions);
    if (spawned != 0) {
      process->pid_ = -1;
      return absl::InternalError(absl::StrCat("posix_spawn(", kPrometheus, ") failed"));
    }
    return process;
  }

  ~PrometheusProcess() {
    if (pid_ > 0) {
      // Its storage is thrown away: no need for a graceful shutdown.
      kill(pid_, SIGKILL);
      const absl::Time until = absl::Now() + absl::Seconds(5);
      while (waitpid(pid_, nullptr, WNOHANG) == 0) {
        if (absl::Now() > until) {
          kill(pid_, SIGKILL);
          waitpid(pid_, nullptr, 0);
          break;
        }
        absl::SleepFor(absl::Milliseconds(20));
      }
    }
    std::error_code ignored;
    std::filesystem::remove_all(dir_, ignored);
  }

  // The first value of an instant query's result; nullopt while there is none (or on errors).
  std::optional<double> Query(const std::string& promql) const {
    absl::StatusOr<HttpResponse> response =
        HttpGet(port_, "/api/v1/query?query=" + UrlEncode(promql));
    if (!response.ok() || response->status != 200) return std::nullopt;
    static const std::regex kValue(R"re("value":\[[0-9.e+]+,"([^"]+)"\])re");
    std::smatch match;
    if (!std::regex_search(response->body, match, kValue)) return std::nullopt;
    if (match[1] == "NaN") return std::nan("");
    return std::stod(match[1]);
  }

  // Polls `promql` until it equals `want` (exactly: the values are counts of small integers or
  // sums of exact binary fractions) or kScrapeWait passes; returns the last value seen.
  std::optional<double> AwaitValue(const std::string& promql, double want) const {
    const absl::Time until = absl::Now() + kScrapeWait;
    std::optional<double> value;
    while (absl::Now() < until) {
      value = Query(promql);
      if (value.has_value() && *value == want) break;
      if (!Running()) break;
      absl::SleepFor(absl::Milliseconds(200));
    }
    return value;
  }

  bool Running() const { return pid_ > 0 && waitpid(pid_, nullptr, WNOHANG) == 0; }
  std::string Log() const {
    std::ifstream in(log_path());
    return std::string(std::istreambuf_iterator<char>(in), {});
  }

 private:
  explicit PrometheusProcess(std::string dir) : dir_(std::move(dir)) {}
  std::string log_path() const { return dir_ + "/prometheus.log"; }

  std::string dir_;
  pid_t pid_ = -1;
  int port_ = 0;
};

class PrometheusScrapeTest : public ::testing::Test {
 protected:
  void SetUp() override {
    if (access(kPrometheus, X_OK) != 0) {
      GTEST_SKIP() << kPrometheus
                   << " is missing: install the Debian package `prometheus` to run this test";
    }
    ServerOptions options;
    options.listen_address = "127.0.0.1:0";
    options.limits = TestLimits();
    options.metrics_address = "127.0.0.1:0";
    absl::StatusOr<std::unique_ptr<MatrixServer>> server =
        MatrixServer::Start(MakeCpuBackend({.threads = 2}), options);
    ASSERT_TRUE(server.ok()) << server.status();
    server_ = *std::move(server);
    ASSERT_NE(server_->metrics_http(), nullptr);
    client_ = std::make_unique<Client>(server_->address(), ClientOptions{});
  }

  std::unique_ptr<MatrixServer> server_;
  std::unique_ptr<Client> client_;
};

TEST_F(PrometheusScrapeTest, PrometheusSeesEveryFamilyWithTheValuesOfTheJobsRun) {
  // The jobs, before Prometheus starts: its first scrape already holds all of them.
  for (int i = 0; i < 3; ++i) {
    v1::DeterminantRequest request;
    *request.mutable_matrix() = MakeMatrix<double>(2, 2, {2.0, 1.0, 1.0, 3.0 + i});
    absl::StatusOr<v1::DeterminantResponse> response = client_->Determinant(request);
    ASSERT_TRUE(response.ok()) << response.status();
    EXPECT_EQ(response->value(), 5.0 + 2 * i);
  }
  for (int i = 0; i < 2; ++i) {
    v1::MultiplyRequest request;
    *request.mutable_a() = MakeMatrix<double>(8, 8, std::vector<double>(64, 0.5));
    *request.mutable_b() = MakeMatrix<double>(8, 8, std::vector<double>(64, 0.25));
    ASSERT_TRUE(client_->Multiply(request).ok());
  }
  {
    v1::FactorizeRequest request;  // indefinite: Cholesky fails in the job
    *request.mutable_matrix() = MakeMatrix<double>(2, 2, {1.0, 2.0, 2.0, 1.0});
    request.set_kind(v1::FACTORIZATION_KIND_CHOLESKY);
    EXPECT_EQ(client_->Factorize(request).status().code(), absl::StatusCode::kFailedPrecondition);
  }
  {
    v1::PermanentRequest request;
    *request.mutable_matrix() = MakeMatrix<int64_t>(3, 3, {1, 1, 1, 1, 1, 1, 1, 1, 1});
    absl::StatusOr<v1::PermanentResponse> response = client_->Permanent(request);
    ASSERT_TRUE(response.ok()) << response.status();
  }

  absl::StatusOr<std::unique_ptr<PrometheusProcess>> prometheus =
      PrometheusProcess::Start(server_->metrics_http()->port());
  ASSERT_TRUE(prometheus.ok()) << prometheus.status();
  const PrometheusProcess& p = **prometheus;

  ASSERT_EQ(p.AwaitValue(R"(up{job="matrixd"})", 1.0), 1.0) << p.Log();
  EXPECT_EQ(p.AwaitValue("sum(matrixd_jobs_total)", 7.0), 7.0) << p.Log();

  EXPECT_EQ(p.Query(R"(matrixd_build_info{backend="cpu",version=~".+"})"), 1.0);
  EXPECT_EQ(p.Query(R"(sum(matrixd_jobs_total{op="determinant",status="OK"}))"), 3.0);
  EXPECT_EQ(p.Query(R"(sum(matrixd_jobs_total{op="factorize",status="FAILED_PRECONDITION"}))"),
            1.0);
  EXPECT_EQ(p.Query(R"(sum(matrixd_jobs_total{op="permanent",status="OK"}))"), 1.0);

  // Two 8x8 products: 2 * 2 * 8^3 flops.
  const std::string gemm = R"({op="multiply",kernel="gemm",dtype="float64"})";
  EXPECT_EQ(p.Query("sum(matrixd_kernel_duration_seconds_count" + gemm + ")"), 2.0);
  EXPECT_EQ(p.Query("sum(matrixd_kernel_flops_total" + gemm + ")"), 2048.0);
  const std::optional<double> seconds =
      p.Query("sum(matrixd_kernel_duration_seconds_sum" + gemm + ")");
  ASSERT_TRUE(seconds.has_value());
  EXPECT_GT(*seconds, 0.0);
  EXPECT_LT(*seconds, 10.0);
  EXPECT_EQ(p.Query(R"(sum(matrixd_kernel_duration_seconds_count{op="permanent"}))"), 1.0);
  // Each CPU LU determinant records its elimination (lu) and its condition_estimate.
  EXPECT_EQ(p.Query(R"(sum(matrixd_kernel_duration_seconds_count{op="determinant"}))"), 6.0);

  // memcpy in main memory: between 100 MB/s and 10 TB/s on anything that runs this test.
  const std::optional<double> copy =
      p.Query(R"(max(matrixd_device_copy_bandwidth_bytes_per_second{device=~"cpu.*"}))");
  ASSERT_TRUE(copy.has_value());
  EXPECT_GT(*copy, 1e8);
  EXPECT_LT(*copy, 1e13);
  const std::optional<double> ratio =
      p.Query("max(matrixd_kernel_bandwidth_efficiency_ratio" + gemm + ")");
  ASSERT_TRUE(ratio.has_value());
  EXPECT_GT(*ratio, 0.0);
  EXPECT_TRUE(std::isfinite(*ratio));
  const std::optional<double> bandwidth =
      p.Query("max(matrixd_kernel_effective_bandwidth_bytes_per_second" + gemm + ")");
  ASSERT_TRUE(bandwidth.has_value());
  EXPECT_NEAR(*ratio, *bandwidth / *copy, 1e-9 * *ratio);

  EXPECT_EQ(p.Query("matrixd_queue_depth"), 0.0);
  EXPECT_EQ(p.Query("sum(matrixd_queue_wait_seconds_count)"), 7.0);
  EXPECT_EQ(p.Query(R"(sum(matrixd_rpc_duration_seconds_count{)"
                    R"(method="matrixd.v1.MatrixService/Determinant",code="OK"}))"),
            3.0);
  EXPECT_EQ(p.Query(R"(sum(matrixd_rpc_duration_seconds_count{)"
                    R"(method="matrixd.v1.MatrixService/Factorize",code="FAILED_PRECONDITION"}))"),
            1.0);

  // A job after the first scrape shows up in a later one.
  v1::DeterminantRequest request;
  *request.mutable_matrix() = MakeMatrix<double>(1, 1, {4.0});
  ASSERT_TRUE(client_->Determinant(request).ok());
  EXPECT_EQ(p.AwaitValue(R"(sum(matrixd_jobs_total{op="determinant",status="OK"}))", 4.0), 4.0);
  EXPECT_TRUE(p.Running()) << p.Log();
}

}  // namespace
}  // namespace matrixd::server::testing
