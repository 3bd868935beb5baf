#include "client/commands.h"

#include <algorithm>
#include <vector>

#include "absl/status/status.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/time/clock.h"
#include "client/matrix_values.h"
#include "client/reference_math.h"
#include "client/result_format.h"
#include "client/shared_memory_staging.h"

namespace matrixd {
namespace {

// Client-side checks cost O(m n k) long double operations; beyond this they would dominate.
constexpr double kMaxCheckOperations = 3e8;

absl::StatusOr<ComplexValues> ValuesOf(const v1::Matrix& matrix, absl::string_view name) {
  absl::StatusOr<ComplexValues> values = ToComplex128Values(matrix);
  if (!values.ok()) {
    return absl::InternalError(
        absl::StrCat("server returned a malformed ", name, ": ", values.status().message()));
  }
  return values;
}

double Operations(int64_t m, int64_t n, int64_t k) {
  return static_cast<double>(m) * static_cast<double>(n) * static_cast<double>(k);
}

absl::StatusOr<std::optional<double>> FactorError(const v1::FactorizeRequest& request,
                                                  const v1::FactorizeResponse& response,
                                                  const v1::Matrix& a_matrix,
                                                  const ComplexValues& a) {
  const int64_t m = a_matrix.rows();
  const int64_t n = a_matrix.cols();
  if (Operations(m, n, std::min(m, n)) > kMaxCheckOperations) return std::nullopt;
  switch (request.kind()) {
    case v1::FACTORIZATION_KIND_LU: {
      // A refinement on low-precision factors returns none: only X can be checked.
      if (!response.has_lu() && response.has_refinement()) return std::nullopt;
      absl::StatusOr<ComplexValues> lu = ValuesOf(response.lu(), "lu");
      if (!lu.ok()) return lu.status();
      std::vector<int64_t> permutation(response.permutation().begin(),
                                       response.permutation().end());
      const bool shapes_ok = response.lu().rows() == m && response.lu().cols() == n &&
                             static_cast<int64_t>(permutation.size()) == m &&
                             std::all_of(permutation.begin(), permutation.end(),
                                         [m](int64_t p) { return p >= 0 && p < m; });
      if (!shapes_ok) return absl::InternalError("server returned an LU of the wrong shape");
      return LuReconstructionError(a, m, n, *lu, permutation);
    }
    case v1::FACTORIZATION_KIND_CHOLESKY: {
      absl::StatusOr<ComplexValues> l = ValuesOf(response.l(), "l");
      if (!l.ok()) return l.status();
      if (response.l().rows() != n || response.l().cols() != n || m != n) {
        return absl::InternalError("server returned an L of the wrong shape");
      }
      return CholeskyReconstructionError(a, n, *l);
    }
    case v1::FACTORIZATION_KIND_QR: {
      absl::StatusOr<ComplexValues> q = ValuesOf(response.q(), "q");
      if (!q.ok()) return q.status();
      absl::StatusOr<ComplexValues> r = ValuesOf(response.r(), "r");
      if (!r.ok()) return r.status();
      const int64_t k = std::min(m, n);
      if (response.q().rows() != m || response.q().cols() != k || response.r().rows() != k ||
          response.r().cols() != n) {
        return absl::InternalError("server returned Q and R of the wrong shapes");
      }
      return QrReconstructionError(a, m, n, *q, *r);
    }
    default:
      return std::nullopt;
  }
}

// "500 x 500 float64", "resident HANDLE" for an operand the request names by handle, or
// "500 x 500 float64 in shared memory NAME+OFFSET".
std::string OperandText(bool by_ref, const v1::Matrix& matrix, const v1::MatrixRef& ref) {
  if (!by_ref) return FormatShape(matrix);
  if (!ref.has_shared_memory()) return absl::StrCat("resident ", ref.handle());
  const v1::SharedMemoryRef& shm = ref.shared_memory();
  return absl::StrCat(shm.rows(), " x ", shm.cols(), " ", DTypeFlagName(shm.dtype()),
                      " in shared memory ", shm.region(), "+", shm.offset());
}

// Puts the results the request sent into `region` back into the response.
absl::Status ReadBack(const SharedMemoryRegion* region, const v1::ResultOptions& options,
                      google::protobuf::Message& response) {
  if (region == nullptr || options.shared_memory_outputs().empty()) return absl::OkStatus();
  absl::Status read = ReadResultsBack(*region, options, response);
  if (!read.ok()) {
    return absl::InternalError(
        absl::StrCat("reading the results from shared memory: ", read.message()));
  }
  return absl::OkStatus();
}

// Whether the answer is complex: from the inline or shared-memory operand, or (by handle) from
// the answer itself.
bool ComplexDeterminant(const v1::DeterminantRequest& request,
                        const v1::DeterminantResponse& response) {
  if (request.has_matrix()) return IsComplex(request.matrix().dtype());
  if (request.matrix_ref().has_shared_memory()) {
    return IsComplex(request.matrix_ref().shared_memory().dtype());
  }
  return response.phase_im() != 0 || response.mantissa_imag() != 0;
}

// The inline result matrices are in the response unless they were only kept.
bool ResultsInline(const v1::ResultOptions& options) {
  return !options.keep_result() || options.also_inline();
}

}  // namespace

absl::StatusOr<v1::DeterminantResponse> RunDeterminant(Client& client,
                                                       const v1::DeterminantRequest& request,
                                                       std::ostream& out) {
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::DeterminantResponse> response = client.Determinant(request);
  const absl::Duration round_trip = absl::Now() - start;
  if (!response.ok()) return response.status();
  out << "determinant of "
      << OperandText(request.has_matrix_ref(), request.matrix(), request.matrix_ref())
      << (request.modulus() > 0 ? absl::StrCat(" mod ", request.modulus()) : "") << "\n"
      << FormatDeterminant(*response, ComplexDeterminant(request, *response), request.modulus())
      << FormatStats(response->stats(), round_trip);
  return response;
}

absl::StatusOr<FactorizeReport> RunFactorize(Client& client, const v1::FactorizeRequest& request,
                                             std::ostream& out, const SharedMemoryRegion* region) {
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::FactorizeResponse> response = client.Factorize(request);
  const absl::Duration round_trip = absl::Now() - start;
  if (!response.ok()) return response.status();
  if (absl::Status read = ReadBack(region, request.result_options(), *response); !read.ok()) {
    return read;
  }
  const bool has_rhs = request.has_rhs() || request.has_rhs_ref();
  out << "factorization of "
      << OperandText(request.has_matrix_ref(), request.matrix(), request.matrix_ref())
      << (has_rhs ? absl::StrCat(", solving for ", OperandText(request.has_rhs_ref(), request.rhs(),
                                                               request.rhs_ref()))
                  : "")
      << "\n"
      << FormatFactorization(*response) << FormatKept(response->kept());

  FactorizeReport report{*std::move(response), std::nullopt, std::nullopt};
  // The client checks what it has: an inline (or shared-memory) A, and the factors sent back
  // inline (or read back from shared memory).
  const std::optional<v1::Matrix> a_matrix = OperandMatrix(
      request.has_matrix() ? &request.matrix() : nullptr, request.matrix_ref(), region);
  if (!a_matrix || !ResultsInline(request.result_options())) {
    out << "  factor error: not checked (operands or results kept on the server)\n"
        << FormatStats(report.response.stats(), round_trip);
    return report;
  }
  absl::StatusOr<ComplexValues> a = ToComplex128Values(*a_matrix);
  if (!a.ok()) return a.status();
  absl::StatusOr<std::optional<double>> factor_error =
      FactorError(request, report.response, *a_matrix, *a);
  if (!factor_error.ok()) return factor_error.status();
  report.factor_error = *factor_error;
  if (report.factor_error) {
    out << absl::StrFormat("  factor error ||A - factors||/||A|| = %.3e\n", *report.factor_error);
  } else {
    out << "  factor error: not checked (too large to check client-side)\n";
  }

  const std::optional<v1::Matrix> rhs =
      OperandMatrix(request.has_rhs() ? &request.rhs() : nullptr, request.rhs_ref(), region);
  if (rhs && report.response.has_solution()) {
    const v1::Matrix& x = report.response.solution();
    const int64_t m = a_matrix->rows();
    const int64_t n = a_matrix->cols();
    const int64_t k = rhs->cols();
    if (x.rows() != n || x.cols() != k) {
      return absl::InternalError(absl::StrCat("server returned a solution of shape ", x.rows(),
                                              " x ", x.cols(), ", want ", n, " x ", k));
    }
    if (Operations(m, n, k) <= kMaxCheckOperations) {
      absl::StatusOr<ComplexValues> x_values = ValuesOf(x, "solution");
      if (!x_values.ok()) return x_values.status();
      absl::StatusOr<ComplexValues> b = ToComplex128Values(*rhs);
      if (!b.ok()) return b.status();
      report.solution_residual = RelativeResidual(*a, m, n, *x_values, k, *b);
      out << absl::StrFormat("  solution residual ||AX - B||/||B|| = %.3e%s\n",
                             *report.solution_residual,
                             m > n ? " (least squares: need not be small)" : "");
    }
  }
  out << FormatStats(report.response.stats(), round_trip);
  return report;
}

absl::StatusOr<v1::SolveResponse> RunSolve(Client& client, const v1::SolveRequest& request,
                                           std::ostream& out, const SharedMemoryRegion* region) {
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::SolveResponse> response = client.Solve(request);
  const absl::Duration round_trip = absl::Now() - start;
  if (!response.ok()) return response.status();
  if (absl::Status read = ReadBack(region, request.result_options(), *response); !read.ok()) {
    return read;
  }
  static constexpr absl::string_view kOp[] = {"A", "A^T", "A^H"};
  const int transpose = std::clamp(static_cast<int>(request.transpose()), 0, 2);
  out << "solve " << kOp[transpose]
      << " X = " << OperandText(request.has_rhs_ref(), request.rhs(), request.rhs_ref())
      << " with the factorization " << request.factorization().handle() << " ("
      << v1::FactorizationKind_Name(response->kind()) << ")\n";
  if (response->has_solution()) out << "  X: " << FormatShape(response->solution()) << "\n";
  if (response->has_residual()) {
    out << absl::StrFormat("  residual ||op(A) X - B|| / (||A|| ||X|| + ||B||) = %.3e\n",
                           response->residual());
  }
  out << FormatKept(response->kept()) << FormatStats(response->stats(), round_trip);
  return response;
}

absl::StatusOr<v1::MultiplyResponse> RunMultiply(Client& client, const v1::MultiplyRequest& request,
                                                 std::ostream& out,
                                                 const SharedMemoryRegion* region) {
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::MultiplyResponse> response = client.Multiply(request);
  const absl::Duration round_trip = absl::Now() - start;
  if (!response.ok()) return response.status();
  if (absl::Status read = ReadBack(region, request.result_options(), *response); !read.ok()) {
    return read;
  }
  out << "product of " << OperandText(request.has_a_ref(), request.a(), request.a_ref())
      << (request.transpose_a() ? " (transposed)" : "") << " and "
      << OperandText(request.has_b_ref(), request.b(), request.b_ref())
      << (request.transpose_b() ? " (transposed)" : "") << "\n"
      << FormatProduct(*response, request.block_size()) << FormatKept(response->kept())
      << FormatStats(response->stats(), round_trip);
  return response;
}

absl::StatusOr<v1::PermanentResponse> RunPermanent(Client& client,
                                                   const v1::PermanentRequest& request,
                                                   std::ostream& out) {
  const absl::Time start = absl::Now();
  absl::StatusOr<v1::PermanentResponse> response = client.Permanent(request);
  const absl::Duration round_trip = absl::Now() - start;
  if (!response.ok()) return response.status();
  out << "permanent of "
      << OperandText(request.has_matrix_ref(), request.matrix(), request.matrix_ref()) << "\n"
      << FormatPermanent(*response, request.has_matrix() ? IsComplex(request.matrix().dtype())
                                    : request.matrix_ref().has_shared_memory()
                                        ? IsComplex(request.matrix_ref().shared_memory().dtype())
                                        : response->imag() != 0)
      << FormatStats(response->stats(), round_trip);
  return response;
}

}  // namespace matrixd
