// The contract every compute backend (core/cpu, core/cuda) fulfils. Inputs are validated by the
// caller (see core/validation.h); a backend still returns INVALID_ARGUMENT for an input it cannot
// handle, CANCELLED when `control` was cancelled, and never throws.
#ifndef MATRIXD_CORE_BACKEND_H_
#define MATRIXD_CORE_BACKEND_H_

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>
#include <utility>
#include <vector>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/ipc_memory.h"
#include "core/job_control.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "core/resident_matrix.h"

namespace matrixd {

// How much of each device's memory a backend may allocate: `bytes` when non-zero, else
// `fraction` (in (0, 1]) of the device's total memory.
struct DeviceMemoryLimit {
  uint64_t bytes = 0;
  double fraction = 0.9;
};

// The memory of one device as the backend's stream-ordered pool sees it, in bytes.
struct DeviceMemoryUsage {
  std::string device;     // as ComputeStats::device
  uint64_t total = 0;     // the device's memory
  uint64_t limit = 0;     // what the backend may allocate on it (the pool's cap)
  uint64_t used = 0;      // allocated and not yet freed
  uint64_t reserved = 0;  // taken from the driver by the pool: used plus cached
};

// Device-to-device bandwidth of a plain copy (bytes read plus bytes written per second): the
// yardstick for memory-bound kernels.
struct DeviceCopyBandwidth {
  std::string device;  // as ComputeStats::device
  double bytes_per_second = 0.0;
};

// The OperationQuery of each call below, from the same arguments (rhs may be null).
OperationQuery DeterminantQuery(const MatrixView& a, const DeterminantOptions& options);
OperationQuery FactorizeQuery(const MatrixView& a, const FactorizeOptions& options,
                              const MatrixView* rhs);
OperationQuery MultiplyQuery(const MatrixView& a, const MatrixView& b,
                             const MultiplyOptions& options);
OperationQuery PermanentQuery(const MatrixView& a, const PermanentOptions& options);

// Backend::DeterminantBatch's arguments: INVALID_ARGUMENT, naming the field, unless batch_count
// >= 1 divides a.rows into square members, a is floating and options.modulus is 0.
absl::Status CheckDeterminantBatch(const MatrixView& a, int64_t batch_count,
                                   const DeterminantOptions& options);
// Member `index` of a batch of batch_count matrices stacked vertically in `a`.
MatrixView BatchMember(const MatrixView& a, int64_t batch_count, int64_t index);
// One member's share of the stats of a call that ran `members` matrices together: seconds, bytes
// and flops (the whole call's and each kernel's) divided by members.
ComputeStats ShareOf(const ComputeStats& stats, int64_t members);

// What a backend's kernels and libraries can take, for Backend::Supports.
struct BackendLimits {
  const char* backend = "";     // named in the messages: "cpu", "cuda"
  int max_permanent_order = 0;  // the largest n of its permanent walks
  // The largest dimension it passes to its libraries (32-bit indices): each operand's rows and
  // cols, each matrix of a batch, rhs and b included.
  int64_t max_dimension = 0;
  int64_t max_batch_count = 0;    // the most matrices of one batched factorization
  int max_permanent_devices = 1;  // the most devices one permanent may be split over
};

// UNIMPLEMENTED when `query` exceeds `limits` (the message names the backend, the value and the
// limit); OK otherwise. Reads only the sizes: the operation's contract is Backend::Supports's.
absl::Status CheckBackendLimits(const OperationQuery& query, const BackendLimits& limits);

// Host memory page-locked for a backend's copies while this lives (Backend::PinHostMemory).
class HostMemoryPin {
 public:
  virtual ~HostMemoryPin() = default;
};

class Backend {
 public:
  virtual ~Backend() = default;

  // Page-locks [data, data + bytes) (client shared memory the server maps for many calls), so
  // that copies between it and the device run at pinned speed, until the pin is destroyed; the
  // range must outlive the pin and no copy of it may be running then. Null where there is nothing
  // to gain (the CPU backend) or when the driver refuses: the range then stays pageable, which is
  // slower but correct.
  virtual std::unique_ptr<HostMemoryPin> PinHostMemory(const void* /*data*/, size_t /*bytes*/) {
    return nullptr;
  }

  // "cpu" or "cuda".
  virtual std::string_view name() const = 0;
  // Human-readable description of the device(s) used.
  virtual std::string device() const = 0;
  // What produces this backend's results, for the provenance of every answer (ComputeStats):
  // (name, version) pairs such as ("device_model", "NVIDIA H100 80GB HBM3"), ("driver", "12.8"),
  // ("cuda_runtime", ...), ("cublas", ...), ("cusolver", ...), ("openblas", ...), in a fixed
  // order. Read once when the backend is made; cheap and thread-safe. Empty by default.
  virtual std::vector<std::pair<std::string, std::string>> Versions() const { return {}; }

  // Whether this backend can run the call `query` describes (whatever the server's own limits),
  // asked before a job is queued so that a request it cannot run is answered at once (ggml's
  // supports_op). OK; INVALID_ARGUMENT when the query breaks the operation's contract on every
  // backend (a dtype the operation does not take, a modulus outside [2, 2^62), a batch_count that
  // does not divide the rows, an empty operand), naming the field as core/validation.h does;
  // UNIMPLEMENTED, naming the backend and its limit, when the call is valid but beyond this
  // backend (an order above its largest permanent, a dimension beyond its libraries' indices).
  // The default checks the contract only; a backend adds its limits (CheckBackendLimits). Reads
  // only the query; thread-safe.
  virtual absl::Status Supports(const OperationQuery& query) const;

  // det(A) over R/C, or over Z/p when options.modulus > 0.
  // REQUIRES: a is square and finite; INT64 when modulus > 0.
  virtual absl::StatusOr<DeterminantResult> Determinant(const MatrixView& a,
                                                        const DeterminantOptions& options,
                                                        JobControl* control) = 0;

  // det of each of batch_count n x n matrices stacked vertically in `a` (a.rows = batch_count * n,
  // a.cols = n), in order, each as Determinant(member, options) would give it over R/C; each
  // result's stats are its share of the call (seconds, bytes, flops and kernels divided by
  // batch_count where the members ran together). A singular member gives det 0, not an error; an
  // error (e.g. one member's element growth overflowing) fails the whole call.
  // REQUIRES: a floating and finite; options.modulus == 0; batch_count >= 1.
  // The default calls Determinant once per member (the CPU backend's way).
  virtual absl::StatusOr<std::vector<DeterminantResult>> DeterminantBatch(
      const MatrixView& a, int64_t batch_count, const DeterminantOptions& options,
      JobControl* control);

  // LU, Cholesky (FAILED_PRECONDITION if not positive definite) or QR of a, or of each matrix of
  // a batch (options.batch_count > 0); solves A X = rhs when rhs is not null
  // (FAILED_PRECONDITION if A is singular). In a batch, FAILED_PRECONDITION names the index of
  // the first matrix that fails.
  // REQUIRES: a floating (real or complex) and finite; square for CHOLESKY, for a solve and for
  // a batched LU; rhs, if given, with a.rows rows and a's dtype; a.rows a multiple of
  // batch_count.
  virtual absl::StatusOr<FactorizeResult> Factorize(const MatrixView& a,
                                                    const FactorizeOptions& options,
                                                    const MatrixView* rhs, JobControl* control) = 0;

  // X with op(A) X = rhs from a kept factorization of A (see FactorizationView): LU by two
  // triangular solves and the row permutation (N, T or C), Cholesky by two triangular solves, QR
  // (least squares when rows > cols) by X = R^-1 Q^H rhs. With options.residual, also
  // ||op(A) X - rhs||_F / (||A||_F ||X||_F + ||rhs||_F). The factorization's views and rhs may be
  // host or device views; a device backend reads device views in place. Errors as CheckSolve
  // (core/factorization.h) says, FAILED_PRECONDITION for a singular factorization among them.
  virtual absl::StatusOr<SolveResult> Solve(const FactorizationView& factorization,
                                            const MatrixView& rhs, const SolveOptions& options,
                                            JobControl* control) = 0;

  // C = op(A) op(B). REQUIRES: same dtype (floating or UINT32), inner dimensions agree.
  virtual absl::StatusOr<MultiplyResult> Multiply(const MatrixView& a, const MatrixView& b,
                                                  const MultiplyOptions& options,
                                                  JobControl* control) = 0;

  // per(A). REQUIRES: a square, finite, floating or INT64, within the configured size limit.
  virtual absl::StatusOr<PermanentResult> Permanent(const MatrixView& a,
                                                    const PermanentOptions& options,
                                                    JobControl* control) = 0;

  // ---- Resources. The defaults suit a backend without device memory (CPU). ----

  // Device memory the operation with these arguments allocates at its peak (an upper estimate,
  // for admission before it starts); 0 when it allocates none. Reads only shapes and options.
  virtual uint64_t DeterminantDeviceBytes(const MatrixView& /*a*/,
                                          const DeterminantOptions& /*options*/) const {
    return 0;
  }
  virtual uint64_t FactorizeDeviceBytes(const MatrixView& /*a*/,
                                        const FactorizeOptions& /*options*/,
                                        const MatrixView* /*rhs*/) const {
    return 0;
  }
  virtual uint64_t SolveDeviceBytes(const FactorizationView& /*factorization*/,
                                    const MatrixView& /*rhs*/,
                                    const SolveOptions& /*options*/) const {
    return 0;
  }
  virtual uint64_t MultiplyDeviceBytes(const MatrixView& /*a*/, const MatrixView& /*b*/,
                                       const MultiplyOptions& /*options*/) const {
    return 0;
  }
  virtual uint64_t PermanentDeviceBytes(const MatrixView& /*a*/,
                                        const PermanentOptions& /*options*/) const {
    return 0;
  }

  // ---- Resident matrices (kept between operations; see core/resident_matrix.h) ----

  // A resident rows x cols matrix of `dtype`, contents unspecified until written, in the memory
  // the backend computes in: on device `device_index` (an index into DeviceMemory()) or, for
  // JobControl::kAnyDevice, the device with the most free memory; in host memory without
  // devices. RESOURCE_EXHAUSTED, saying how much is free, when it does not fit. Thread-safe.
  // UNIMPLEMENTED by default (a backend that keeps none).
  virtual absl::StatusOr<std::unique_ptr<ResidentMatrix>> AllocateResident(int64_t /*rows*/,
                                                                           int64_t /*cols*/,
                                                                           DType /*dtype*/,
                                                                           int /*device_index*/) {
    return absl::UnimplementedError("this backend keeps no resident matrices");
  }

  // Opens device memory that another process on this host shared with cudaIpcGetMemHandle:
  // `raw_handle` is the cudaIpcMemHandle_t's kCudaIpcHandleBytes bytes, `device_id` the CUDA
  // ordinal the allocation lives on as the sharing process numbers it (the server checks where it
  // really lives), `byte_size` the bytes from the allocation's start that may be used. Closed when
  // the IpcMemory is destroyed. INVALID_ARGUMENT naming raw_handle, device_id or byte_size for a
  // handle of the wrong size, a device the backend does not use, a handle the driver refuses or a
  // size beyond the allocation. UNIMPLEMENTED by default (a backend without CUDA devices).
  virtual absl::StatusOr<std::unique_ptr<IpcMemory>> OpenCudaIpc(
      std::span<const std::byte> raw_handle, int device_id, uint64_t byte_size);

  // Whether the operation reads its matrix operands only through the device, so that a resident
  // matrix's device view (MatrixView::space == kDevice) may be passed instead of host bytes.
  // Reads only shapes and options. False by default: the caller then passes host bytes.
  virtual bool DeterminantReadsOnDevice(const MatrixView& /*a*/,
                                        const DeterminantOptions& /*options*/) const {
    return false;
  }
  virtual bool MultiplyReadsOnDevice(const MatrixView& /*a*/, const MatrixView& /*b*/,
                                     const MultiplyOptions& /*options*/) const {
    return false;
  }
  virtual bool FactorizeReadsOnDevice(const MatrixView& /*a*/, const FactorizeOptions& /*options*/,
                                      const MatrixView* /*rhs*/) const {
    return false;
  }
  // Whether Determinant answers `a` on the host CPU although the backend has devices (the CUDA
  // backend's small orders, core/cuda/host_small_jobs.h): such a job gains nothing from being
  // batched with others on the device. Reads only shapes and options. False by default.
  virtual bool DeterminantRunsOnHost(const MatrixView& /*a*/,
                                     const DeterminantOptions& /*options*/) const {
    return false;
  }
  // The same for Factorize (the CUDA backend's small single matrices).
  virtual bool FactorizeRunsOnHost(const MatrixView& /*a*/, const FactorizeOptions& /*options*/,
                                   const MatrixView* /*rhs*/) const {
    return false;
  }
  // Whether every call computes on the host only (the CPU backend). False by default.
  virtual bool ComputesOnHost() const { return false; }

  // Whether Factorize refuses a host operand `a` that holds a NaN or Inf itself, with the status
  // ValidateFactorize gives it (core/validation.h: NonFiniteEntryError for "matrix", the first
  // such entry in row-major order), so that the caller may validate with FiniteCheck::kByBackend
  // and skip its own pass over the operand (a backend that copies it to a device anyway checks it
  // there). Reads only shapes and options. False by default.
  virtual bool FactorizeChecksFinite(const MatrixView& /*a*/, const FactorizeOptions& /*options*/,
                                     const MatrixView* /*rhs*/) const {
    return false;
  }

  // The pool state of each device the backend uses; empty without device memory. Thread-safe.
  virtual std::vector<DeviceMemoryUsage> DeviceMemory() const { return {}; }

  // Times a copy on each device (CPU: a memcpy in main memory). Takes a fraction of a second;
  // call it at start-up, not while operations run.
  virtual absl::StatusOr<std::vector<DeviceCopyBandwidth>> MeasureCopyBandwidth() {
    return std::vector<DeviceCopyBandwidth>{};
  }
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_BACKEND_H_
