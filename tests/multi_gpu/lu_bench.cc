// matrixd_lu_bench: LU and determinant of one float64 matrix over the GPUs of one process, against
// one GPU's cuSOLVER getrf, in one process (no MPI, no NCCL). Matrices are made on the GPUs from a
// seed (cuda::LaunchGenerate: the same global matrix for every op and GPU count).
//
//   matrixd_lu_bench --op=getrf1 --n=32768 [--repeats=3]
//     cusolverDnXgetrf on GPU 0: "getrf1 n=N gpus=1 block=0 repeat=I seconds=S tflops=T sign=s
//     log_abs_det=L"
//   matrixd_lu_bench --op=mg|own --n=32768 --gpus=2 [--block=512] [--repeats=3]
//     mg: cusolverMgGetrf (core/multi_gpu/cusolvermg_lu.h); own: MultiGpuLu
//     (core/multi_gpu/multi_gpu_lu.h); per timed run "OP n=N gpus=R block=B repeat=I seconds=S
//     tflops=T det_seconds=D sign=s log_abs_det=L" (seconds: the factorisation alone; tflops
//     counts 2/3 n^3)
//   matrixd_lu_bench --check --op=mg|own --n=1001 --gpus=2 --block=64
//     a uniform matrix against getrf1 on GPU 0, the reversed (-1, 2, -1) matrix against its exact
//     determinant (-1)^floor(n/2) (n + 1), and a singular one (column 0 = column 1) against 0;
//     "check OP ... matrix=M ... PASS|FAIL" per matrix
//   matrixd_lu_bench --probe
//     the GPUs, their memory and which pairs have peer access
//
// Timed runs follow one untimed warm-up. Exit status: 0 success, 1 failure (or FAIL), 2 the
// matrix does not fit the GPUs, 3 the op is not available here (cusolverMg not found).
#include <cuda_runtime.h>

#include <chrono>
#include <cmath>
#include <cstdio>
#include <limits>
#include <memory>
#include <string>
#include <vector>

#include "absl/flags/flag.h"
#include "absl/flags/parse.h"
#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cuda/block_cyclic_kernels.h"
#include "core/cuda/cuda_status.h"
#include "core/multi_gpu/cusolvermg_lu.h"
#include "core/multi_gpu/multi_gpu_lu.h"
#include "core/status_macros.h"
#include "tests/multi_gpu/single_gpu_lu.h"

ABSL_FLAG(std::string, op, "own",
          "getrf1 (one GPU's cuSOLVER), mg (cusolverMg) or own (MultiGpuLu)");
ABSL_FLAG(int64_t, n, 4096, "matrix order");
ABSL_FLAG(int, gpus, 1, "GPUs, ordinals 0 .. gpus-1 (getrf1: 1)");
ABSL_FLAG(int, repeats, 3, "timed runs after one untimed warm-up run");
ABSL_FLAG(int64_t, block, 512, "columns per block of the 1-D block-cyclic layout (mg, own)");
ABSL_FLAG(uint64_t, seed, 1, "seed of the generated matrices");
ABSL_FLAG(bool, check, false, "check the determinants instead of timing");
ABSL_FLAG(bool, probe, false, "print the GPUs and their peer access, and exit");

namespace matrixd::multi_gpu {
namespace {

constexpr int kExitFailure = 1;
constexpr int kExitDoesNotFit = 2;
constexpr int kExitUnavailable = 3;
// log|det| of a random matrix: within the conditioning of LU with partial pivoting.
constexpr double kLogDetTolerance = 1e-7;

struct Options {
  std::string op;
  int64_t n = 0;
  int gpus = 1;
  int repeats = 3;
  int64_t block = 512;
  uint64_t seed = 1;
  bool check = false;
  std::vector<int> devices;
};

double Now() {
  return std::chrono::duration<double>(std::chrono::steady_clock::now().time_since_epoch()).count();
}

double LuFlops(int64_t n) {
  return 2.0 / 3.0 * static_cast<double>(n) * static_cast<double>(n) * static_cast<double>(n);
}

std::string Describe(const Options& o) {
  return absl::StrCat("n=", o.n, " gpus=", o.gpus, " block=", o.op == "getrf1" ? 0 : o.block);
}

absl::Status SynchronizeDevices(const std::vector<int>& devices) {
  for (int device : devices) {
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(device));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaDeviceSynchronize());
  }
  return absl::OkStatus();
}

// The two distributed LUs behind one face.
class DistributedLu {
 public:
  virtual ~DistributedLu() = default;
  virtual int gpus() const = 0;
  virtual const cuda::BlockCyclicPart& part(int g) const = 0;
  virtual double* matrix(int g) const = 0;
  virtual absl::Status Generate(cuda::GeneratedMatrix matrix, uint64_t seed) = 0;
  virtual absl::Status Factor() = 0;
  virtual absl::StatusOr<DistributedDeterminant> Determinant() = 0;
};

template <typename Lu>
class DistributedLuOf : public DistributedLu {
 public:
  explicit DistributedLuOf(std::unique_ptr<Lu> lu) : lu_(std::move(lu)) {}
  int gpus() const override { return lu_->gpus(); }
  const cuda::BlockCyclicPart& part(int g) const override { return lu_->part(g); }
  double* matrix(int g) const override { return lu_->matrix(g); }
  absl::Status Generate(cuda::GeneratedMatrix matrix, uint64_t seed) override {
    return lu_->Generate(matrix, seed);
  }
  absl::Status Factor() override { return lu_->Factor(); }
  absl::StatusOr<DistributedDeterminant> Determinant() override { return lu_->Determinant(); }

 private:
  std::unique_ptr<Lu> lu_;
};

absl::StatusOr<std::unique_ptr<DistributedLu>> MakeLu(const Options& o) {
  if (o.op == "mg") {
    MATRIXD_ASSIGN_OR_RETURN(auto lu, CusolverMgLu::Create(o.devices, o.n, o.block));
    return std::make_unique<DistributedLuOf<CusolverMgLu>>(std::move(lu));
  }
  MATRIXD_ASSIGN_OR_RETURN(auto lu, MultiGpuLu::Create(o.devices, o.n, o.block));
  return std::make_unique<DistributedLuOf<MultiGpuLu>>(std::move(lu));
}

// Global column j of a 1-D block-cyclic part: (GPU, pointer).
std::pair<int, double*> Column(const DistributedLu& lu, int64_t j) {
  const cuda::BlockCyclicPart& part0 = lu.part(0);
  const int64_t block = j / part0.block;
  const int g = static_cast<int>(block % lu.gpus());
  const int64_t local = (block / lu.gpus()) * part0.block + j % part0.block;
  return {g, lu.matrix(g) + local * lu.part(g).ld};
}

// Column 0 := column 1 (n > 1), or the one element := 0.
absl::Status MakeSingular(const DistributedLu& lu, const Options& o) {
  MATRIXD_RETURN_IF_ERROR(SynchronizeDevices(o.devices));
  const auto [g0, column0] = Column(lu, 0);
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(o.devices[g0]));
  if (o.n == 1) return MATRIXD_CUDA_STATUS(cudaMemset(column0, 0, sizeof(double)));
  const auto [g1, column1] = Column(lu, 1);
  return MATRIXD_CUDA_STATUS(cudaMemcpyPeer(column0, o.devices[g0], column1, o.devices[g1],
                                            static_cast<size_t>(o.n) * sizeof(double)));
}

absl::Status BenchGetrf1(const Options& o) {
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(0));
  return SingleGpuLu(o.n, cuda::GeneratedMatrix::kUniform, o.seed, nullptr, o.repeats + 1,
                     [&](int run, double seconds, const DistributedDeterminant& det) {
                       if (run == 0) return;  // warm-up
                       std::printf(
                           "getrf1 %s repeat=%d seconds=%.4f tflops=%.2f sign=%d "
                           "log_abs_det=%.10g\n",
                           Describe(o).c_str(), run, seconds, LuFlops(o.n) / seconds * 1e-12,
                           det.sign, det.log_abs);
                       std::fflush(stdout);
                     });
}

absl::Status BenchDistributed(const Options& o) {
  MATRIXD_ASSIGN_OR_RETURN(auto lu, MakeLu(o));
  for (int repeat = 0; repeat <= o.repeats; ++repeat) {
    MATRIXD_RETURN_IF_ERROR(lu->Generate(cuda::GeneratedMatrix::kUniform, o.seed));
    MATRIXD_RETURN_IF_ERROR(SynchronizeDevices(o.devices));
    const double start = Now();
    MATRIXD_RETURN_IF_ERROR(lu->Factor());
    MATRIXD_RETURN_IF_ERROR(SynchronizeDevices(o.devices));
    const double factored = Now();
    MATRIXD_ASSIGN_OR_RETURN(DistributedDeterminant det, lu->Determinant());
    const double seconds = factored - start;
    if (repeat == 0) continue;  // warm-up
    std::printf(
        "%s %s repeat=%d seconds=%.4f tflops=%.2f det_seconds=%.4f sign=%d "
        "log_abs_det=%.10g\n",
        o.op.c_str(), Describe(o).c_str(), repeat, seconds, LuFlops(o.n) / seconds * 1e-12,
        Now() - factored, det.sign, det.log_abs);
    std::fflush(stdout);
  }
  return absl::OkStatus();
}

absl::Status CheckDistributed(const Options& o) {
  // The reference first, on GPU 0 alone, before the distributed parts take memory.
  DistributedDeterminant reference;
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaSetDevice(o.devices[0]));
  MATRIXD_RETURN_IF_ERROR(SingleGpuLu(
      o.n, cuda::GeneratedMatrix::kUniform, o.seed, nullptr, 1,
      [&reference](int, double, const DistributedDeterminant& det) { reference = det; }));
  MATRIXD_ASSIGN_OR_RETURN(auto lu, MakeLu(o));
  bool all_pass = true;
  for (const std::string matrix : {"uniform", "reversed_laplacian", "singular"}) {
    const bool laplacian = matrix == "reversed_laplacian";
    MATRIXD_RETURN_IF_ERROR(lu->Generate(
        laplacian ? cuda::GeneratedMatrix::kReversedLaplacian : cuda::GeneratedMatrix::kUniform,
        o.seed));
    if (matrix == "singular") MATRIXD_RETURN_IF_ERROR(MakeSingular(*lu, o));
    MATRIXD_RETURN_IF_ERROR(lu->Factor());
    MATRIXD_ASSIGN_OR_RETURN(DistributedDeterminant det, lu->Determinant());
    DistributedDeterminant expected = reference;
    const char* source = "cuSOLVER getrf on one GPU";
    if (laplacian) {
      expected = {.sign = (o.n / 2) % 2 == 0 ? 1 : -1,
                  .log_abs = std::log(static_cast<double>(o.n + 1))};
      source = "exact";
    } else if (matrix == "singular") {
      expected = {.sign = 0, .log_abs = -std::numeric_limits<double>::infinity()};
      source = "exact";
    }
    bool pass = det.sign == expected.sign;
    if (expected.sign == 0) {
      pass = pass && std::isinf(det.log_abs) && det.log_abs < 0;
    } else {
      const double tolerance = kLogDetTolerance * std::max(1.0, std::fabs(expected.log_abs));
      pass = pass && std::fabs(det.log_abs - expected.log_abs) <= tolerance;
    }
    all_pass = all_pass && pass;
    std::printf(
        "check %s %s matrix=%s sign=%d log_abs_det=%.12g expected_sign=%d "
        "expected_log_abs_det=%.12g (%s) %s\n",
        o.op.c_str(), Describe(o).c_str(), matrix.c_str(), det.sign, det.log_abs, expected.sign,
        expected.log_abs, source, pass ? "PASS" : "FAIL");
    std::fflush(stdout);
  }
  return all_pass ? absl::OkStatus()
                  : absl::InternalError(absl::StrCat(o.op, ": a determinant differs"));
}

int Probe() {
  int count = 0;
  const cudaError_t code = cudaGetDeviceCount(&count);
  if (code != cudaSuccess) {
    std::printf("probe no CUDA device (%s)\n", cudaGetErrorString(code));
    return kExitFailure;
  }
  std::printf("probe gpus=%d\n", count);
  for (int d = 0; d < count; ++d) {
    cudaDeviceProp prop{};
    if (cudaGetDeviceProperties(&prop, d) != cudaSuccess) return kExitFailure;
    std::printf("probe gpu=%d name=%s memory_gib=%.1f sms=%d\n", d, prop.name,
                static_cast<double>(prop.totalGlobalMem) / (1 << 30), prop.multiProcessorCount);
    for (int e = 0; e < count; ++e) {
      int can = 0;
      if (e != d && cudaDeviceCanAccessPeer(&can, d, e) == cudaSuccess) {
        std::printf("probe peer %d->%d %s\n", d, e, can != 0 ? "yes" : "no");
      }
    }
  }
  auto mg = CusolverMgLibrary::Load();
  std::printf("probe cusolverMg %s\n", mg.ok() ? "loaded" : mg.status().ToString().c_str());
  return 0;
}

int Run(const Options& o) {
  int count = 0;
  if (cudaGetDeviceCount(&count) != cudaSuccess || count < o.gpus) {
    std::fprintf(stderr, "%s: --gpus=%d but %d CUDA devices\n", o.op.c_str(), o.gpus, count);
    return kExitUnavailable;
  }
  absl::Status status;
  if (o.op == "getrf1") {
    status = BenchGetrf1(o);
  } else {
    status = o.check ? CheckDistributed(o) : BenchDistributed(o);
  }
  if (status.ok()) return 0;
  std::fprintf(stderr, "%s %s: %s\n", o.op.c_str(), Describe(o).c_str(), status.ToString().c_str());
  if (absl::IsResourceExhausted(status)) return kExitDoesNotFit;
  if (absl::IsUnavailable(status)) return kExitUnavailable;
  return kExitFailure;
}

}  // namespace
}  // namespace matrixd::multi_gpu

int main(int argc, char** argv) {
  absl::ParseCommandLine(argc, argv);
  if (absl::GetFlag(FLAGS_probe)) return matrixd::multi_gpu::Probe();
  matrixd::multi_gpu::Options o;
  o.op = absl::GetFlag(FLAGS_op);
  o.n = absl::GetFlag(FLAGS_n);
  o.gpus = absl::GetFlag(FLAGS_gpus);
  o.repeats = absl::GetFlag(FLAGS_repeats);
  o.block = absl::GetFlag(FLAGS_block);
  o.seed = absl::GetFlag(FLAGS_seed);
  o.check = absl::GetFlag(FLAGS_check);
  if (o.op != "getrf1" && o.op != "mg" && o.op != "own") {
    std::fprintf(stderr, "--op must be getrf1, mg or own, not %s\n", o.op.c_str());
    return 1;
  }
  if (o.op == "getrf1" && (o.gpus != 1 || o.check)) {
    std::fprintf(stderr, "--op=getrf1 is the one-GPU baseline: --gpus=1, no --check\n");
    return 1;
  }
  if (o.n < 1 || o.gpus < 1 || o.repeats < 0 || o.block < 1) {
    std::fprintf(stderr, "--n, --gpus and --block must be positive and --repeats not negative\n");
    return 1;
  }
  for (int d = 0; d < o.gpus; ++d) o.devices.push_back(d);
  return matrixd::multi_gpu::Run(o);
}
