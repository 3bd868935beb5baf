#include "core/distributed/scalapack_grid.h"

#include <mpi.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <numeric>
#include <string>
#include <utility>

#include "absl/strings/str_cat.h"
#include "core/distributed/grid_scalar.h"
#include "core/distributed/mpi_status.h"
#include "core/status_macros.h"

namespace matrixd::distributed {
namespace {

constexpr int kRoot = 0;
constexpr int kScatterTag = 17;
constexpr int kGatherTag = 18;

absl::Status CheckIntExtent(int64_t value, const char* what) {
  if (value > std::numeric_limits<int>::max()) {
    return absl::InvalidArgumentError(
        absl::StrCat(what, " = ", value, " exceeds ScaLAPACK's 32-bit indices"));
  }
  return absl::OkStatus();
}

int AsInt(int64_t value) { return static_cast<int>(value); }

// cuBLASMp and cuSOLVERMp are wired for float64 alone; the other dtypes run on ScaLAPACK.
absl::Status CheckDeviceDType(const GridJobHeader& header) {
  const auto dtype = static_cast<DType>(header.dtype);
  if (dtype == DType::kFloat64) return absl::OkStatus();
  return absl::InvalidArgumentError(absl::StrCat("the device engine takes float64, not ",
                                                 DTypeName(dtype), " (ScaLAPACK takes it)"));
}

}  // namespace

ScaledNumber ScaledFromSignedLog(const SignedLogDeterminant& det) {
  if (det.sign == 0 || !std::isfinite(det.log_abs)) return ScaledNumber::Zero();
  // |det| = 2^(log_abs / ln 2) = 2^fraction * 2^exponent, fraction in [0, 1).
  const double log2_abs = det.log_abs / std::log(2.0);
  const double exponent = std::floor(log2_abs);
  return ScaledNumber::FromParts((det.sign < 0 ? -1.0 : 1.0) * std::exp2(log2_abs - exponent),
                                 static_cast<int64_t>(exponent));
}

absl::StatusOr<std::unique_ptr<ScalapackGrid>> ScalapackGrid::Create(int64_t block) {
  // Errors come back as return codes, so that a lost rank fails a job instead of the process.
  MATRIXD_RETURN_IF_ERROR(MpiStatus(MPI_Comm_set_errhandler(MPI_COMM_WORLD, MPI_ERRORS_RETURN),
                                    "MPI_Comm_set_errhandler"));
  int rank = 0;
  int size = 0;
  MATRIXD_RETURN_IF_ERROR(MpiStatus(MPI_Comm_rank(MPI_COMM_WORLD, &rank), "MPI_Comm_rank"));
  MATRIXD_RETURN_IF_ERROR(MpiStatus(MPI_Comm_size(MPI_COMM_WORLD, &size), "MPI_Comm_size"));
  const GridShape shape = ChooseGridShape(size);
  int context = 0;
  Cblacs_get(0, 0, &context);
  Cblacs_gridinit(&context, "Row", shape.rows, shape.cols);
  int nprow = 0;
  int npcol = 0;
  int myrow = 0;
  int mycol = 0;
  Cblacs_gridinfo(context, &nprow, &npcol, &myrow, &mycol);
  if (nprow != shape.rows || npcol != shape.cols || myrow != rank / shape.cols ||
      mycol != rank % shape.cols) {
    return absl::InternalError(absl::StrCat("BLACS placed rank ", rank, " at (", myrow, ", ", mycol,
                                            ") of ", nprow, "x", npcol));
  }
  return std::unique_ptr<ScalapackGrid>(new ScalapackGrid(rank, shape, block, context));
}

ScalapackGrid::~ScalapackGrid() { Cblacs_gridexit(context_); }

absl::Status ScalapackGrid::BroadcastHeader(GridJobHeader* header) {
  return MpiStatus(MPI_Bcast(header, sizeof(GridJobHeader), MPI_BYTE, kRoot, MPI_COMM_WORLD),
                   "MPI_Bcast(job header)");
}

BlockCyclicLayout ScalapackGrid::Layout(const GridJobHeader& header, int64_t rows,
                                        int64_t cols) const {
  return {.rows = rows,
          .cols = cols,
          .block = header.block > 0 ? header.block : block_,
          .grid = shape_};
}

absl::StatusOr<std::vector<int>> ScalapackGrid::Descriptor(const BlockCyclicLayout& layout) const {
  MATRIXD_RETURN_IF_ERROR(CheckIntExtent(layout.rows, "rows"));
  MATRIXD_RETURN_IF_ERROR(CheckIntExtent(layout.cols, "cols"));
  std::vector<int> desc(9);
  const int m = AsInt(layout.rows);
  const int n = AsInt(layout.cols);
  const int nb = AsInt(layout.block);
  const int zero = 0;
  const int lld = AsInt(layout.LocalLeadingDimension(rank_ / shape_.cols));
  int info = 0;
  descinit_(desc.data(), &m, &n, &nb, &nb, &zero, &zero, &context_, &lld, &info);
  if (info != 0) return absl::InternalError(absl::StrCat("descinit_ info ", info));
  return desc;
}

template <typename T>
absl::StatusOr<std::vector<T>> ScalapackGrid::Scatter(const BlockCyclicLayout& layout,
                                                      const MatrixView* global) {
  std::vector<T> local(
      static_cast<size_t>(std::max<int64_t>(1, layout.LocalLeadingDimension(rank_ / shape_.cols) *
                                                   layout.LocalCols(rank_ % shape_.cols))));
  if (!is_root()) {
    const int64_t count = layout.LocalElements(rank_);
    MATRIXD_RETURN_IF_ERROR(CheckIntExtent(count, "local elements"));
    MATRIXD_RETURN_IF_ERROR(MpiStatus(MPI_Recv(local.data(), AsInt(count), MpiElement<T>(), kRoot,
                                               kScatterTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                                      "MPI_Recv(scatter)"));
    return local;
  }
  std::vector<T> packed;
  for (int r = 1; r < shape_.size(); ++r) {
    const int64_t count = layout.LocalElements(r);
    MATRIXD_RETURN_IF_ERROR(CheckIntExtent(count, "local elements"));
    packed.resize(static_cast<size_t>(count));
    PackLocal(layout, r, global->data, sizeof(T), reinterpret_cast<std::byte*>(packed.data()));
    MATRIXD_RETURN_IF_ERROR(MpiStatus(
        MPI_Send(packed.data(), AsInt(count), MpiElement<T>(), r, kScatterTag, MPI_COMM_WORLD),
        "MPI_Send(scatter)"));
  }
  PackLocal(layout, kRoot, global->data, sizeof(T), reinterpret_cast<std::byte*>(local.data()));
  return local;
}

template <typename T>
absl::StatusOr<Matrix> ScalapackGrid::Gather(const BlockCyclicLayout& layout,
                                             const std::vector<T>& local) {
  if (!is_root()) {
    const int64_t count = layout.LocalElements(rank_);
    MATRIXD_RETURN_IF_ERROR(MpiStatus(
        MPI_Send(local.data(), AsInt(count), MpiElement<T>(), kRoot, kGatherTag, MPI_COMM_WORLD),
        "MPI_Send(gather)"));
    return Matrix();
  }
  Matrix global(layout.rows, layout.cols, DTypeOf<T>());
  UnpackLocal(layout, kRoot, reinterpret_cast<const std::byte*>(local.data()), sizeof(T),
              global.mutable_bytes());
  std::vector<T> packed;
  for (int r = 1; r < shape_.size(); ++r) {
    const int64_t count = layout.LocalElements(r);
    packed.resize(static_cast<size_t>(count));
    MATRIXD_RETURN_IF_ERROR(MpiStatus(MPI_Recv(packed.data(), AsInt(count), MpiElement<T>(), r,
                                               kGatherTag, MPI_COMM_WORLD, MPI_STATUS_IGNORE),
                                      "MPI_Recv(gather)"));
    UnpackLocal(layout, r, reinterpret_cast<const std::byte*>(packed.data()), sizeof(T),
                global.mutable_bytes());
  }
  return global;
}

absl::StatusOr<Matrix> ScalapackGrid::Multiply(const GridJobHeader& header, const MatrixView* a,
                                               const MatrixView* b) {
  if (header.on_device) {
    // Checked on every rank before any message, so that a refused job leaves the grid in step.
    if (device_engine_ == nullptr) {
      return absl::InvalidArgumentError("the grid has no device engine");
    }
    if (header.transpose_a || header.transpose_b) {
      return absl::InvalidArgumentError(
          "the device engine multiplies untransposed operands (the root transposes them)");
    }
    MATRIXD_RETURN_IF_ERROR(CheckDeviceDType(header));
    const BlockCyclicLayout a_layout = Layout(header, header.a_rows, header.a_cols);
    const BlockCyclicLayout b_layout = Layout(header, header.b_rows, header.b_cols);
    const BlockCyclicLayout c_layout = Layout(header, header.a_rows, header.b_cols);
    MATRIXD_ASSIGN_OR_RETURN(std::vector<double> local_a, Scatter<double>(a_layout, a));
    MATRIXD_ASSIGN_OR_RETURN(std::vector<double> local_b, Scatter<double>(b_layout, b));
    MATRIXD_ASSIGN_OR_RETURN(std::vector<double> local_c,
                             device_engine_->Multiply(a_layout, b_layout, local_a, local_b));
    return Gather(c_layout, local_c);
  }
  return WithGridScalar(static_cast<DType>(header.dtype),
                        [&](auto zero) { return ScalapackMultiply<decltype(zero)>(header, a, b); });
}

template <typename T>
absl::StatusOr<Matrix> ScalapackGrid::ScalapackMultiply(const GridJobHeader& header,
                                                        const MatrixView* a, const MatrixView* b) {
  const BlockCyclicLayout a_layout = Layout(header, header.a_rows, header.a_cols);
  const BlockCyclicLayout b_layout = Layout(header, header.b_rows, header.b_cols);
  const int64_t m = header.transpose_a ? header.a_cols : header.a_rows;
  const int64_t k = header.transpose_a ? header.a_rows : header.a_cols;
  const int64_t n = header.transpose_b ? header.b_rows : header.b_cols;
  const BlockCyclicLayout c_layout = Layout(header, m, n);
  MATRIXD_ASSIGN_OR_RETURN(std::vector<int> desc_a, Descriptor(a_layout));
  MATRIXD_ASSIGN_OR_RETURN(std::vector<int> desc_b, Descriptor(b_layout));
  MATRIXD_ASSIGN_OR_RETURN(std::vector<int> desc_c, Descriptor(c_layout));
  MATRIXD_ASSIGN_OR_RETURN(std::vector<T> local_a, Scatter<T>(a_layout, a));
  MATRIXD_ASSIGN_OR_RETURN(std::vector<T> local_b, Scatter<T>(b_layout, b));
  std::vector<T> local_c(
      static_cast<size_t>(std::max<int64_t>(1, c_layout.LocalLeadingDimension(rank_ / shape_.cols) *
                                                   c_layout.LocalCols(rank_ % shape_.cols))));
  Gemm(header.transpose_a ? 'T' : 'N', header.transpose_b ? 'T' : 'N', AsInt(m), AsInt(n), AsInt(k),
       local_a.data(), desc_a.data(), local_b.data(), desc_b.data(), local_c.data(), desc_c.data());
  return Gather(c_layout, local_c);
}

absl::StatusOr<GridLu> ScalapackGrid::Lu(const GridJobHeader& header, const MatrixView* a,
                                         const MatrixView* rhs) {
  const int64_t n = header.a_rows;
  const BlockCyclicLayout a_layout = Layout(header, n, n);
  if (header.on_device) return DeviceDeterminant(header, a_layout, a);
  const auto dtype = static_cast<DType>(header.dtype);
  if (dtype == DType::kFloat64) return ScalapackLu<double>(header, a, rhs);
  if (dtype == DType::kComplex128) return ScalapackLu<std::complex<double>>(header, a, rhs);
  return absl::InvalidArgumentError(absl::StrCat("the grid's LU takes float64 or complex128, not ",
                                                 DTypeName(dtype),
                                                 " (the caller widens float32 and complex64)"));
}

template <typename T>
absl::StatusOr<GridLu> ScalapackGrid::ScalapackLu(const GridJobHeader& header, const MatrixView* a,
                                                  const MatrixView* rhs) {
  const int64_t n = header.a_rows;
  const BlockCyclicLayout a_layout = Layout(header, n, n);
  MATRIXD_ASSIGN_OR_RETURN(std::vector<int> desc_a, Descriptor(a_layout));
  MATRIXD_ASSIGN_OR_RETURN(std::vector<T> local_a, Scatter<T>(a_layout, a));
  const int64_t nb = a_layout.block;
  const int myrow = rank_ / shape_.cols;
  const int mycol = rank_ % shape_.cols;
  std::vector<int> ipiv(static_cast<size_t>(a_layout.LocalRows(myrow) + nb));
  const int in = AsInt(n);
  int info = Getrf(in, local_a.data(), desc_a.data(), ipiv.data());
  if (info < 0) {
    return absl::InternalError(
        absl::StrCat("p", std::string(1, ScalapackLetter<T>()), "getrf_ info ", info));
  }

  GridLu result;
  if (info > 0) result.singular_column = info - 1;

  // det = sign(P) * prod U[i, i]: each rank multiplies the diagonal entries it holds as a
  // ScaledNumber and sends mantissa and exponent, so no partial product overflows.
  ScaledNumber diagonal;
  const int64_t ld = a_layout.LocalLeadingDimension(myrow);
  for (int64_t i = 0; i < n; ++i) {
    if (OwnerOf(i, nb, shape_.rows) != myrow || OwnerOf(i, nb, shape_.cols) != mycol) {
      continue;
    }
    const int64_t li = LocalIndexOf(i, nb, shape_.rows);
    const int64_t lj = LocalIndexOf(i, nb, shape_.cols);
    diagonal *= std::complex<double>(local_a[static_cast<size_t>(lj * ld + li)]);
  }
  // Real part, imaginary part (0 for float64) and binary exponent of each rank's product.
  const std::array<double, 3> part = {diagonal.mantissa().real(), diagonal.mantissa().imag(),
                                      static_cast<double>(diagonal.exponent2())};
  std::vector<double> parts(is_root() ? 3 * static_cast<size_t>(shape_.size()) : 0);
  MATRIXD_RETURN_IF_ERROR(MpiStatus(
      MPI_Gather(part.data(), 3, MPI_DOUBLE, parts.data(), 3, MPI_DOUBLE, kRoot, MPI_COMM_WORLD),
      "MPI_Gather(determinant parts)"));

  // The pivots: the ranks of process column 0 hold them for their rows; summed into one vector.
  std::vector<int64_t> local_pivots(static_cast<size_t>(n), 0);
  if (mycol == 0) {
    for (int64_t li = 0; li < a_layout.LocalRows(myrow); ++li) {
      const int64_t i = ((li / nb) * shape_.rows + myrow) * nb + li % nb;
      local_pivots[static_cast<size_t>(i)] = ipiv[static_cast<size_t>(li)];
    }
  }
  std::vector<int64_t> pivots(is_root() ? static_cast<size_t>(n) : 0);
  MATRIXD_RETURN_IF_ERROR(MpiStatus(MPI_Reduce(local_pivots.data(), pivots.data(), in, MPI_INT64_T,
                                               MPI_SUM, kRoot, MPI_COMM_WORLD),
                                    "MPI_Reduce(pivots)"));

  if (header.b_cols > 0 && info == 0) {
    const BlockCyclicLayout b_layout = Layout(header, header.b_rows, header.b_cols);
    MATRIXD_ASSIGN_OR_RETURN(std::vector<int> desc_b, Descriptor(b_layout));
    MATRIXD_ASSIGN_OR_RETURN(std::vector<T> local_b, Scatter<T>(b_layout, rhs));
    info = Getrs(in, AsInt(header.b_cols), local_a.data(), desc_a.data(), ipiv.data(),
                 local_b.data(), desc_b.data());
    if (info != 0) {
      return absl::InternalError(
          absl::StrCat("p", std::string(1, ScalapackLetter<T>()), "getrs_ info ", info));
    }
    MATRIXD_ASSIGN_OR_RETURN(Matrix x, Gather(b_layout, local_b));
    if (is_root()) result.solution = std::move(x);
  }
  if (header.want_factors) {
    MATRIXD_ASSIGN_OR_RETURN(result.lu, Gather(a_layout, local_a));
  }
  if (!is_root()) return result;

  if (!result.singular_column.has_value()) {
    result.determinant = ScaledNumber();
    for (int r = 0; r < shape_.size(); ++r) {
      const size_t at = 3 * static_cast<size_t>(r);
      result.determinant *=
          ScaledNumber::FromParts({parts[at], parts[at + 1]}, static_cast<int64_t>(parts[at + 2]));
    }
  }
  result.permutation.resize(static_cast<size_t>(n));
  std::iota(result.permutation.begin(), result.permutation.end(), int64_t{0});
  for (int64_t i = 0; i < n; ++i) {
    const int64_t pivot = pivots[static_cast<size_t>(i)] - 1;
    if (pivot != i) {
      std::swap(result.permutation[static_cast<size_t>(i)],
                result.permutation[static_cast<size_t>(pivot)]);
      if (!result.singular_column.has_value()) result.determinant.Negate();
    }
  }
  if (!header.want_factors) result.permutation.clear();
  return result;
}

absl::StatusOr<GridLu> ScalapackGrid::DeviceDeterminant(const GridJobHeader& header,
                                                        const BlockCyclicLayout& layout,
                                                        const MatrixView* a) {
  if (device_engine_ == nullptr) return absl::InvalidArgumentError("the grid has no device engine");
  if (header.want_factors || header.b_cols > 0) {
    return absl::InvalidArgumentError(
        "the device engine gives the determinant only (no factors, no right-hand side)");
  }
  MATRIXD_RETURN_IF_ERROR(CheckDeviceDType(header));
  MATRIXD_ASSIGN_OR_RETURN(std::vector<double> local_a, Scatter<double>(layout, a));
  MATRIXD_ASSIGN_OR_RETURN(SignedLogDeterminant det, device_engine_->Determinant(layout, local_a));
  GridLu result;
  result.determinant = ScaledFromSignedLog(det);
  return result;
}

absl::Status ScalapackGrid::ServeWorker() {
  while (true) {
    GridJobHeader header;
    MATRIXD_RETURN_IF_ERROR(BroadcastHeader(&header));
    absl::Status status;
    switch (header.command) {
      case GridCommand::kShutdown:
        return absl::OkStatus();
      case GridCommand::kMultiply:
        status = Multiply(header, nullptr, nullptr).status();
        break;
      case GridCommand::kLu:
        status = Lu(header, nullptr, nullptr).status();
        break;
    }
    // A job that failed the same way on every rank (a size check) leaves the grid in step; a
    // lost message does not.
    if (absl::IsUnavailable(status)) return status;
  }
}

}  // namespace matrixd::distributed
