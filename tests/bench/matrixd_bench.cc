// matrixd_bench: one table per operation and size from one run, our backends' times next to the
// libraries called directly on data already on the device (cuSOLVER getrf for the LU determinant,
// cuBLAS gemm for products, cuBLAS getrfBatched for batches of small LUs), next to the device part
// of our own operations (the kernels each times itself), the machine's copy bandwidth, NTL for
// determinants mod p, and the FP64 floor of the permanent, so that the gap between an operation
// and its yardstick (transfers, layout changes, our own kernels) is visible.
//
//   matrixd_bench [--quick] [--tables=NAME,...] [--repeats=3] [--no_gpu] [--no_cpu]
//     dense:        [--det_sizes=4096,8192,16384] [--gemm_n=8192]
//     factorize:    [--factor_n=4096]
//     batched:      [--batch=100000] [--batch_sizes=32,64]
//     condensation: [--step_n=8192] [--condensation_sizes=1024,4096,8192]
//     sparse:       [--sparse_n=16384] [--sparse_blocks=128,256] [--sparse_density=0.1]
//     permanent:    [--perm_n=36] [--perm_density=0.3] [--perm_head_rows=-1] (rows perm_n-4,
//                   perm_n-2, perm_n; the DGEMM rate at --gemm_n; the GPU's sparse walk once per
//                   head size, -1 auto, 0 block walk, 8,12,16,20 head walk; with --no_gpu the CPU
//                   backend's dense and sparse walks)
//     accuracy:     [--accuracy_sizes=20,24,28,32] [--accuracy_samples=5] (on the GPU; with
//                   --no_gpu on the CPU backend)
//     modular:      [--ntl_n=4096] [--cpu_modular_n=1024] [--primes=2147483629,65521] [--no_ntl]
//                   [--modp_look_ahead=1,0] [--staging_threads=4,8,16]
//                   [--modp_piece_rows=0,512,256] [--modp_overlap=1,0]
//     exact:        [--exact_sizes=500,1000] [--exact_bits=20] [--no_flint]
//                   [--exact_products=fused,cublas]
//     small:        [--small_sizes=8,32] [--small_count=8192] [--small_threads=1,4,16]
//     condition:    [--condition_sizes=4096,8192] (Factorize with estimate_condition, GPU and
//                   CPU; on the GPU also the LU determinant)
//     cpu:          [--cpu_n=2048] [--cpu_batch=10000] [--batch_sizes]
//
// NAME is one of bandwidth, dense, factorize, batched, condensation, sparse, permanent, accuracy,
// modular, exact, small, verify, condition, cpu; all run by default, the GPU ones only where there
// is a device. --quick shrinks every size; explicit sizes after or before it win. --no_cpu leaves
// out the CPU backend (its tables and its column of the modular table).
//
// Times are medians over --repeats runs after one warm-up run (CPU references that take seconds:
// one run). "ours" is ComputeStats::seconds (device events around the whole operation, transfers
// included); "wall" is the host's clock around the Backend call; "device part" is the sum of the
// operation's own kernel records (ComputeStats::kernels).
#include <cstdio>
#include <memory>
#include <string>
#include <utility>

#include "absl/status/statusor.h"
#include "absl/strings/str_cat.h"
#include "core/backend.h"
#include "core/cpu/cpu_backend.h"
#include "core/make_backend.h"
#include "tests/bench/bench_flags.h"
#include "tests/bench/bench_tables.h"

#ifdef MATRIXD_HAVE_CUDA
#include "core/cuda/cuda_backend.h"
#include "core/cuda/device_context.h"
#include "core/cuda/freivalds.h"
#endif

namespace matrixd::bench {
namespace {

#ifdef MATRIXD_HAVE_CUDA
// The GPU tables, in order; returns the CUDA backend for the tables that mix backends, or null
// when there is no device or setup failed.
std::unique_ptr<Backend> RunGpuTables(const Flags& flags) {
  if (CudaDeviceCount() == 0) {
    std::printf("# No CUDA device here: GPU tables skipped.\n");
    return nullptr;
  }
  absl::StatusOr<std::unique_ptr<Backend>> backend = MakeCudaBackend({});
  absl::StatusOr<std::unique_ptr<cuda::DeviceContext>> context = cuda::DeviceContext::Create(0);
  if (!backend.ok() || !context.ok()) {
    std::printf(
        "# CUDA setup failed, GPU tables skipped: %s\n",
        std::string((backend.ok() ? context.status() : backend.status()).ToString()).c_str());
    return nullptr;
  }
  Backend& gpu = **backend;
  cuda::DeviceContext& device = **context;
  const cudaDeviceProp& p = device.properties();
  std::printf("# GPU: %s, %d SMs, %.1f GiB, CC %d.%d\n", p.name, p.multiProcessorCount,
              p.totalGlobalMem / 1073741824.0, p.major, p.minor);
  if (flags.Runs("bandwidth")) BenchBandwidth(device, flags.repeats);
  if (flags.Runs("dense")) {
    BenchDeterminant(gpu, device, flags);
    BenchGemm(gpu, device, flags);
  }
  if (flags.Runs("factorize")) BenchFactorize(gpu, flags.factor_n, flags.repeats);
  if (flags.Runs("batched")) BenchBatchedLu(gpu, device, flags);
  if (flags.Runs("condensation")) BenchCondensation(gpu, device, flags);
  if (flags.Runs("sparse")) BenchBlockSparse(gpu, device, flags);
  if (flags.Runs("permanent")) BenchPermanent(gpu, device, flags);
  if (flags.Runs("accuracy")) BenchPermanentAccuracy(gpu, "GPU", flags);
  if (flags.Runs("verify")) {
    const auto tuned = [](bool own_kernels, bool beside_upload, int64_t a_piece_bytes,
                          bool staged_rows = true,
                          int64_t last_piece_bytes = cuda::FreivaldsTuning{}.last_piece_bytes) {
      return [=] {
        cuda::SetFreivaldsTuning({.own_kernels = own_kernels,
                                  .beside_upload = beside_upload,
                                  .a_piece_bytes = a_piece_bytes,
                                  .staged_rows = staged_rows,
                                  .last_piece_bytes = last_piece_bytes});
      };
    };
    const int64_t pieces = cuda::FreivaldsTuning{}.a_piece_bytes;
    BenchVerify("GPU", gpu, flags, 1, flags.repeats,
                {{"pieces", tuned(true, true, pieces)},
                 {"last4MiB", tuned(true, true, pieces, true, int64_t{4} << 20)},
                 {"unstaged", tuned(true, true, pieces, false)},
                 {"beside", tuned(true, true, 0)},
                 {"after", tuned(true, false, 0)},
                 {"cublas", tuned(false, false, 0)}},
                [] { cuda::SetFreivaldsTuning({}); });
    BenchThinProducts(device, flags);
  }
  if (flags.Runs("condition")) {
    BenchCondition("GPU", gpu, flags, 1, flags.repeats);
    BenchConditionSolves(device, flags);
    BenchNormPass(device, flags);
  }
  if (flags.Runs("refine")) BenchRefine("GPU", gpu, flags, 1, flags.repeats);
  if (flags.Runs("deterministic")) BenchDeterministic("GPU", gpu, flags, 1, flags.repeats);
  return *std::move(backend);
}
#endif

int Main(int argc, char** argv) {
  // Line by line, so that a run cut short (or piped into tee) keeps every finished table.
  std::setvbuf(stdout, nullptr, _IOLBF, 0);
  Flags flags;
  if (!ParseFlags(argc, argv, flags)) return 2;
  std::unique_ptr<Backend> gpu;
  if (flags.gpu) {
#ifdef MATRIXD_HAVE_CUDA
    gpu = RunGpuTables(flags);
#else
    std::printf("# This build has no CUDA backend: GPU tables skipped.\n");
#endif
  }
  std::unique_ptr<Backend> cpu = flags.cpu ? MakeCpuBackend() : nullptr;
  if (flags.Runs("modular")) BenchModularDeterminant(flags, gpu.get(), cpu.get());
  if (flags.Runs("exact")) BenchExactDeterminant(flags, gpu.get());
  if (flags.Runs("small")) {
#ifdef MATRIXD_HAVE_CUDA
    if (gpu != nullptr) {
      // As the server runs it (orders up to kHostDeterminantMaxOrder on the host), then every
      // order on the device: where the two cross is where that limit belongs.
      for (const int host_order : {kHostDeterminantMaxOrder, 0}) {
        BenchSmallRequests(
            absl::StrCat("GPU, host_determinant_max_order ", host_order),
            [host_order](int streams) -> std::unique_ptr<Backend> {
              absl::StatusOr<std::unique_ptr<Backend>> backend =
                  MakeCudaBackend({}, {}, streams, {}, {.determinant = host_order});
              return backend.ok() ? *std::move(backend) : nullptr;
            },
            flags);
      }
    }
#endif
    if (cpu != nullptr) {
      BenchSmallRequests(
          "CPU", [](int) -> std::unique_ptr<Backend> { return MakeCpuBackend(); }, flags);
    }
  }
  // One run per size on the CPU: a float64 product at n = 8192 takes tens of seconds there.
  if (cpu != nullptr && flags.Runs("verify")) {
    BenchVerify("CPU", *cpu, flags, 0, 1, {{"cpu", [] {}}}, [] {});
  }
  if (cpu != nullptr && flags.Runs("condition")) BenchCondition("CPU", *cpu, flags, 0, 1);
  if (cpu != nullptr && flags.Runs("refine")) BenchRefine("CPU", *cpu, flags, 0, flags.repeats);
  if (cpu != nullptr && flags.Runs("deterministic")) {
    BenchDeterministic("CPU", *cpu, flags, 1, flags.repeats);
  }
  if (cpu != nullptr && flags.Runs("cpu")) BenchCpu(*cpu, flags);
  // The CPU walks share the GPU's arithmetic but take 2^n n / cores time: their accuracy table runs
  // only when the GPU tables do not (--no_gpu), at sizes given for it.
  if (cpu != nullptr && !flags.gpu && flags.Runs("accuracy"))
    BenchPermanentAccuracy(*cpu, "CPU", flags);
  // Likewise the walks (the GPU's `permanent` table has its own dense and sparse rows).
  if (cpu != nullptr && !flags.gpu && flags.Runs("permanent")) {
    BenchPermanentWalks(*cpu, "CPU", flags);
  }
  return 0;
}

}  // namespace
}  // namespace matrixd::bench

int main(int argc, char** argv) { return matrixd::bench::Main(argc, argv); }
