// Conversions between the API's protobuf messages and core types: proto Matrix -> MatrixView on
// the way in (after checking dtype, shape and byte length), core results -> response messages on
// the way out. Nothing below server/ sees a protobuf type.
#ifndef MATRIXD_SERVER_MATRIX_CONVERSION_H_
#define MATRIXD_SERVER_MATRIX_CONVERSION_H_

#include <cstdint>
#include <optional>

#include "absl/status/statusor.h"
#include "absl/strings/string_view.h"
#include "core/matrix.h"
#include "core/operations.h"
#include "matrixd/v1/matrix.pb.h"
#include "matrixd/v1/matrixd.pb.h"
#include "server/resident_registry.h"
#include "server/shared_memory_registry.h"

namespace matrixd::server {

// An operand as core sees it. From a proto Matrix: borrows the message's bytes when they are
// aligned for the element type (the usual case), else holds an aligned copy; the message must
// outlive it. From a resident matrix: holds it in place (a ResidentLease) and views it where it
// lives, host or device memory. Move-only: the view may point into the copy.
// How FromProto(MatrixRef) takes a distributed resident matrix (see there).
enum class DistributedUse { kGather, kInPlace };

class InputMatrix {
 public:
  InputMatrix(InputMatrix&&) = default;
  InputMatrix& operator=(InputMatrix&&) = default;
  InputMatrix(const InputMatrix&) = delete;
  InputMatrix& operator=(const InputMatrix&) = delete;

  const MatrixView& view() const { return view_; }
  // The resident matrix behind the operand, if any.
  const ResidentLease* resident() const { return resident_ ? &*resident_ : nullptr; }
  // A distributed resident matrix taken in place (DistributedUse::kInPlace): view() is then its
  // shape with null data, and CopyToHost gathers it. Null otherwise.
  const DistributedResidentMatrix* distributed() const {
    return view_.on_device() && resident_ ? resident_->distributed() : nullptr;
  }
  // Whether the operand is viewed in a client's shared-memory region.
  bool in_shared_memory() const { return shared_memory_ != nullptr; }
  // Replaces a device view (a resident matrix, or a CUDA shared-memory region) by a host copy of
  // its bytes, for an operation that reads its operands on the host. No-op for a host view.
  // RESOURCE_EXHAUSTED when host memory runs out.
  absl::Status CopyToHost();

 private:
  friend absl::StatusOr<InputMatrix> FromProto(const v1::Matrix& proto, absl::string_view field);
  friend absl::StatusOr<InputMatrix> FromProto(const v1::MatrixRef& proto,
                                               ResidentRegistry* registry, absl::string_view field,
                                               SharedMemoryRegistry* shared_memory,
                                               const std::string& owner,
                                               DistributedUse distributed);
  InputMatrix() = default;

  MatrixView view_;
  Matrix aligned_copy_;  // empty unless the message's bytes were misaligned, or copied to host
  std::optional<ResidentLease> resident_;
  std::shared_ptr<const MappedRegion> shared_memory_;  // the region a shared-memory view is in
  std::shared_ptr<ResidentMatrix> shared_device_;      // a CUDA region's matrix (after its region)
};

// Checks, before touching the data, that the dtype is a known, specified DType, rows and cols are
// >= 1, rows*cols*element size does not overflow, and data holds exactly that many bytes.
// INVALID_ARGUMENT naming `field` ("matrix", "rhs", "a", "b") otherwise. Entries are not checked
// here (core/validation.h checks them).
absl::StatusOr<InputMatrix> FromProto(const v1::Matrix& proto, absl::string_view field);

// The resident matrix a MatrixRef names (field "matrix_ref", "a_ref", ...), held in place until the
// InputMatrix is destroyed. INVALID_ARGUMENT for an empty reference, NOT_FOUND for an unknown
// handle, FAILED_PRECONDITION when `registry` is null; INVALID_ARGUMENT for a device-resident
// matrix with non-finite entries (a host one is checked entry by entry by core/validation.h).
// A shared-memory reference is resolved in `shared_memory` (SharedMemoryRegistry::Resolve's
// errors; FAILED_PRECONDITION when null) and viewed in place, its region held meanwhile: a host
// view in a system region, a device view in a CUDA region (its entries are not checked).
// Only `owner`'s matrices and regions are found (NOT_FOUND for another client's).
// A distributed resident matrix (layout DISTRIBUTED) is gathered into host memory (kGather:
// RESOURCE_EXHAUSTED naming `layout` when it does not fit), unless `distributed` is kInPlace,
// for an operation that reads the parts where they lie (Determinant with devices > 1,
// Multiply over several GPUs).
absl::StatusOr<InputMatrix> FromProto(const v1::MatrixRef& proto, ResidentRegistry* registry,
                                      absl::string_view field,
                                      SharedMemoryRegistry* shared_memory = nullptr,
                                      const std::string& owner = {},
                                      DistributedUse distributed = DistributedUse::kGather);

// A SharedMemoryRef as the registry takes it; INVALID_ARGUMENT naming `field` for a bad dtype.
absl::StatusOr<SharedMemoryReference> FromProto(const v1::SharedMemoryRef& proto,
                                                absl::string_view field);

// INVALID_ARGUMENT naming `field` for a value outside the enum.
absl::StatusOr<ResidentLayout> FromProto(v1::ResidentLayout layout, absl::string_view field);
v1::ResidentLayout ToProto(ResidentLayout layout);

// The proto ResidentMatrix of a registry entry at `now`.
void ToProto(const ResidentInfo& info, absl::Time now, v1::ResidentMatrix* proto);

// INVALID_ARGUMENT naming `field` for DTYPE_UNSPECIFIED or a value outside the enum.
absl::StatusOr<DType> FromProto(v1::DType dtype, absl::string_view field);
v1::DType ToProto(DType dtype);

// A field that proto3 leaves absent arrives as an empty Matrix (rows 0, cols 0, no data).
bool IsAbsent(const v1::Matrix& proto);

// A borrowed matrix (written into a caller's destination, core/result_destinations.h) gets its
// shape and no data: SharedMemoryOutputs::Write knows it is already in place.
void ToProto(const Matrix& matrix, v1::Matrix* proto);
void ToProto(const ComputeStats& stats, v1::ComputeStats* proto);

v1::DeterminantMethod ToProto(DeterminantMethod method);
v1::FactorizationKind ToProto(FactorizationKind kind);
v1::PermanentMethod ToProto(PermanentMethod method);
v1::PermanentPrecision ToProto(PermanentPrecision precision);
v1::PermanentWalk ToProto(PermanentWalk walk);

// `input` is the matrix's dtype (real input gets sign +-1/0; complex input sign 1/0 with the
// direction in phase_re/phase_im). With modulus > 0 only residue, singular, method_used and stats
// are meaningful; the value fields stay zero.
void ToProto(const DeterminantResult& result, DType input, uint64_t modulus,
             v1::DeterminantResponse* response);
// singular_column is -1 when the matrix is not singular (or not LU); a batch's results are
// stacked as the core result holds them, singular_columns copied.
void ToProto(const FactorizeResult& result, v1::FactorizeResponse* response);
void ToProto(const MultiplyResult& result, v1::MultiplyResponse* response);
// `solution` is left unset when result.x is empty (X written into a resident matrix).
void ToProto(const SolveResult& result, FactorizationKind kind, v1::SolveResponse* response);
void ToProto(const PermanentResult& result, v1::PermanentResponse* response);

}  // namespace matrixd::server

#endif  // MATRIXD_SERVER_MATRIX_CONVERSION_H_
