#include "core/cuda/factorize_batch.h"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "core/cpu/factorize.h"
#include "core/cuda/batch_kernels.h"
#include "core/cuda/cuda_status.h"
#include "core/cuda/cuda_stream.h"
#include "core/cuda/dense_kernels.h"
#include "core/cuda/factorize_common.h"
#include "core/cuda/hermitian_device_check.h"
#include "core/cuda/host_registration.h"
#include "core/cuda/kernel_timer.h"
#include "core/cuda/library_types.h"
#include "core/validation.h"

// Layout: as in factorize.cc, a row-major matrix read column-major is its transpose. LU and QR
// transpose each matrix of the batch after the upload and their factors back before the download
// (LaunchBatchedTranspose); Cholesky and every solve but LU's work on the row-major data as it is.
//
// Transfers: a batch is all transfer and little arithmetic (100000 LUs of 32x32 are 0.8 GB each
// way against under 2 ms of getrfBatched on an H100), so large inputs and outputs are registered
// in place (HostRegistration) and copied at the copy engines' speed, and the outputs are allocated
// on the host while the device works, before the first download waits for it.

namespace matrixd::cuda {
namespace {

template <typename T>
using Device = typename LibraryTraits<T>::Device;

// `count` matrices of rows x cols, with nrhs right-hand sides each (0 without a solve).
struct Batch {
  int count = 0;
  int rows = 0;
  int cols = 0;
  int nrhs = 0;

  int64_t size() const { return int64_t{rows} * cols; }
};

// How an error names matrix `index` of the batch.
std::string Subject(int64_t index) { return absl::StrCat("matrix ", index, " of the batch"); }

// A device array of `count` pointers into `buffer`, one every `stride` elements of T: the form in
// which the batched routines take their matrices. Built on the device: no upload, no wait.
template <typename T>
absl::StatusOr<DeviceBuffer> PointersInto(const DeviceBuffer& buffer, int64_t stride, int count,
                                          DeviceContext& context) {
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer pointers,
                           context.Allocate(static_cast<size_t>(count) * sizeof(void*)));
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchFillPointers(pointers.as<void*>(), buffer.data(),
                                                  static_cast<size_t>(stride) * sizeof(T), count,
                                                  context.stream()));
  return pointers;
}

template <typename T>
Device<T>** PointerArray(const DeviceBuffer& pointers) {
  return pointers.as<Device<T>*>();
}

// The batched routines go out in slices of at most this many matrices. None documents a limit on
// the batch size; slices keep every launch they make well inside the 65535 blocks that a grid's
// y and z dimensions allow, whatever each routine does with them, at no measurable cost.
constexpr int kMaxMatricesPerCall = 65535;

// Runs call(first, size) over consecutive slices of [0, count).
template <typename Call>
absl::Status InSlices(int count, Call&& call) {
  for (int first = 0; first < count; first += kMaxMatricesPerCall) {
    MATRIXD_RETURN_IF_ERROR(call(first, std::min(kMaxMatricesPerCall, count - first)));
  }
  return absl::OkStatus();
}

// getrsBatched and geqrfBatched report argument errors through a host int.
absl::Status CheckHostInfo(int info, const char* routine) {
  if (info < 0) {
    return absl::InternalError(absl::StrCat(routine, " rejected its argument ", -info, " (info)"));
  }
  return absl::OkStatus();
}

// What HostRegistration may page-lock of an operand: its bytes in host memory, nothing of one in
// device memory (a resident matrix).
const void* HostBytes(const MatrixView* view) {
  return view != nullptr && !view->on_device() ? view->data : nullptr;
}

absl::Status RequireSquare(const Batch& batch, const char* what) {
  if (batch.rows != batch.cols) {
    return absl::InvalidArgumentError(absl::StrCat("each matrix of the batch is ", batch.rows, "x",
                                                   batch.cols, "; ", what,
                                                   " needs square matrices"));
  }
  return absl::OkStatus();
}

// ---- LU ----

// cuBLAS does not promise LAPACK's handling of an exactly zero pivot (skip the division by it
// and carry on): on the H100 getrfBatched left factors of singular matrices that do not
// reproduce P A, finite or not. So every matrix with a zero pivot (or an Inf/NaN in its factors)
// is factored again by LAPACK on the host (a batch in device memory copied there one matrix at a
// time): such matrices are rare, and their factors are then those of the unbatched path.
// Updates lu, permutation and singular_columns.
template <typename T>
absl::Status RefactorOnHost(const MatrixView& a, const Batch& batch, std::span<const int> redo,
                            std::span<int64_t> permutation, FactorizeResult& result,
                            DeviceContext& context) {
  const size_t matrix_bytes = static_cast<size_t>(batch.size()) * sizeof(T);
  Matrix fetched;  // a matrix of a batch in device memory (a resident operand), on the host
  for (int b = 0; b < batch.count; ++b) {
    if (redo[b] == 0) continue;
    MatrixView one{.rows = batch.rows,
                   .cols = batch.cols,
                   .dtype = a.dtype,
                   .data = a.data + static_cast<size_t>(b) * matrix_bytes};
    if (a.on_device()) {
      if (fetched.byte_size() == 0) fetched = Matrix::ForOverwrite(batch.rows, batch.cols, a.dtype);
      MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(fetched.mutable_bytes(), one.data, matrix_bytes,
                                                   cudaMemcpyDeviceToHost, context.stream()));
      MATRIXD_RETURN_IF_ERROR(context.Synchronize());
      one = fetched.view();
    }
    MATRIXD_ASSIGN_OR_RETURN(
        FactorizeResult host,
        cpu::Factorize(one, {.kind = FactorizationKind::kLu}, nullptr, 1, nullptr));
    std::memcpy(result.lu.mutable_bytes() + static_cast<size_t>(b) * matrix_bytes, host.lu.bytes(),
                matrix_bytes);
    std::copy(host.permutation.begin(), host.permutation.end(),
              permutation.begin() + int64_t{b} * batch.rows);
    result.singular_columns[b] = host.singular_column.value_or(-1);
  }
  return absl::OkStatus();
}

// singular_column: that of the first singular matrix of the batch.
void SetFirstSingularColumn(FactorizeResult& result) {
  for (const int64_t column : result.singular_columns) {
    if (column >= 0) {
      result.singular_column = column;
      break;
    }
  }
}

// The device buffers of a batched LU of `count` n x n matrices: the operand as uploaded
// (row-major), the factors (column-major), getrf's pivots, the permutations, and per matrix
// getrf's info, the first zero pivot and the Inf/NaN flag of the factors (3 ints each).
struct BatchedLuBuffers {
  DeviceBuffer staging;
  DeviceBuffer factors;
  DeviceBuffer pivots;
  DeviceBuffer permutation;
  DeviceBuffer flags;
  int count = 0;

  static absl::StatusOr<BatchedLuBuffers> Allocate(const MatrixView& a, int n, int count,
                                                   DeviceContext& context) {
    const size_t entries = static_cast<size_t>(count) * n;
    BatchedLuBuffers buffers;
    buffers.count = count;
    MATRIXD_ASSIGN_OR_RETURN(buffers.staging, context.Allocate(a.byte_size()));
    MATRIXD_ASSIGN_OR_RETURN(buffers.factors, context.Allocate(a.byte_size()));
    MATRIXD_ASSIGN_OR_RETURN(buffers.pivots, context.Allocate(entries * sizeof(int)));
    MATRIXD_ASSIGN_OR_RETURN(buffers.permutation, context.Allocate(entries * sizeof(int64_t)));
    MATRIXD_ASSIGN_OR_RETURN(buffers.flags,
                             context.Allocate(static_cast<size_t>(count) * 3 * sizeof(int)));
    return buffers;
  }
  int* info() { return flags.as<int>(); }
  int* singular() { return info() + count; }
  int* nonfinite() { return singular() + count; }
  int* ipiv() { return pivots.as<int>(); }

  // The flags on the host (info, first zero pivot, Inf/NaN of the factors; `count` each), after
  // the queued work; INTERNAL when getrfBatched rejected an argument.
  absl::StatusOr<std::vector<int>> DownloadFlags(DeviceContext& context) const {
    std::vector<int> host(static_cast<size_t>(count) * 3);
    MATRIXD_RETURN_IF_ERROR(context.Download(flags, host.data(), host.size() * sizeof(int)));
    for (int b = 0; b < count; ++b) {
      if (host[b] < 0) {
        return absl::InternalError(absl::StrCat("cublas<t>getrfBatched rejected its argument ",
                                                -host[b], " (info of ", Subject(b), ")"));
      }
    }
    return host;
  }
};

// getrfBatched on each A, getrsBatched for A X = B. Pivots are LAPACK's (1-based row swaps in
// sequence); LaunchBatchedLuSummary turns them into permutations on the device and finds each
// matrix's first zero pivot.
template <typename T>
absl::StatusOr<FactorizeResult> BatchedLu(const MatrixView& a, const MatrixView* rhs,
                                          const Batch& batch, const ResultDestinations& out,
                                          DeviceContext& context) {
  using Traits = LibraryTraits<T>;
  MATRIXD_RETURN_IF_ERROR(RequireSquare(batch, "a batched LU"));
  const int n = batch.rows;
  const int count = batch.count;
  const cudaStream_t stream = context.stream();

  MATRIXD_ASSIGN_OR_RETURN(BatchedLuBuffers buffers,
                           BatchedLuBuffers::Allocate(a, n, count, context));
  DeviceBuffer& staging = buffers.staging;
  DeviceBuffer& factors = buffers.factors;
  DeviceBuffer& permutation = buffers.permutation;
  int* info = buffers.info();
  int* singular = buffers.singular();
  int* nonfinite = buffers.nonfinite();
  int* ipiv = buffers.ipiv();

  const HostRegistration a_pin(HostBytes(&a), a.byte_size(), stream);
  MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, staging, a.byte_size()));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchBatchedTranspose(staging.data(), n, n, count, factors.data(), sizeof(T), stream));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factor_pointers,
                           PointersInto<T>(factors, batch.size(), count, context));
  Device<T>** lu = PointerArray<T>(factor_pointers);
  absl::StatusOr<KernelTimer> getrf_timer = KernelTimer::Start(stream);
  MATRIXD_RETURN_IF_ERROR(getrf_timer.status());
  MATRIXD_RETURN_IF_ERROR(InSlices(count, [&](int first, int size) -> absl::Status {
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::getrf_batched(
        context.cublas(), n, lu + first, n, ipiv + int64_t{first} * n, info + first, size));
    return absl::OkStatus();
  }));
  MATRIXD_RETURN_IF_ERROR(getrf_timer->Stop());
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchBatchedLuSummary(
      factors.as<T>(), ipiv, n, count, permutation.as<int64_t>(), singular, nonfinite, stream));

  // The solve is queued before the pivots are known: on a singular matrix it produces Inf/NaN
  // that are discarded, which costs less than a round trip to the host in between.
  DeviceBuffer rhs_staging;
  const int nrhs = batch.nrhs;
  const HostRegistration rhs_pin(HostBytes(rhs), rhs != nullptr ? rhs->byte_size() : 0, stream);
  if (rhs != nullptr) {
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer rhs_staging_new, context.Allocate(rhs->byte_size()));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer rhs_columns, context.Allocate(rhs->byte_size()));
    rhs_staging = std::move(rhs_staging_new);
    MATRIXD_RETURN_IF_ERROR(context.Upload(rhs->data, rhs_staging, rhs->byte_size()));
    // Each row-major n x nrhs right-hand side reads as nrhs x n column-major.
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchBatchedTranspose(rhs_staging.data(), nrhs, n, count,
                                                        rhs_columns.data(), sizeof(T), stream));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer rhs_pointers,
                             PointersInto<T>(rhs_columns, int64_t{n} * nrhs, count, context));
    Device<T>** b = PointerArray<T>(rhs_pointers);
    MATRIXD_RETURN_IF_ERROR(InSlices(count, [&](int first, int size) -> absl::Status {
      int host_info = 0;
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::getrs_batched(context.cublas(), CUBLAS_OP_N, n, nrhs,
                                                         lu + first, n, ipiv + int64_t{first} * n,
                                                         b + first, n, &host_info, size));
      return CheckHostInfo(host_info, "cublas<t>getrsBatched");
    }));
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchBatchedTranspose(rhs_columns.data(), n, nrhs, count,
                                                        rhs_staging.data(), sizeof(T), stream));
  }
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchBatchedTranspose(factors.data(), n, n, count, staging.data(), sizeof(T), stream));

  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  result.lu = HostMatrix<T>(out, "lu", a.rows, n);
  result.permutation.resize(static_cast<size_t>(count) * n);
  if (rhs != nullptr) result.solution = HostMatrix<T>(out, "solution", rhs->rows, nrhs);
  const HostRegistration lu_pin(result.lu.bytes(), result.lu.byte_size(), stream);
  const HostRegistration permutation_pin(result.permutation.data(),
                                         result.permutation.size() * sizeof(int64_t), stream);
  const HostRegistration solution_pin(rhs != nullptr ? result.solution->bytes() : nullptr,
                                      rhs != nullptr ? result.solution->byte_size() : 0, stream);

  MATRIXD_ASSIGN_OR_RETURN(const std::vector<int> host_flags, buffers.DownloadFlags(context));
  const std::span<const int> infos(host_flags.data(), count);
  const std::span<const int> singular_columns(host_flags.data() + count, count);
  const std::span<const int> nonfinite_flags(host_flags.data() + 2 * int64_t{count}, count);
  if (rhs != nullptr) {
    for (int b = 0; b < count; ++b) {
      if (const int k = singular_columns[b]; k >= 0) {
        return absl::FailedPreconditionError(absl::StrCat(Subject(b), " is singular: U[", k, ",", k,
                                                          "] = 0 at column ", k, "; cannot solve"));
      }
    }
  }

  MATRIXD_RETURN_IF_ERROR(
      context.Download(staging, result.lu.mutable_bytes(), result.lu.byte_size()));
  MATRIXD_RETURN_IF_ERROR(context.Download(permutation, result.permutation.data(),
                                           result.permutation.size() * sizeof(int64_t)));
  if (rhs != nullptr) {
    MATRIXD_RETURN_IF_ERROR(context.Download(rhs_staging, result.solution->mutable_bytes(),
                                             result.solution->byte_size()));
  }
  result.singular_columns.assign(singular_columns.begin(), singular_columns.end());
  std::vector<int> redo(static_cast<size_t>(count));
  for (int b = 0; b < count; ++b) {
    redo[b] = nonfinite_flags[b] != 0 || infos[b] > 0 || singular_columns[b] >= 0 ? 1 : 0;
  }
  MATRIXD_RETURN_IF_ERROR(RefactorOnHost<T>(a, batch, redo, result.permutation, result, context));
  SetFirstSingularColumn(result);

  result.stats.flops =
      kFlopsPerUpdate<T> / 2.0 * count * (LuFlops(n, n) + 2.0 * n * static_cast<double>(n) * nrhs);
  // Transfers, plus each transpose's read and write and the factorisation's own pass.
  result.stats.bytes_moved = 7 * a.byte_size() + (rhs != nullptr ? 6 * rhs->byte_size() : 0);
  MATRIXD_RETURN_IF_ERROR(getrf_timer->AppendTo(&result.stats, "cublas_getrf_batched",
                                                2 * a.byte_size(),
                                                kFlopsPerUpdate<T> / 2.0 * count * LuFlops(n, n)));
  return result;
}

// ---- LU without a right-hand side: copies overlapped with the factorization ----

// Each chunk of the pipeline is about this many bytes of matrices: large enough that a copy runs
// at the copy engine's full speed and a getrfBatched call fills the device, small enough that
// the first upload and the last download, which nothing overlaps, stay under a millisecond.
constexpr size_t kPipelineChunkBytes = size_t{32} << 20;

// The pipeline's copy streams (one in, one out; the context's stream computes). Destroyed on every
// return path after waiting for both, so that no copy still reads or writes a buffer or host range
// declared before it.
struct CopyStreams {
  static absl::StatusOr<CopyStreams> Create() {
    MATRIXD_ASSIGN_OR_RETURN(CudaStream in, CudaStream::Create());
    MATRIXD_ASSIGN_OR_RETURN(CudaStream out, CudaStream::Create());
    return CopyStreams{std::move(in), std::move(out)};
  }
  CopyStreams(CudaStream in_stream, CudaStream out_stream)
      : in(std::move(in_stream)), out(std::move(out_stream)) {}
  CopyStreams(CopyStreams&&) = default;
  CopyStreams& operator=(CopyStreams&&) = delete;
  ~CopyStreams() {
    for (const CudaStream* stream : {&in, &out}) {
      // Nothing to report from here; a failed wait surfaces at the next call on the context.
      if (stream->get() != nullptr) static_cast<void>(cudaStreamSynchronize(stream->get()));
    }
  }

  CudaStream in;
  CudaStream out;
};

// The sum of the per-chunk getrf timers as one kernel record.
absl::Status AppendSummed(std::vector<KernelTimer>& timers, ComputeStats* stats, const char* kernel,
                          uint64_t bytes, double flops) {
  ComputeStats each;
  for (KernelTimer& timer : timers) MATRIXD_RETURN_IF_ERROR(timer.AppendTo(&each, kernel, 0, 0));
  double seconds = 0;
  for (const KernelRecord& record : each.kernels) seconds += record.seconds;
  stats->kernels.push_back({.kernel = kernel, .seconds = seconds, .bytes = bytes, .flops = flops});
  return absl::OkStatus();
}

// The batch goes through in chunks of matrices on three streams: chunk c's upload (stream in),
// its finiteness check, transposes, getrfBatched and pivot summary (the context's stream), and its
// download (stream out) run while chunk c+1 uploads and chunk c-1 downloads, so the wall time
// approaches that of the larger copy instead of the sum of both and the work between. Each
// matrix goes through the same getrfBatched as in BatchedLu (a chunk is a slice of at most
// kMaxMatricesPerCall), the flags come back once at the end, and the operand's entries are
// checked on the device as each chunk lands (the first Inf/NaN in row-major order is named as
// ValidateFactorize names it), so the server need not scan it on the host.
template <typename T>
absl::StatusOr<FactorizeResult> PipelinedLu(const MatrixView& a, const Batch& batch,
                                            const ResultDestinations& out, DeviceContext& context) {
  using Traits = LibraryTraits<T>;
  MATRIXD_RETURN_IF_ERROR(RequireSquare(batch, "a batched LU"));
  const int n = batch.rows;
  const int count = batch.count;
  const size_t matrix_bytes = static_cast<size_t>(batch.size()) * sizeof(T);
  const int chunk = static_cast<int>(std::clamp<size_t>(kPipelineChunkBytes / matrix_bytes, 1,
                                                        static_cast<size_t>(kMaxMatricesPerCall)));
  const cudaStream_t compute = context.stream();
  // A complex entry is two components; the scan reports the first component.
  constexpr size_t kComponent = kIsComplex<T> ? sizeof(T) / 2 : sizeof(T);
  constexpr int64_t kComponentsPerEntry = kIsComplex<T> ? 2 : 1;

  MATRIXD_ASSIGN_OR_RETURN(BatchedLuBuffers buffers,
                           BatchedLuBuffers::Allocate(a, n, count, context));
  DeviceBuffer& staging = buffers.staging;
  DeviceBuffer& factors = buffers.factors;
  DeviceBuffer& permutation = buffers.permutation;
  // The first non-finite component of the operand (UINT64_MAX: none).
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer first_bad, context.Allocate(sizeof(uint64_t)));
  int* info = buffers.info();
  int* singular = buffers.singular();
  int* nonfinite = buffers.nonfinite();
  int* ipiv = buffers.ipiv();
  MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemsetAsync(first_bad.data(), 0xff, sizeof(uint64_t), compute));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factor_pointers,
                           PointersInto<T>(factors, batch.size(), count, context));
  Device<T>** lu = PointerArray<T>(factor_pointers);

  FactorizeResult result;
  result.kind = FactorizationKind::kLu;
  result.lu = HostMatrix<T>(out, "lu", a.rows, n);
  const size_t pivot_count = static_cast<size_t>(count) * n;
  std::span<int64_t> host_permutation = out.Indices("permutation", pivot_count);
  result.permutation_in_destination = !host_permutation.empty();
  if (!result.permutation_in_destination) {
    result.permutation.resize(pivot_count);
    host_permutation = result.permutation;
  }
  const HostRegistration a_pin(HostBytes(&a), a.byte_size(), compute);
  const HostRegistration lu_pin(result.lu.bytes(), result.lu.byte_size(), compute);
  const HostRegistration permutation_pin(
      result.permutation_in_destination ? nullptr : host_permutation.data(),
      host_permutation.size_bytes(), compute);

  // Declared after every buffer and host range the copies use: destroyed (waited for) first.
  MATRIXD_ASSIGN_OR_RETURN(CopyStreams streams, CopyStreams::Create());
  const cudaStream_t in = streams.in.get();
  const cudaStream_t down = streams.out.get();
  MATRIXD_ASSIGN_OR_RETURN(CudaEvent allocated, CudaEvent::Create());
  MATRIXD_ASSIGN_OR_RETURN(CudaEvent uploaded, CudaEvent::Create());
  MATRIXD_ASSIGN_OR_RETURN(CudaEvent computed, CudaEvent::Create());
  MATRIXD_ASSIGN_OR_RETURN(CudaEvent downloaded, CudaEvent::Create());
  // The buffers were allocated in the compute stream's order.
  MATRIXD_RETURN_IF_ERROR(allocated.Record(compute));
  MATRIXD_RETURN_IF_ERROR(allocated.MakeWait(in));
  MATRIXD_RETURN_IF_ERROR(allocated.MakeWait(down));

  absl::StatusOr<KernelTimer> copy_in_timer = KernelTimer::Start(in);
  MATRIXD_RETURN_IF_ERROR(copy_in_timer.status());
  std::optional<KernelTimer> copy_out_timer;
  std::vector<KernelTimer> getrf_timers;
  for (int first = 0; first < count; first += chunk) {
    const int size = std::min(chunk, count - first);
    const size_t offset = static_cast<size_t>(first) * matrix_bytes;
    const size_t bytes = static_cast<size_t>(size) * matrix_bytes;
    const int64_t pivot_offset = int64_t{first} * n;
    // Events are waited for right after each record, so two of them serve every chunk.
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(staging.as<std::byte>() + offset, a.data + offset,
                                                 bytes, cudaMemcpyDefault, in));
    MATRIXD_RETURN_IF_ERROR(uploaded.Record(in));
    MATRIXD_RETURN_IF_ERROR(uploaded.MakeWait(compute));

    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchFirstNonFinite(
        staging.as<std::byte>() + offset, static_cast<int64_t>(bytes / kComponent), kComponent,
        static_cast<uint64_t>(offset / kComponent), first_bad.as<unsigned long long>(), compute));
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchBatchedTranspose(staging.as<std::byte>() + offset, n, n,
                                                        size, factors.as<std::byte>() + offset,
                                                        sizeof(T), compute));
    absl::StatusOr<KernelTimer> getrf_timer = KernelTimer::Start(compute);
    MATRIXD_RETURN_IF_ERROR(getrf_timer.status());
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::getrf_batched(context.cublas(), n, lu + first, n,
                                                       ipiv + pivot_offset, info + first, size));
    MATRIXD_RETURN_IF_ERROR(getrf_timer->Stop());
    getrf_timers.push_back(*std::move(getrf_timer));
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchBatchedLuSummary(
        factors.as<T>() + static_cast<size_t>(first) * batch.size(), ipiv + pivot_offset, n, size,
        permutation.as<int64_t>() + pivot_offset, singular + first, nonfinite + first, compute));
    // Back to row-major where the chunk was uploaded: that copy is already consumed.
    MATRIXD_CUDA_RETURN_IF_ERROR(LaunchBatchedTranspose(factors.as<std::byte>() + offset, n, n,
                                                        size, staging.as<std::byte>() + offset,
                                                        sizeof(T), compute));
    MATRIXD_RETURN_IF_ERROR(computed.Record(compute));
    MATRIXD_RETURN_IF_ERROR(computed.MakeWait(down));

    if (!copy_out_timer.has_value()) {  // from the first chunk's download on, not before
      absl::StatusOr<KernelTimer> timer = KernelTimer::Start(down);
      MATRIXD_RETURN_IF_ERROR(timer.status());
      copy_out_timer.emplace(*std::move(timer));
    }
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(result.lu.mutable_bytes() + offset,
                                                 staging.as<std::byte>() + offset, bytes,
                                                 cudaMemcpyDefault, down));
    MATRIXD_CUDA_RETURN_IF_ERROR(cudaMemcpyAsync(
        host_permutation.data() + pivot_offset, permutation.as<int64_t>() + pivot_offset,
        static_cast<size_t>(size) * n * sizeof(int64_t), cudaMemcpyDefault, down));
  }
  MATRIXD_RETURN_IF_ERROR(copy_in_timer->Stop());
  MATRIXD_RETURN_IF_ERROR(copy_out_timer->Stop());
  MATRIXD_RETURN_IF_ERROR(downloaded.Record(down));
  MATRIXD_RETURN_IF_ERROR(downloaded.MakeWait(compute));

  // On the compute stream, after every download: these return once all has landed.
  uint64_t first_bad_component = 0;
  MATRIXD_RETURN_IF_ERROR(context.Download(first_bad, &first_bad_component, sizeof(uint64_t)));
  if (first_bad_component != ~uint64_t{0}) {
    return NonFiniteEntryError(
        "matrix", static_cast<int64_t>(first_bad_component) / kComponentsPerEntry, a.cols);
  }
  MATRIXD_ASSIGN_OR_RETURN(const std::vector<int> host_flags, buffers.DownloadFlags(context));
  const std::span<const int> infos(host_flags.data(), count);
  const std::span<const int> singular_columns(host_flags.data() + count, count);
  const std::span<const int> nonfinite_flags(host_flags.data() + 2 * int64_t{count}, count);
  result.singular_columns.assign(singular_columns.begin(), singular_columns.end());
  std::vector<int> redo(static_cast<size_t>(count));
  for (int b = 0; b < count; ++b) {
    redo[b] = nonfinite_flags[b] != 0 || infos[b] > 0 || singular_columns[b] >= 0 ? 1 : 0;
  }
  MATRIXD_RETURN_IF_ERROR(RefactorOnHost<T>(a, batch, redo, host_permutation, result, context));
  SetFirstSingularColumn(result);

  result.stats.flops = kFlopsPerUpdate<T> / 2.0 * count * LuFlops(n, n);
  // Transfers, the finiteness pass, each transpose's read and write and the factorisation's own.
  result.stats.bytes_moved = 8 * a.byte_size();
  MATRIXD_RETURN_IF_ERROR(copy_in_timer->AppendTo(&result.stats, "copy_in", a.byte_size(), 0));
  MATRIXD_RETURN_IF_ERROR(AppendSummed(getrf_timers, &result.stats, "cublas_getrf_batched",
                                       2 * a.byte_size(), result.stats.flops));
  MATRIXD_RETURN_IF_ERROR(copy_out_timer->AppendTo(
      &result.stats, "copy_out", a.byte_size() + pivot_count * sizeof(int64_t), 0));
  return result;
}

// ---- Cholesky ----

// As in the unbatched path (factorize.cc, CholeskyOf): the row-major array read column-major is
// conj(A) for Hermitian A; potrf with UPPER factors it as U^H U and U read row-major is L. A X = R
// becomes X^T U^H U = R^T, two right-side triangular solves on the row-major R in place.
template <typename T>
absl::StatusOr<FactorizeResult> BatchedCholesky(const MatrixView& a, const MatrixView* rhs,
                                                const Batch& batch, const ResultDestinations& out,
                                                DeviceContext& context) {
  using Traits = LibraryTraits<T>;
  MATRIXD_RETURN_IF_ERROR(RequireSquare(batch, "Cholesky"));
  const int n = batch.rows;
  const int count = batch.count;
  const int nrhs = batch.nrhs;
  const cudaStream_t stream = context.stream();
  // Host operands were checked by the caller's validation (core/validation.h); a batch in device
  // memory (a resident matrix) is checked where it lies, each member against its own entries.
  if (a.on_device()) {
    MATRIXD_RETURN_IF_ERROR(
        RequireHermitianOnDevice(reinterpret_cast<const T*>(a.data), n, count, "matrix", context));
  }

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factor, context.Allocate(a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer infos,
                           context.Allocate(static_cast<size_t>(count) * sizeof(int)));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      cudaMemsetAsync(infos.data(), 0, static_cast<size_t>(count) * sizeof(int), stream));
  const HostRegistration a_pin(HostBytes(&a), a.byte_size(), stream);
  MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, factor, a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factor_pointers,
                           PointersInto<T>(factor, batch.size(), count, context));
  Device<T>** u = PointerArray<T>(factor_pointers);
  absl::StatusOr<KernelTimer> potrf_timer = KernelTimer::Start(stream);
  MATRIXD_RETURN_IF_ERROR(potrf_timer.status());
  MATRIXD_RETURN_IF_ERROR(InSlices(count, [&](int first, int size) -> absl::Status {
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::potrf_batched(context.cusolver(), CUBLAS_FILL_MODE_UPPER,
                                                       n, u + first, n, infos.as<int>() + first,
                                                       size));
    return absl::OkStatus();
  }));
  MATRIXD_RETURN_IF_ERROR(potrf_timer->Stop());

  DeviceBuffer solution;
  const HostRegistration rhs_pin(HostBytes(rhs), rhs != nullptr ? rhs->byte_size() : 0, stream);
  if (rhs != nullptr) {
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer solution_new, context.Allocate(rhs->byte_size()));
    solution = std::move(solution_new);
    MATRIXD_RETURN_IF_ERROR(context.Upload(rhs->data, solution, rhs->byte_size()));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer solution_pointers,
                             PointersInto<T>(solution, int64_t{n} * nrhs, count, context));
    Device<T>** x = PointerArray<T>(solution_pointers);
    const Device<T> one = Traits::One();
    // Y U = R^T, then X^T U^H = Y. A matrix that is not positive definite gets garbage, which is
    // discarded below.
    MATRIXD_RETURN_IF_ERROR(InSlices(count, [&](int first, int size) -> absl::Status {
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm_batched(
          context.cublas(), CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, CUBLAS_OP_N,
          CUBLAS_DIAG_NON_UNIT, nrhs, n, &one, u + first, n, x + first, nrhs, size));
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm_batched(
          context.cublas(), CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_UPPER, Traits::kAdjoint,
          CUBLAS_DIAG_NON_UNIT, nrhs, n, &one, u + first, n, x + first, nrhs, size));
      return absl::OkStatus();
    }));
  }
  // potrf leaves the other triangle as it was (A's upper triangle, row-major).
  MATRIXD_CUDA_RETURN_IF_ERROR(LaunchBatchedZeroStrictTriangle(
      factor.data(), n, n, count, sizeof(T), Triangle::kUpper, stream));

  FactorizeResult result;
  result.kind = FactorizationKind::kCholesky;
  result.l = HostMatrix<T>(out, "l", a.rows, n);
  if (rhs != nullptr) result.solution = HostMatrix<T>(out, "solution", rhs->rows, nrhs);
  const HostRegistration l_pin(result.l.bytes(), result.l.byte_size(), stream);
  const HostRegistration solution_pin(rhs != nullptr ? result.solution->bytes() : nullptr,
                                      rhs != nullptr ? result.solution->byte_size() : 0, stream);

  std::vector<int> host_infos(count);
  MATRIXD_RETURN_IF_ERROR(
      context.Download(infos, host_infos.data(), host_infos.size() * sizeof(int)));
  for (int b = 0; b < count; ++b) {
    if (host_infos[b] < 0) {
      return absl::InternalError(absl::StrCat("cusolverDn<t>potrfBatched rejected its argument ",
                                              -host_infos[b], " (info of ", Subject(b), ")"));
    }
  }
  for (int b = 0; b < count; ++b) {
    if (host_infos[b] > 0) {
      return absl::FailedPreconditionError(
          absl::StrCat(Subject(b), " is not positive definite: the leading minor of order ",
                       host_infos[b], " is not positive"));
    }
  }

  MATRIXD_RETURN_IF_ERROR(context.Download(factor, result.l.mutable_bytes(), result.l.byte_size()));
  if (rhs != nullptr) {
    MATRIXD_RETURN_IF_ERROR(
        context.Download(solution, result.solution->mutable_bytes(), result.solution->byte_size()));
  }
  const double nd = n;
  // potrf: n^3 / 6 multiply-adds; the two triangular solves n^2 / 2 each per right-hand side.
  result.stats.flops = kFlopsPerUpdate<T> * count * (nd * nd * nd / 6.0 + nd * nd * nrhs);
  result.stats.bytes_moved = 4 * a.byte_size() + (rhs != nullptr ? 4 * rhs->byte_size() : 0);
  MATRIXD_RETURN_IF_ERROR(potrf_timer->AppendTo(&result.stats, "cusolver_potrf_batched",
                                                2 * a.byte_size(),
                                                kFlopsPerUpdate<T> * count * nd * nd * nd / 6.0));
  return result;
}

// ---- QR ----

// geqrfBatched on each A (m x n); R is read out of the upper triangle and Q formed from the
// reflectors by LaunchBatchedFormQ (cuBLAS has no batched orgqr). The least-squares solve
// (m >= n, so k = n) is X = R^-1 (Q^H B), all in row-major: Y^T = B^T conj(Q) is a strided batched
// gemm on B and Q read column-major (B^T and Q^T, whose conjugate transpose is conj(Q)), and
// R X = Y is X^T R^T = Y^T, a right-side triangular solve with the row-major R read
// column-major (R^T, lower triangular).
template <typename T>
absl::StatusOr<FactorizeResult> BatchedQr(const MatrixView& a, const MatrixView* rhs,
                                          const Batch& batch, const ResultDestinations& out,
                                          DeviceContext& context) {
  using Traits = LibraryTraits<T>;
  const int m = batch.rows;
  const int n = batch.cols;
  const int k = std::min(m, n);
  const int count = batch.count;
  const int nrhs = batch.nrhs;
  const cudaStream_t stream = context.stream();
  if (rhs != nullptr && m < n) {
    return absl::InvalidArgumentError(absl::StrCat("each matrix of the batch is ", m, "x", n,
                                                   "; a QR solve needs rows >= cols (least "
                                                   "squares)"));
  }

  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer staging, context.Allocate(a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factors, context.Allocate(a.byte_size()));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer tau,
                           context.Allocate(static_cast<size_t>(count) * k * sizeof(T)));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer r,
                           context.Allocate(static_cast<size_t>(count) * k * n * sizeof(T)));
  const HostRegistration a_pin(HostBytes(&a), a.byte_size(), stream);
  MATRIXD_RETURN_IF_ERROR(context.Upload(a.data, staging, a.byte_size()));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchBatchedTranspose(staging.data(), n, m, count, factors.data(), sizeof(T), stream));
  // Q (m x k per matrix, k <= n) goes where the input was: its staging copy is no longer needed.
  DeviceBuffer& q = staging;
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer factor_pointers,
                           PointersInto<T>(factors, batch.size(), count, context));
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer tau_pointers, PointersInto<T>(tau, k, count, context));
  Device<T>** reflectors = PointerArray<T>(factor_pointers);
  Device<T>** scales = PointerArray<T>(tau_pointers);
  absl::StatusOr<KernelTimer> geqrf_timer = KernelTimer::Start(stream);
  MATRIXD_RETURN_IF_ERROR(geqrf_timer.status());
  MATRIXD_RETURN_IF_ERROR(InSlices(count, [&](int first, int size) -> absl::Status {
    int host_info = 0;
    MATRIXD_CUDA_RETURN_IF_ERROR(Traits::geqrf_batched(context.cublas(), m, n, reflectors + first,
                                                       m, scales + first, &host_info, size));
    return CheckHostInfo(host_info, "cublas<t>geqrfBatched");
  }));
  MATRIXD_RETURN_IF_ERROR(geqrf_timer->Stop());
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchBatchedUpperTriangle(factors.data(), m, n, k, count, r.data(), sizeof(T), stream));
  MATRIXD_CUDA_RETURN_IF_ERROR(
      LaunchBatchedFormQ(factors.as<T>(), tau.as<T>(), m, n, k, count, q.as<T>(), stream));

  DeviceBuffer solution;
  const HostRegistration rhs_pin(HostBytes(rhs), rhs != nullptr ? rhs->byte_size() : 0, stream);
  if (rhs != nullptr) {
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer b, context.Allocate(rhs->byte_size()));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer y,
                             context.Allocate(static_cast<size_t>(count) * n * nrhs * sizeof(T)));
    MATRIXD_RETURN_IF_ERROR(context.Upload(rhs->data, b, rhs->byte_size()));
    const Device<T> one = Traits::One();
    const Device<T> zero = Traits::Zero();
    const int64_t b_stride = int64_t{m} * nrhs;
    const int64_t q_stride = int64_t{m} * k;
    const int64_t y_stride = int64_t{k} * nrhs;
    MATRIXD_RETURN_IF_ERROR(InSlices(count, [&](int first, int size) -> absl::Status {
      MATRIXD_CUDA_RETURN_IF_ERROR(
          Traits::gemm_strided_batched(context.cublas(), CUBLAS_OP_N, Traits::kAdjoint, nrhs, k, m,
                                       &one, b.as<Device<T>>() + first * b_stride, nrhs, b_stride,
                                       q.as<Device<T>>() + first * q_stride, k, q_stride, &zero,
                                       y.as<Device<T>>() + first * y_stride, nrhs, y_stride, size));
      return absl::OkStatus();
    }));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer r_pointers,
                             PointersInto<T>(r, int64_t{k} * n, count, context));
    MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer y_pointers, PointersInto<T>(y, y_stride, count, context));
    Device<T>** r_array = PointerArray<T>(r_pointers);
    Device<T>** y_array = PointerArray<T>(y_pointers);
    MATRIXD_RETURN_IF_ERROR(InSlices(count, [&](int first, int size) -> absl::Status {
      MATRIXD_CUDA_RETURN_IF_ERROR(Traits::trsm_batched(
          context.cublas(), CUBLAS_SIDE_RIGHT, CUBLAS_FILL_MODE_LOWER, CUBLAS_OP_N,
          CUBLAS_DIAG_NON_UNIT, nrhs, n, &one, r_array + first, n, y_array + first, nrhs, size));
      return absl::OkStatus();
    }));
    solution = std::move(y);
  }

  FactorizeResult result;
  result.kind = FactorizationKind::kQr;
  result.r = HostMatrix<T>(out, "r", int64_t{count} * k, n);
  result.q = HostMatrix<T>(out, "q", int64_t{count} * m, k);
  if (rhs != nullptr) result.solution = HostMatrix<T>(out, "solution", int64_t{count} * n, nrhs);
  const HostRegistration r_pin(result.r.bytes(), result.r.byte_size(), stream);
  const HostRegistration q_pin(result.q.bytes(), result.q.byte_size(), stream);
  const HostRegistration solution_pin(rhs != nullptr ? result.solution->bytes() : nullptr,
                                      rhs != nullptr ? result.solution->byte_size() : 0, stream);
  MATRIXD_RETURN_IF_ERROR(context.Download(r, result.r.mutable_bytes(), result.r.byte_size()));
  if (rhs != nullptr) {
    // Like LAPACK's gels: an exactly zero diagonal entry of R means A lacks full column rank.
    const std::span<const T> r_values = result.r.As<T>();
    for (int b = 0; b < count; ++b) {
      const T* r_b = r_values.data() + int64_t{b} * k * n;
      for (int j = 0; j < k; ++j) {
        if (r_b[int64_t{j} * n + j] == T(0)) {
          return absl::FailedPreconditionError(
              absl::StrCat(Subject(b), " does not have full column rank: R[", j, ",", j,
                           "] = 0 at column ", j, "; cannot solve least squares"));
        }
      }
    }
  }
  MATRIXD_RETURN_IF_ERROR(context.Download(q, result.q.mutable_bytes(), result.q.byte_size()));
  if (rhs != nullptr) {
    MATRIXD_RETURN_IF_ERROR(
        context.Download(solution, result.solution->mutable_bytes(), result.solution->byte_size()));
  }

  // The CPU backend's counts (LAPACK Working Note 41): geqrf and forming Q twice getrf's
  // multiply-adds each, the solve as Q^H B plus a triangular solve.
  const double nrhs_d = nrhs;
  result.stats.flops =
      kFlopsPerUpdate<T> / 2.0 * count *
      (2.0 * LuFlops(m, n) + 2.0 * LuFlops(m, k) + 2.0 * m * static_cast<double>(n) * nrhs_d +
       n * static_cast<double>(n) * nrhs_d);
  // Transfers, the transpose, geqrf's pass, and Q and R written then downloaded.
  result.stats.bytes_moved = 5 * a.byte_size() + 2 * (result.q.byte_size() + result.r.byte_size()) +
                             (rhs != nullptr ? 4 * rhs->byte_size() : 0);
  MATRIXD_RETURN_IF_ERROR(geqrf_timer->AppendTo(&result.stats, "cublas_geqrf_batched",
                                                2 * a.byte_size(),
                                                kFlopsPerUpdate<T> * count * LuFlops(m, n)));
  return result;
}

}  // namespace

bool FactorizeBatchChecksFinite(const MatrixView& a, const FactorizeOptions& options,
                                const MatrixView* rhs) {
  return options.batch_count > 0 && options.kind == FactorizationKind::kLu && rhs == nullptr &&
         !options.refine.enabled && IsFloating(a.dtype);
}

absl::StatusOr<FactorizeResult> FactorizeBatch(const MatrixView& a, const FactorizeOptions& options,
                                               const MatrixView* rhs, DeviceContext& context) {
  if (options.batch_count <= 0 || a.rows % options.batch_count != 0) {
    return absl::InvalidArgumentError(absl::StrCat(
        "matrix.rows = ", a.rows, " is not a multiple of batch_count = ", options.batch_count));
  }
  const Batch batch{.count = static_cast<int>(options.batch_count),
                    .rows = static_cast<int>(a.rows / options.batch_count),
                    .cols = static_cast<int>(a.cols),
                    .nrhs = rhs != nullptr ? static_cast<int>(rhs->cols) : 0};
  return VisitFloatingType(a.dtype, [&](auto type) -> absl::StatusOr<FactorizeResult> {
    using T = typename decltype(type)::type;
    switch (options.kind) {
      case FactorizationKind::kCholesky:
        return BatchedCholesky<T>(a, rhs, batch, options.destinations, context);
      case FactorizationKind::kQr:
        return BatchedQr<T>(a, rhs, batch, options.destinations, context);
      case FactorizationKind::kLu:
      default:
        if (FactorizeBatchChecksFinite(a, options, rhs)) {
          return PipelinedLu<T>(a, batch, options.destinations, context);
        }
        return BatchedLu<T>(a, rhs, batch, options.destinations, context);
    }
  });
}

}  // namespace matrixd::cuda
