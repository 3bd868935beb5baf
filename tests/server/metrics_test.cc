// Metrics: what each Record*/Set* call leaves in the text exposition, checked by parsing the
// samples back out.
#include "server/metrics.h"

#include <atomic>
#include <cmath>
#include <memory>
#include <string>
#include <thread>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cpu/cpu_backend.h"
#include "gtest/gtest.h"
#include "server/server.h"
#include "tests/server/metrics_test_support.h"

namespace matrixd::server {
namespace {

using testing::FamilyTypes;
using testing::LabelSet;
using testing::SampleValue;

constexpr char kDevice[] = "Test GPU (device 0)";

LabelSet KernelLabels(const std::string& op, const std::string& kernel, const std::string& dtype) {
  return {{"op", op}, {"kernel", kernel}, {"dtype", dtype}, {"device", kDevice}};
}

ComputeStats StatsWith(std::vector<KernelRecord> kernels) {
  ComputeStats stats;
  stats.backend = "cuda";
  stats.device = kDevice;
  stats.seconds = 4.0;
  stats.bytes_moved = 1000;
  stats.flops = 500.0;
  stats.kernels = std::move(kernels);
  return stats;
}

TEST(Metrics, BuildInfoIsOneWithVersionAndBackend) {
  Metrics metrics("1.2.3", "cuda");
  EXPECT_EQ(SampleValue(metrics.Serialize(), "matrixd_build_info",
                        {{"version", "1.2.3"}, {"backend", "cuda"}}),
            1.0);
}

TEST(Metrics, EveryFamilyIsNamedAndTypedByPrometheusConventions) {
  Metrics metrics("0", "cpu");
  // Touch every family so that each has a sample.
  metrics.RecordJob(kOpDeterminant, absl::StatusCode::kOk);
  metrics.RecordKernels(kOpMultiply, DType::kFloat64, StatsWith({{"gemm", 1.0, 8, 2.0}}));
  metrics.SetCopyBandwidth(kDevice, 1e9);
  metrics.RecordKernels(kOpMultiply, DType::kFloat64, StatsWith({{"gemm", 1.0, 8, 2.0}}));
  metrics.RecordQueueWait(absl::Milliseconds(3));
  metrics.RecordRpc("matrixd.v1.MatrixService/Multiply", absl::StatusCode::kOk, absl::Seconds(1));
  metrics.SetDeviceMemory({.device = kDevice, .total = 4, .limit = 3, .used = 2, .reserved = 2}, 1);
  metrics.RecordTransfer("in", "stream", 100, absl::Milliseconds(1));
  metrics.SetResident({{.device = kDevice, .matrices = 1, .bytes = 8, .spilled_bytes = 0}}, 1, 0);
  metrics.SetResidentLimit(64);
  const std::map<std::string, std::string> want = {
      {"matrixd_build_info", "gauge"},
      {"matrixd_kernel_duration_seconds", "histogram"},
      {"matrixd_kernel_bytes_total", "counter"},
      {"matrixd_kernel_flops_total", "counter"},
      {"matrixd_kernel_effective_bandwidth_bytes_per_second", "gauge"},
      {"matrixd_kernel_bandwidth_efficiency_ratio", "gauge"},
      {"matrixd_device_copy_bandwidth_bytes_per_second", "gauge"},
      {"matrixd_queue_depth", "gauge"},
      {"matrixd_queue_wait_seconds", "histogram"},
      {"matrixd_jobs_total", "counter"},
      {"matrixd_accuracy_answers_total", "counter"},
      {"matrixd_product_checks_total", "counter"},
      {"matrixd_rpc_duration_seconds", "histogram"},
      {"matrixd_device_memory_bytes", "gauge"},
      {"matrixd_transfer_bytes_total", "counter"},
      {"matrixd_transfer_seconds_total", "counter"},
      {"matrixd_resident_matrices", "gauge"},
      {"matrixd_resident_bytes", "gauge"},
      {"matrixd_resident_moves_total", "counter"},
      {"matrixd_resident_memory_limit_bytes", "gauge"},
  };
  EXPECT_EQ(FamilyTypes(metrics.Serialize()), want);
}

TEST(Metrics, ResidentGaugesFollowTheRegistryAndDropToZeroForAnEmptiedDevice) {
  Metrics metrics("0", "cuda");
  metrics.SetResident({{.device = kDevice, .matrices = 2, .bytes = 64, .spilled_bytes = 16}}, 3, 1);
  std::string text = metrics.Serialize();
  EXPECT_EQ(SampleValue(text, "matrixd_resident_matrices", {{"device", kDevice}}), 2.0);
  EXPECT_EQ(SampleValue(text, "matrixd_resident_bytes", {{"device", kDevice}, {"state", "device"}}),
            64.0);
  EXPECT_EQ(
      SampleValue(text, "matrixd_resident_bytes", {{"device", kDevice}, {"state", "spilled"}}),
      16.0);
  EXPECT_EQ(SampleValue(text, "matrixd_resident_moves_total", {{"move", "spill"}}), 3.0);
  metrics.SetResident({}, 5, 1);
  text = metrics.Serialize();
  EXPECT_EQ(SampleValue(text, "matrixd_resident_matrices", {{"device", kDevice}}), 0.0);
  EXPECT_EQ(SampleValue(text, "matrixd_resident_moves_total", {{"move", "spill"}}), 5.0);
  EXPECT_EQ(SampleValue(text, "matrixd_resident_moves_total", {{"move", "restore"}}), 1.0);
}

TEST(Metrics, ResidentLimitIsExportedAsSet) {
  Metrics metrics("0", "cpu");
  metrics.SetResidentLimit(uint64_t{3} << 33);
  EXPECT_EQ(SampleValue(metrics.Serialize(), "matrixd_resident_memory_limit_bytes", {}),
            static_cast<double>(uint64_t{3} << 33));
}

TEST(Metrics, ServerExportsItsResidentMemoryLimit) {
  ServerOptions options;
  options.listen_address = "127.0.0.1:0";
  options.resident.limit_bytes = uint64_t{5} << 30;
  absl::StatusOr<std::unique_ptr<MatrixServer>> server =
      MatrixServer::Start(MakeCpuBackend({.threads = 1}), options);
  ASSERT_TRUE(server.ok()) << server.status();
  EXPECT_EQ(
      SampleValue((*server)->metrics().Serialize(), "matrixd_resident_memory_limit_bytes", {}),
      static_cast<double>(uint64_t{5} << 30));
}

TEST(Metrics, TransfersCountBytesAndStreamedSeconds) {
  Metrics metrics("0", "cpu");
  metrics.RecordTransfer("in", "stream", 1000, absl::Seconds(2));
  metrics.RecordTransfer("out", "inline", 500, absl::ZeroDuration());
  const std::string text = metrics.Serialize();
  EXPECT_EQ(
      SampleValue(text, "matrixd_transfer_bytes_total", {{"direction", "in"}, {"path", "stream"}}),
      1000.0);
  EXPECT_EQ(SampleValue(text, "matrixd_transfer_seconds_total",
                        {{"direction", "in"}, {"path", "stream"}}),
            2.0);
  EXPECT_EQ(
      SampleValue(text, "matrixd_transfer_bytes_total", {{"direction", "out"}, {"path", "inline"}}),
      500.0);
  EXPECT_EQ(SampleValue(text, "matrixd_transfer_seconds_total",
                        {{"direction", "out"}, {"path", "inline"}}),
            0.0);
}

TEST(Metrics, AnswersWithAnAccuracyAreCountedByFlag) {
  Metrics metrics("0", "cpu");
  DeterminantResult ill;
  ill.accuracy = Accuracy{.ill_conditioned = true};
  DeterminantResult well;
  well.accuracy = Accuracy{.ill_conditioned = false};
  metrics.RecordOutcome(kOpDeterminant, DType::kFloat64, absl::StatusOr<DeterminantResult>(ill));
  metrics.RecordOutcome(kOpDeterminant, DType::kFloat64, absl::StatusOr<DeterminantResult>(ill));
  metrics.RecordOutcome(kOpDeterminant, DType::kFloat64, absl::StatusOr<DeterminantResult>(well));
  // No accuracy (a modular determinant), and a result type without the field: not counted.
  metrics.RecordOutcome(kOpDeterminant, DType::kInt64,
                        absl::StatusOr<DeterminantResult>(DeterminantResult{}));
  metrics.RecordOutcome(kOpMultiply, DType::kFloat64,
                        absl::StatusOr<MultiplyResult>(MultiplyResult{}));
  const std::string text = metrics.Serialize();
  const auto count = [&text](const char* op, const char* flag) {
    return SampleValue(text, "matrixd_accuracy_answers_total",
                       {{"op", op}, {"ill_conditioned", flag}});
  };
  EXPECT_EQ(count("determinant", "true"), 2.0);
  EXPECT_EQ(count("determinant", "false"), 1.0);
  EXPECT_EQ(count("multiply", "true"), 0.0);
  EXPECT_EQ(count("multiply", "false"), 0.0);
}

TEST(Metrics, FactorizationsWithAConditionEstimateAreCounted) {
  Metrics metrics("0", "cpu");
  // FactorizeResult moves only (it may own a factorization kept on the GPUs).
  const auto estimated = [](bool ill_conditioned) {
    FactorizeResult result;
    result.accuracy = Accuracy{.ill_conditioned = ill_conditioned};
    return absl::StatusOr<FactorizeResult>(std::move(result));
  };
  metrics.RecordOutcome(kOpFactorize, DType::kFloat64, estimated(true));
  metrics.RecordOutcome(kOpFactorize, DType::kFloat64, estimated(false));
  metrics.RecordOutcome(kOpFactorize, DType::kFloat64, estimated(false));
  // Without estimate_condition: not counted.
  metrics.RecordOutcome(kOpFactorize, DType::kFloat64,
                        absl::StatusOr<FactorizeResult>(FactorizeResult{}));
  const std::string text = metrics.Serialize();
  EXPECT_EQ(SampleValue(text, "matrixd_accuracy_answers_total",
                        {{"op", "factorize"}, {"ill_conditioned", "true"}}),
            1.0);
  EXPECT_EQ(SampleValue(text, "matrixd_accuracy_answers_total",
                        {{"op", "factorize"}, {"ill_conditioned", "false"}}),
            2.0);
}

TEST(Metrics, ProductChecksAreCountedByVerdict) {
  Metrics metrics("0", "cpu");
  MultiplyResult passed;
  passed.check = ProductCheck{.passed = true};
  MultiplyResult failed;
  failed.check = ProductCheck{.passed = false};
  metrics.RecordOutcome(kOpMultiply, DType::kFloat64, absl::StatusOr<MultiplyResult>(passed));
  metrics.RecordOutcome(kOpMultiply, DType::kFloat64, absl::StatusOr<MultiplyResult>(passed));
  metrics.RecordOutcome(kOpMultiply, DType::kFloat64, absl::StatusOr<MultiplyResult>(failed));
  // Unverified: not counted.
  metrics.RecordOutcome(kOpMultiply, DType::kFloat64,
                        absl::StatusOr<MultiplyResult>(MultiplyResult{}));
  const std::string text = metrics.Serialize();
  EXPECT_EQ(SampleValue(text, "matrixd_product_checks_total", {{"passed", "true"}}), 2.0);
  EXPECT_EQ(SampleValue(text, "matrixd_product_checks_total", {{"passed", "false"}}), 1.0);
}

TEST(Metrics, JobsAreCountedByOpAndCanonicalStatusName) {
  Metrics metrics("0", "cpu");
  metrics.RecordJob(kOpDeterminant, absl::StatusCode::kOk);
  metrics.RecordJob(kOpDeterminant, absl::StatusCode::kOk);
  metrics.RecordJob(kOpDeterminant, absl::StatusCode::kCancelled);
  metrics.RecordJob(kOpPermanent, absl::StatusCode::kResourceExhausted);
  const std::string text = metrics.Serialize();
  EXPECT_EQ(SampleValue(text, "matrixd_jobs_total", {{"op", "determinant"}, {"status", "OK"}}),
            2.0);
  EXPECT_EQ(
      SampleValue(text, "matrixd_jobs_total", {{"op", "determinant"}, {"status", "CANCELLED"}}),
      1.0);
  EXPECT_EQ(SampleValue(text, "matrixd_jobs_total",
                        {{"op", "permanent"}, {"status", "RESOURCE_EXHAUSTED"}}),
            1.0);
  // The usual outcomes exist at 0 before their first job, so that rate() sees that job.
  EXPECT_EQ(SampleValue(text, "matrixd_jobs_total", {{"op", "permanent"}, {"status", "OK"}}), 0.0);
  EXPECT_EQ(SampleValue(text, "matrixd_jobs_total",
                        {{"op", "multiply"}, {"status", "DEADLINE_EXCEEDED"}}),
            0.0);
}

TEST(Metrics, KernelRecordsFeedDurationBytesFlopsAndBandwidth) {
  Metrics metrics("0", "cuda");
  // 3e9 bytes in 1.5 s: 2e9 B/s. Two records of the same kernel accumulate.
  metrics.RecordKernels(kOpFactorize, DType::kComplex128,
                        StatsWith({{"cusolver_getrf", 1.5, 3'000'000'000, 7e9},
                                   {"cusolver_getrf", 0.5, 1'000'000'000, 1e9}}));
  const std::string text = metrics.Serialize();
  const LabelSet labels = KernelLabels("factorize", "cusolver_getrf", "complex128");
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_duration_seconds_count", labels), 2.0);
  EXPECT_DOUBLE_EQ(*SampleValue(text, "matrixd_kernel_duration_seconds_sum", labels), 2.0);
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_bytes_total", labels), 4e9);
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_flops_total", labels), 8e9);
  // The gauge holds the latest record: 1e9 / 0.5.
  EXPECT_DOUBLE_EQ(
      *SampleValue(text, "matrixd_kernel_effective_bandwidth_bytes_per_second", labels), 2e9);
  // No copy bandwidth is known for the device yet: no ratio.
  EXPECT_FALSE(SampleValue(text, "matrixd_kernel_bandwidth_efficiency_ratio", labels).has_value());
}

TEST(Metrics, EfficiencyRatioIsBandwidthOverTheDevicesCopyBandwidth) {
  Metrics metrics("0", "cuda");
  metrics.SetCopyBandwidth(kDevice, 2.5e12);
  metrics.SetCopyBandwidth("another device", 1.0);
  metrics.RecordKernels(kOpDeterminant, DType::kFloat64,
                        StatsWith({{"scale_rows", 0.25, 500'000'000'000, 0.0}}));
  const std::string text = metrics.Serialize();
  EXPECT_EQ(
      SampleValue(text, "matrixd_device_copy_bandwidth_bytes_per_second", {{"device", kDevice}}),
      2.5e12);
  // 5e11 B / 0.25 s = 2e12 B/s, 0.8 of 2.5e12.
  EXPECT_DOUBLE_EQ(*SampleValue(text, "matrixd_kernel_bandwidth_efficiency_ratio",
                                KernelLabels("determinant", "scale_rows", "float64")),
                   0.8);
}

TEST(Metrics, ARecordThatMovesNoBytesHasADurationButNoBandwidth) {
  Metrics metrics("0", "cuda");
  metrics.SetCopyBandwidth(kDevice, 2.5e12);
  // The product's wait for the check's second stream (core/cuda/freivalds.h).
  metrics.RecordKernels(kOpMultiply, DType::kFloat64,
                        StatsWith({{"freivalds_wait", 2e-5, 0, 0.0}}));
  const std::string text = metrics.Serialize();
  const LabelSet labels = KernelLabels("multiply", "freivalds_wait", "float64");
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_duration_seconds_count", labels), 1.0);
  EXPECT_FALSE(
      SampleValue(text, "matrixd_kernel_effective_bandwidth_bytes_per_second", labels).has_value());
  EXPECT_FALSE(SampleValue(text, "matrixd_kernel_bandwidth_efficiency_ratio", labels).has_value());
}

TEST(Metrics, ResultWithoutKernelRecordsCountsAsOneWholeOperation) {
  Metrics metrics("0", "cpu");
  metrics.RecordKernels(kOpPermanent, DType::kInt64, StatsWith({}));
  const std::string text = metrics.Serialize();
  const LabelSet labels = KernelLabels("permanent", kWholeOperationKernel, "int64");
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_duration_seconds_count", labels), 1.0);
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_duration_seconds_sum", labels), 4.0);
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_bytes_total", labels), 1000.0);
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_flops_total", labels), 500.0);
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_effective_bandwidth_bytes_per_second", labels),
            250.0);
}

TEST(Metrics, RecordWithoutTimeCountsWorkButSetsNoBandwidth) {
  Metrics metrics("0", "cpu");
  metrics.RecordKernels(kOpMultiply, DType::kFloat32, StatsWith({{"gemm", 0.0, 64, 10.0}}));
  const std::string text = metrics.Serialize();
  const LabelSet labels = KernelLabels("multiply", "gemm", "float32");
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_bytes_total", labels), 64.0);
  EXPECT_FALSE(SampleValue(text, "matrixd_kernel_duration_seconds_count", labels).has_value());
  EXPECT_FALSE(
      SampleValue(text, "matrixd_kernel_effective_bandwidth_bytes_per_second", labels).has_value());
}

TEST(Metrics, RecordOutcomeCountsFailuresWithoutKernels) {
  Metrics metrics("0", "cpu");
  metrics.RecordOutcome(kOpDeterminant, DType::kFloat64,
                        absl::StatusOr<DeterminantResult>(absl::OutOfRangeError("overflow")));
  DeterminantResult ok;
  ok.stats = StatsWith({{"lu", 1.0, 10, 10.0}});
  metrics.RecordOutcome(kOpDeterminant, DType::kFloat64, absl::StatusOr<DeterminantResult>(ok));
  const std::string text = metrics.Serialize();
  EXPECT_EQ(
      SampleValue(text, "matrixd_jobs_total", {{"op", "determinant"}, {"status", "OUT_OF_RANGE"}}),
      1.0);
  EXPECT_EQ(SampleValue(text, "matrixd_jobs_total", {{"op", "determinant"}, {"status", "OK"}}),
            1.0);
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_duration_seconds_count",
                        KernelLabels("determinant", "lu", "float64")),
            1.0);
}

TEST(Metrics, QueueDepthIsTheLatestValueAndWaitsAreObserved) {
  Metrics metrics("0", "cpu");
  metrics.RecordQueueDepth(7);
  metrics.RecordQueueDepth(3);
  metrics.RecordQueueWait(absl::Milliseconds(250));
  metrics.RecordQueueWait(absl::Milliseconds(750));
  const std::string text = metrics.Serialize();
  EXPECT_EQ(SampleValue(text, "matrixd_queue_depth", {}), 3.0);
  EXPECT_EQ(SampleValue(text, "matrixd_queue_wait_seconds_count", {}), 2.0);
  EXPECT_DOUBLE_EQ(*SampleValue(text, "matrixd_queue_wait_seconds_sum", {}), 1.0);
  // Cumulative buckets: 0.25 lies in le="0.25", 0.75 only from le="1" on.
  EXPECT_EQ(SampleValue(text, "matrixd_queue_wait_seconds_bucket", {{"le", "0.25"}}), 1.0);
  EXPECT_EQ(SampleValue(text, "matrixd_queue_wait_seconds_bucket", {{"le", "0.5"}}), 1.0);
  EXPECT_EQ(SampleValue(text, "matrixd_queue_wait_seconds_bucket", {{"le", "1"}}), 2.0);
  EXPECT_EQ(SampleValue(text, "matrixd_queue_wait_seconds_bucket", {{"le", "+Inf"}}), 2.0);
}

TEST(Metrics, RpcDurationsAreLabelledByMethodAndCode) {
  Metrics metrics("0", "cpu");
  metrics.RecordRpc("matrixd.v1.MatrixService/Permanent", absl::StatusCode::kDeadlineExceeded,
                    absl::Seconds(2));
  const std::string text = metrics.Serialize();
  EXPECT_EQ(SampleValue(
                text, "matrixd_rpc_duration_seconds_sum",
                {{"method", "matrixd.v1.MatrixService/Permanent"}, {"code", "DEADLINE_EXCEEDED"}}),
            2.0);
}

TEST(Metrics, DeviceMemoryHasOneSeriesPerState) {
  Metrics metrics("0", "cuda");
  metrics.SetDeviceMemory({.device = kDevice, .total = 80, .limit = 72, .used = 10, .reserved = 16},
                          12);
  const std::string text = metrics.Serialize();
  for (const auto& [state, bytes] : std::vector<std::pair<std::string, double>>{
           {"total", 80}, {"limit", 72}, {"used", 10}, {"reserved", 16}, {"admitted", 12}}) {
    EXPECT_EQ(
        SampleValue(text, "matrixd_device_memory_bytes", {{"device", kDevice}, {"state", state}}),
        bytes)
        << state;
  }
}

TEST(Metrics, ScrapeHookRunsBeforeEverySerialization) {
  Metrics metrics("0", "cuda");
  int scrapes = 0;
  metrics.SetScrapeHook([&scrapes](Metrics& m) {
    ++scrapes;
    m.SetDeviceMemory({.device = kDevice, .used = static_cast<uint64_t>(scrapes)}, 0);
  });
  EXPECT_EQ(SampleValue(metrics.Serialize(), "matrixd_device_memory_bytes",
                        {{"device", kDevice}, {"state", "used"}}),
            1.0);
  EXPECT_EQ(SampleValue(metrics.Serialize(), "matrixd_device_memory_bytes",
                        {{"device", kDevice}, {"state", "used"}}),
            2.0);
}

TEST(Metrics, ConcurrentRecordsAreAllCounted) {
  Metrics metrics("0", "cpu");
  constexpr int kThreads = 4;
  constexpr int kPerThread = 500;
  std::vector<std::thread> threads;
  for (int t = 0; t < kThreads; ++t) {
    threads.emplace_back([&metrics, t] {
      for (int i = 0; i < kPerThread; ++i) {
        metrics.RecordJob(t % 2 == 0 ? kOpMultiply : kOpFactorize, absl::StatusCode::kOk);
        metrics.RecordKernels(kOpMultiply, DType::kFloat64, StatsWith({{"gemm", 1e-3, 1, 1.0}}));
      }
    });
  }
  // Scrapes while the records land must not disturb them.
  for (int i = 0; i < 20; ++i) static_cast<void>(metrics.Serialize());
  for (std::thread& thread : threads) thread.join();
  const std::string text = metrics.Serialize();
  EXPECT_EQ(SampleValue(text, "matrixd_jobs_total", {{"op", "multiply"}, {"status", "OK"}}),
            kThreads / 2 * kPerThread);
  EXPECT_EQ(SampleValue(text, "matrixd_kernel_duration_seconds_count",
                        KernelLabels("multiply", "gemm", "float64")),
            kThreads * kPerThread);
}

}  // namespace
}  // namespace matrixd::server
