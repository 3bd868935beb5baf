#include "core/factorization.h"

#include <algorithm>
#include <complex>
#include <cstdint>
#include <cstring>
#include <span>
#include <string>

#include "absl/strings/str_cat.h"
#include "core/device_factorization.h"
#include "core/status_macros.h"

namespace matrixd {
namespace {

template <typename T>
int64_t FirstZeroDiagonal(const MatrixView& m) {
  const std::span<const T> values = m.As<T>();
  const int64_t k = std::min(m.rows, m.cols);
  for (int64_t j = 0; j < k; ++j) {
    if (values[static_cast<size_t>(j * m.cols + j)] == T(0)) return j;
  }
  return -1;
}

int64_t FirstZeroDiagonal(const MatrixView& m) {
  switch (m.dtype) {
    case DType::kFloat32:
      return FirstZeroDiagonal<float>(m);
    case DType::kFloat64:
      return FirstZeroDiagonal<double>(m);
    case DType::kComplex64:
      return FirstZeroDiagonal<std::complex<float>>(m);
    case DType::kComplex128:
      return FirstZeroDiagonal<std::complex<double>>(m);
    default:
      return -1;
  }
}

std::string ShapeOf(const MatrixView& m) {
  return absl::StrCat(m.rows, "x", m.cols, " ", DTypeName(m.dtype));
}

// `rows` of each member: the part stacks f.members() of them.
absl::Status CheckPart(const MatrixView& part, const char* name, int64_t rows, int64_t cols,
                       DType dtype) {
  if (part.rows != rows || part.cols != cols || part.dtype != dtype) {
    return absl::InvalidArgumentError(absl::StrCat("the factorization's ", name, " is ",
                                                   ShapeOf(part), "; want ", rows, "x", cols, " ",
                                                   DTypeName(dtype)));
  }
  return absl::OkStatus();
}

// The factorization's own parts agree with each other.
absl::Status CheckParts(const FactorizationView& f) {
  const MatrixView& factor = f.factor;
  if (!IsFloating(factor.dtype) || factor.rows < 1 || factor.cols < 1) {
    return absl::InvalidArgumentError(absl::StrCat("the factorization's factor is ",
                                                   ShapeOf(factor),
                                                   "; want a floating matrix of 1 or more rows"));
  }
  const int64_t m = f.rows();
  const int64_t n = f.cols();
  const int64_t b = f.members();
  if (factor.rows % b != 0) {
    return absl::InvalidArgumentError(absl::StrCat("the factorization's factor is ",
                                                   ShapeOf(factor), "; want ", b,
                                                   " members of equal rows stacked"));
  }
  switch (f.kind) {
    case FactorizationKind::kLu:
      MATRIXD_RETURN_IF_ERROR(CheckPart(factor, "LU factors", b * n, n, factor.dtype));
      // A factorization kept on the GPUs keeps its pivots there, beside the factors.
      if (f.kept == nullptr) {
        MATRIXD_RETURN_IF_ERROR(CheckPart(f.permutation, "permutation", 1, b * n, DType::kInt64));
      }
      break;
    case FactorizationKind::kCholesky:
      MATRIXD_RETURN_IF_ERROR(CheckPart(factor, "L", b * n, n, factor.dtype));
      break;
    case FactorizationKind::kQr:
      MATRIXD_RETURN_IF_ERROR(CheckPart(f.r, "R", b * std::min(m, n), n, factor.dtype));
      if (factor.cols != std::min(m, n)) {
        return absl::InvalidArgumentError(
            absl::StrCat("the factorization's Q is ", ShapeOf(factor), "; R is ", ShapeOf(f.r)));
      }
      break;
  }
  if (f.input.rows != 0) {
    MATRIXD_RETURN_IF_ERROR(CheckPart(f.input, "input", b * m, n, factor.dtype));
  }
  return absl::OkStatus();
}

}  // namespace

const char* FactorizationName(FactorizationKind kind) {
  switch (kind) {
    case FactorizationKind::kLu:
      return "LU";
    case FactorizationKind::kCholesky:
      return "Cholesky";
    case FactorizationKind::kQr:
      return "QR";
  }
  return "?";
}

FactorizationView FactorizationOf(const FactorizeResult& result, const MatrixView* input,
                                  int64_t batch_count) {
  FactorizationView view;
  view.kind = result.kind;
  view.batch_count = batch_count;
  switch (result.kind) {
    case FactorizationKind::kLu:
      view.factor = result.lu.view();
      view.permutation = {.rows = 1,
                          .cols = static_cast<int64_t>(result.permutation.size()),
                          .dtype = DType::kInt64,
                          .data = reinterpret_cast<const std::byte*>(result.permutation.data())};
      view.singular_column = result.singular_column.value_or(-1);
      for (size_t i = 0; i < result.singular_columns.size(); ++i) {
        if (result.singular_columns[i] >= 0) {
          view.singular_member = static_cast<int64_t>(i);
          view.singular_column = result.singular_columns[i];
          break;
        }
      }
      break;
    case FactorizationKind::kCholesky:
      view.factor = result.l.view();
      break;
    case FactorizationKind::kQr:
      view.factor = result.q.view();
      view.r = result.r.view();
      for (int64_t i = 0; i < view.members() && view.singular_column < 0; ++i) {
        view.singular_column = FirstZeroDiagonal(MemberOf(view, i).r);
        if (view.singular_column >= 0 && batch_count > 0) view.singular_member = i;
      }
      break;
  }
  if (input != nullptr) view.input = *input;
  return view;
}

FactorizationView WithKeptParts(const FactorizationView& f) {
  if (f.kept == nullptr || !f.kept->whole_on_one_device()) return f;
  FactorizationView parts = f;
  parts.factor = f.kept->view();
  if (f.kind == FactorizationKind::kLu) parts.permutation = f.kept->permutation();
  parts.kept = nullptr;
  return parts;
}

namespace {

// Adds `member`'s counts to *total, its kernels to the total's kernel of the same name.
void AddStats(const ComputeStats& member, ComputeStats* total) {
  total->backend = member.backend;
  total->device = member.device;
  total->seconds += member.seconds;
  total->bytes_moved += member.bytes_moved;
  total->flops += member.flops;
  for (const KernelRecord& kernel : member.kernels) {
    auto same = std::find_if(total->kernels.begin(), total->kernels.end(),
                             [&](const KernelRecord& k) { return k.kernel == kernel.kernel; });
    if (same == total->kernels.end()) {
      total->kernels.push_back(kernel);
      continue;
    }
    same->seconds += kernel.seconds;
    same->bytes += kernel.bytes;
    same->flops += kernel.flops;
  }
}

}  // namespace

MatrixView StackedMember(const MatrixView& stacked, int64_t i, int64_t rows) {
  MatrixView member = stacked;
  member.rows = rows;
  member.data = stacked.data + static_cast<size_t>(i) * static_cast<size_t>(rows) *
                                   static_cast<size_t>(stacked.cols) * ElementSize(stacked.dtype);
  return member;
}

FactorizationView MemberOf(const FactorizationView& f, int64_t i) {
  if (f.batch_count == 0) return f;
  FactorizationView member = f;
  member.batch_count = 0;
  member.singular_member = -1;
  member.singular_column = i == f.singular_member ? f.singular_column : -1;
  const int64_t m = f.rows();
  const int64_t n = f.cols();
  member.factor = StackedMember(f.factor, i, m);
  if (f.kind == FactorizationKind::kQr) member.r = StackedMember(f.r, i, std::min(m, n));
  if (f.kind == FactorizationKind::kLu) {
    member.permutation = f.permutation;
    member.permutation.cols = n;
    member.permutation.data = f.permutation.data + static_cast<size_t>(i * n) * sizeof(int64_t);
  }
  if (f.input.rows != 0) member.input = StackedMember(f.input, i, m);
  return member;
}

absl::StatusOr<SolveResult> SolveEachMember(const FactorizationView& f, const MatrixView& rhs,
                                            const SolveOptions& options, JobControl* control,
                                            const SolveOne& solve_one) {
  const int64_t b = f.members();
  const int64_t rows_in = rhs.rows / b;
  const int64_t n = f.cols();
  SolveResult result;
  result.x = Matrix(b * n, rhs.cols, rhs.dtype);
  const size_t x_member_bytes = static_cast<size_t>(n * rhs.cols) * ElementSize(rhs.dtype);
  SolveOptions member_options = options;
  member_options.output = nullptr;
  for (int64_t i = 0; i < b; ++i) {
    if (IsCancelled(control)) return absl::CancelledError("solve cancelled");
    MATRIXD_ASSIGN_OR_RETURN(
        SolveResult member,
        solve_one(MemberOf(f, i), StackedMember(rhs, i, rows_in), member_options));
    std::memcpy(result.x.mutable_bytes() + static_cast<size_t>(i) * x_member_bytes,
                member.x.bytes(), x_member_bytes);
    if (member.residual.has_value()) {
      result.residual = std::max(result.residual.value_or(0.0), *member.residual);
    }
    AddStats(member.stats, &result.stats);
  }
  return result;
}

absl::Status CheckSolve(const FactorizationView& f, const MatrixView& rhs,
                        const SolveOptions& options, absl::string_view rhs_field) {
  if (f.kind != FactorizationKind::kQr && f.rows() != f.cols()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the factorization is the ", FactorizationName(f.kind), " of a ", f.rows(),
                     "x", f.cols(), " matrix; a solve needs a square one"));
  }
  MATRIXD_RETURN_IF_ERROR(CheckParts(f));
  const char* name = FactorizationName(f.kind);
  if (options.transpose != SolveTranspose::kNone && f.kind != FactorizationKind::kLu) {
    return absl::InvalidArgumentError(absl::StrCat(
        "transpose applies to LU factorizations only; this one is ", name,
        f.kind == FactorizationKind::kCholesky ? " (A is Hermitian: solve without it)" : ""));
  }
  if (options.transpose != SolveTranspose::kNone && f.kept != nullptr) {
    return absl::InvalidArgumentError(
        "transpose: a factorization kept over several GPUs solves A X = B only (cusolverMg's "
        "getrs takes no transpose); factorize A^T instead");
  }
  if (options.residual && f.input.rows == 0) {
    return absl::InvalidArgumentError(
        "residual needs A: make the factorization with Factorize's keep_input");
  }
  if (f.kind == FactorizationKind::kQr && f.rows() < f.cols()) {
    return absl::InvalidArgumentError(
        absl::StrCat("the factorization is the QR of a ", f.rows(), "x", f.cols(),
                     " matrix; a QR solve needs rows >= cols (least squares)"));
  }
  if (rhs.dtype != f.dtype()) {
    return absl::InvalidArgumentError(absl::StrCat(rhs_field, ".dtype is ", DTypeName(rhs.dtype),
                                                   "; want the factorization's ",
                                                   DTypeName(f.dtype())));
  }
  const int64_t rows = options.transpose == SolveTranspose::kNone ? f.rows() : f.cols();
  if (rhs.rows != f.members() * rows || rhs.cols < 1) {
    const std::string of = f.batch_count > 0
                               ? absl::StrCat(f.batch_count, " stacked blocks of ", rows,
                                              " (the batch of ", f.batch_count, " ", name, "s of ")
                               : absl::StrCat(rows, " rows (the ", name, " of a ");
    return absl::InvalidArgumentError(absl::StrCat(rhs_field, " is ", rhs.rows, "x", rhs.cols,
                                                   "; want ", of, f.rows(), "x", f.cols(),
                                                   " matrix) and 1 or more columns"));
  }
  if (f.singular_column >= 0) {
    const int64_t j = f.singular_column;
    const char* factor = f.kind == FactorizationKind::kQr ? "R" : "U";
    const std::string which =
        f.singular_member >= 0 ? absl::StrCat(" of batch member ", f.singular_member) : "";
    return absl::FailedPreconditionError(
        absl::StrCat("the ", name, " factorization", which, " is singular: ", factor, "[", j, ",",
                     j, "] = 0 at column ", j, "; it cannot be solved with"));
  }
  return absl::OkStatus();
}

double SolveFlops(const FactorizationView& f, int64_t rhs_cols, bool residual) {
  const double m = static_cast<double>(f.rows());
  const double n = static_cast<double>(f.cols());
  const double k = static_cast<double>(rhs_cols);
  double flops = f.kind == FactorizationKind::kQr ? (2.0 * m * n + n * n) * k : 2.0 * n * n * k;
  if (residual) flops += 2.0 * m * n * k;
  flops *= static_cast<double>(f.members());
  return IsComplex(f.dtype()) ? 4.0 * flops : flops;
}

}  // namespace matrixd
