// matrixd_permanent_split_bench --n=N --gpus=R [--repeats=2] [--precision=extended|fast]: times
// one float64 permanent (entries k / 2^20) with its walk split over the first R GPUs (one context
// and one host thread each), prints one line: n, gpus, best seconds, value.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/time/clock.h"
#include "core/cuda/device_context.h"
#include "core/cuda/permanent.h"

ABSL_FLAG(int, n, 36, "matrix order");
ABSL_FLAG(int, gpus, 1, "GPUs to use (ordinals 0 .. gpus-1)");
ABSL_FLAG(int, repeats, 2, "timed runs; the best is reported");
ABSL_FLAG(std::string, precision, "extended", "extended | fast");

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  const int n = absl::GetFlag(FLAGS_n);
  const int gpus = absl::GetFlag(FLAGS_gpus);
  std::mt19937_64 random(1);
  std::uniform_int_distribution<int64_t> k(0, (int64_t{1} << 20) - 1);
  matrixd::Matrix a(n, n, matrixd::DType::kFloat64);
  for (double& x : a.As<double>()) x = std::ldexp(static_cast<double>(k(random)), -20);
  std::vector<std::unique_ptr<matrixd::cuda::DeviceContext>> owned;
  std::vector<matrixd::cuda::DeviceContext*> contexts;
  for (int d = 0; d < gpus; ++d) {
    auto context = matrixd::cuda::DeviceContext::Create(d);
    if (!context.ok()) {
      std::fprintf(stderr, "device %d: %s\n", d, std::string(context.status().message()).c_str());
      return 1;
    }
    contexts.push_back(context->get());
    owned.push_back(*std::move(context));
  }
  const matrixd::PermanentOptions options{
      .method = matrixd::PermanentMethod::kGlynn,
      .precision = absl::GetFlag(FLAGS_precision) == "fast"
                       ? matrixd::PermanentPrecision::kFast
                       : matrixd::PermanentPrecision::kExtended};
  double best = 1e30;
  double value = 0.0;
  for (int r = 0; r < absl::GetFlag(FLAGS_repeats); ++r) {
    matrixd::JobControl control;
    const absl::Time start = absl::Now();
    auto result = matrixd::cuda::Permanent(a.view(), options, contexts, &control);
    const double seconds = absl::ToDoubleSeconds(absl::Now() - start);
    if (!result.ok()) {
      std::fprintf(stderr, "permanent: %s\n", std::string(result.status().message()).c_str());
      return 1;
    }
    best = std::min(best, seconds);
    value = result->value.real();
  }
  std::printf("permanent n=%d gpus=%d precision=%s seconds=%.4f value=%.17g\n", n, gpus,
              absl::GetFlag(FLAGS_precision).c_str(), best, value);
  return 0;
}
