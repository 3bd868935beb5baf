#include "client/result_format.h"

#include <algorithm>
#include <cmath>
#include <complex>
#include <cstring>
#include <limits>
#include <map>

#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_join.h"
#include "client/matrix_values.h"

namespace matrixd {
namespace {

template <typename T>
T ElementAt(const v1::Matrix& matrix, int64_t i, int64_t j) {
  T value;
  std::memcpy(&value, matrix.data().data() + (i * matrix.cols() + j) * sizeof(T), sizeof(T));
  return value;
}

std::string FormatComplex(double re, double im) { return absl::StrFormat("%.6g%+.6gi", re, im); }

// "1.234567890 x 10^-78", with the imaginary part for complex input.
std::string FormatScaled(double mantissa, double mantissa_imag, int64_t exponent10,
                         bool complex_input) {
  const std::string scale = absl::StrCat(" x 10^", exponent10);
  if (complex_input) {
    return absl::StrCat("(", absl::StrFormat("%.12g%+.12gi", mantissa, mantissa_imag), ")", scale);
  }
  return absl::StrCat(absl::StrFormat("%.15g", mantissa), scale);
}

absl::string_view DeterminantMethodName(v1::DeterminantMethod method) {
  switch (method) {
    case v1::DETERMINANT_METHOD_LU:
      return "lu";
    case v1::DETERMINANT_METHOD_CONDENSATION:
      return "condensation";
    default:
      return "auto";
  }
}

absl::string_view PermanentMethodName(v1::PermanentMethod method) {
  switch (method) {
    case v1::PERMANENT_METHOD_RYSER:
      return "ryser";
    case v1::PERMANENT_METHOD_GLYNN:
      return "glynn";
    default:
      return "auto";
  }
}

absl::string_view PermanentPrecisionName(v1::PermanentPrecision precision) {
  switch (precision) {
    case v1::PERMANENT_PRECISION_FAST:
      return "fast";
    case v1::PERMANENT_PRECISION_EXACT:
      return "exact";
    default:
      return "extended";
  }
}

absl::string_view FactorizationKindName(v1::FactorizationKind kind) {
  switch (kind) {
    case v1::FACTORIZATION_KIND_LU:
      return "lu";
    case v1::FACTORIZATION_KIND_CHOLESKY:
      return "cholesky";
    case v1::FACTORIZATION_KIND_QR:
      return "qr";
    default:
      return "unspecified";
  }
}

// "0.0123  (relative error <= 1.2e-14, 13.9 digits)", and ", ILL-CONDITIONED" when flagged.
std::string FormatAccuracy(const v1::Accuracy& a) {
  return absl::StrCat(absl::StrFormat("%.3g", a.rcond()),
                      "  (relative error <= ", absl::StrFormat("%.3g", a.relative_error_bound()),
                      ", ", absl::StrFormat("%.1f", a.meaningful_digits()), " digits",
                      a.ill_conditioned() ? ", ILL-CONDITIONED" : "", ")\n");
}

}  // namespace

std::string FormatBytes(uint64_t bytes) {
  if (bytes < 1024) return absl::StrCat(bytes, " B");
  constexpr const char* kUnits[] = {"KiB", "MiB", "GiB", "TiB", "PiB"};
  double value = static_cast<double>(bytes) / 1024;
  int unit = 0;
  while (value >= 1024 && unit < 4) {
    value /= 1024;
    ++unit;
  }
  return absl::StrFormat("%.2f %s", value, kUnits[unit]);
}

std::string FormatSeconds(double seconds) {
  if (seconds < 1e-6) return absl::StrFormat("%.0f ns", seconds * 1e9);
  if (seconds < 1e-3) return absl::StrFormat("%.1f us", seconds * 1e6);
  if (seconds < 1) return absl::StrFormat("%.2f ms", seconds * 1e3);
  return absl::StrFormat("%.3f s", seconds);
}

std::string FormatShape(const v1::Matrix& matrix) {
  return absl::StrCat(matrix.rows(), " x ", matrix.cols(), " ", DTypeFlagName(matrix.dtype()));
}

std::string FormatElement(const v1::Matrix& matrix, int64_t i, int64_t j) {
  switch (matrix.dtype()) {
    case v1::DTYPE_FLOAT32:
      return absl::StrFormat("%.6g", ElementAt<float>(matrix, i, j));
    case v1::DTYPE_FLOAT64:
      return absl::StrFormat("%.6g", ElementAt<double>(matrix, i, j));
    case v1::DTYPE_COMPLEX64: {
      const auto v = ElementAt<std::complex<float>>(matrix, i, j);
      return FormatComplex(v.real(), v.imag());
    }
    case v1::DTYPE_COMPLEX128: {
      const auto v = ElementAt<std::complex<double>>(matrix, i, j);
      return FormatComplex(v.real(), v.imag());
    }
    case v1::DTYPE_INT64:
      return absl::StrCat(ElementAt<int64_t>(matrix, i, j));
    case v1::DTYPE_UINT32:
      return absl::StrCat(ElementAt<uint32_t>(matrix, i, j));
    default:
      return "?";
  }
}

std::string FormatMatrixCorner(const v1::Matrix& matrix, int64_t max_rows, int64_t max_cols) {
  if (absl::Status status = CheckMatrixShape(matrix); !status.ok()) {
    return absl::StrCat("<malformed matrix: ", status.message(), ">\n");
  }
  std::string out = absl::StrCat(FormatShape(matrix), "\n");
  const int64_t rows = std::min(matrix.rows(), max_rows);
  const int64_t cols = std::min(matrix.cols(), max_cols);
  for (int64_t i = 0; i < rows; ++i) {
    absl::StrAppend(&out, "    [");
    for (int64_t j = 0; j < cols; ++j) {
      absl::StrAppend(&out, j > 0 ? ", " : "", FormatElement(matrix, i, j));
    }
    absl::StrAppend(&out, cols < matrix.cols() ? ", ...]\n" : "]\n");
  }
  if (rows < matrix.rows()) absl::StrAppend(&out, "    ...\n");
  return out;
}

namespace {

// "  provenance: algorithm A, precision P, result crc32c X\n  versions: k=v, ...\n" with the
// parts the server sent (none from servers before provenance).
std::string FormatProvenance(const v1::ComputeStats& stats) {
  std::string out;
  if (!stats.algorithm().empty() || !stats.precision().empty() || !stats.result_crc32c().empty()) {
    absl::StrAppend(&out, "  provenance: algorithm ",
                    stats.algorithm().empty() ? "?" : stats.algorithm(), ", precision ",
                    stats.precision().empty() ? "?" : stats.precision(), ", result crc32c ",
                    stats.result_crc32c().empty() ? "?" : stats.result_crc32c(), "\n");
  }
  if (!stats.versions().empty()) {
    // A protobuf map has no order: sort for a stable line.
    std::map<std::string, std::string> sorted(stats.versions().begin(), stats.versions().end());
    absl::StrAppend(&out, "  versions: ", absl::StrJoin(sorted, ", ", absl::PairFormatter("=")),
                    "\n");
  }
  return out;
}

}  // namespace

std::string FormatStats(const v1::ComputeStats& stats, absl::Duration round_trip) {
  std::string rate = "n/a";
  if (stats.seconds() > 0 && stats.flops() > 0) {
    rate = absl::StrFormat("%.2f GFLOP/s", stats.flops() / stats.seconds() / 1e9);
  }
  return absl::StrCat("  server: backend ", stats.backend().empty() ? "?" : stats.backend(),
                      ", device ", stats.device().empty() ? "?" : stats.device(), ", compute ",
                      FormatSeconds(stats.seconds()), ", ", absl::StrFormat("%.4g", stats.flops()),
                      " flop (", rate, "), ", FormatBytes(stats.bytes_moved()), " moved\n",
                      FormatProvenance(stats), "  client: round trip ",
                      FormatSeconds(absl::ToDoubleSeconds(round_trip)), "\n");
}

namespace {

// "  certificate: <method>, N primes covering 2^B > bound 2^A[, early stop ...]" and, when the
// residues came back, one line of them.
std::string FormatCertificate(const v1::ExactCertificate& c) {
  std::string out = absl::StrCat("  certificate: ", c.method(), ", ", c.primes_size(),
                                 c.primes_size() == 1 ? " prime" : " primes");
  if (c.bound_bits() > 0) {
    absl::StrAppend(
        &out, absl::StrFormat(" covering 2^%.1f > bound 2^%.1f", c.covered_bits(), c.bound_bits()));
  }
  absl::StrAppend(&out,
                  c.early_stop() ? absl::StrFormat(", early stop (error probability %.3g)",
                                                   c.error_probability())
                                 : ", no early stop",
                  "\n");
  if (c.residues_size() > 0) {
    absl::StrAppend(&out, "  residues:");
    for (int i = 0; i < c.residues_size(); ++i) {
      absl::StrAppend(&out, " ", c.residues(i), " mod ", c.primes(i),
                      i + 1 < c.residues_size() ? "," : "");
    }
    absl::StrAppend(&out, "\n");
  }
  return out;
}

}  // namespace

std::string FormatDeterminant(const v1::DeterminantResponse& r, bool complex_input,
                              uint64_t modulus) {
  std::string out;
  if (modulus > 0) {
    absl::StrAppend(&out, "  det mod ", modulus, " = ", r.residue(), "\n");
    absl::StrAppend(&out, "  singular mod p: ", r.singular() ? "yes" : "no", "\n");
  } else {
    absl::StrAppend(
        &out, "  det      = ",
        r.singular() ? "0 (singular)"
                     : FormatScaled(r.mantissa(), r.mantissa_imag(), r.exponent10(), complex_input),
        "\n");
    if (complex_input) {
      absl::StrAppend(&out, "  phase    = ", FormatComplex(r.phase_re(), r.phase_im()), "\n");
      absl::StrAppend(
          &out, "  value    = ", absl::StrFormat("%.15g%+.15gi", r.value(), r.value_imag()), "\n");
    } else {
      absl::StrAppend(&out, "  sign     = ", r.sign() > 0 ? "+1" : r.sign() < 0 ? "-1" : "0", "\n");
      absl::StrAppend(&out, "  value    = ", absl::StrFormat("%.15g", r.value()), "\n");
    }
    absl::StrAppend(&out, "  log|det| = ", absl::StrFormat("%.15g", r.log_abs()), "\n");
    if (!r.exact().empty()) absl::StrAppend(&out, "  exact    = ", r.exact(), "\n");
    if (r.has_accuracy()) absl::StrAppend(&out, "  rcond    = ", FormatAccuracy(r.accuracy()));
  }
  absl::StrAppend(&out, "  method   = ", DeterminantMethodName(r.method_used()), "\n");
  if (r.has_certificate()) absl::StrAppend(&out, FormatCertificate(r.certificate()));
  return out;
}

std::string FormatFactorization(const v1::FactorizeResponse& r) {
  std::string out = absl::StrCat("  kind: ", FactorizationKindName(r.kind()), "\n");
  auto matrix_line = [&](absl::string_view name, const v1::Matrix& m) {
    absl::StrAppend(&out, "  ", name, ": ", FormatMatrixCorner(m, 3, 4));
  };
  if (r.has_lu()) matrix_line("lu", r.lu());
  if (r.permutation_size() > 0) {
    constexpr int kShown = 10;
    std::vector<int64_t> first(r.permutation().begin(),
                               r.permutation().begin() + std::min(kShown, r.permutation_size()));
    absl::StrAppend(&out, "  permutation: [", absl::StrJoin(first, ", "),
                    r.permutation_size() > kShown ? ", ..." : "", "] (", r.permutation_size(),
                    " entries)\n");
  }
  if (r.kind() == v1::FACTORIZATION_KIND_LU) {
    absl::StrAppend(
        &out, "  singular: ",
        r.singular() ? absl::StrCat("yes, first zero pivot in column ", r.singular_column()) : "no",
        "\n");
  }
  if (r.has_l()) matrix_line("l", r.l());
  if (r.has_q()) matrix_line("q", r.q());
  if (r.has_r()) matrix_line("r", r.r());
  if (r.has_solution()) matrix_line("solution", r.solution());
  if (r.has_accuracy()) absl::StrAppend(&out, "  rcond: ", FormatAccuracy(r.accuracy()));
  if (r.has_refinement()) {
    const v1::Refinement& refinement = r.refinement();
    absl::StrAppend(
        &out, "  refinement: ", refinement.converged() ? "converged" : "NOT converged",
        absl::StrFormat(" after %d steps (backward error %.3g, threshold %.3g, %s factors%s)\n",
                        refinement.iterations(), refinement.backward_error(),
                        refinement.threshold(), refinement.factor_precision(),
                        refinement.fell_back() ? ", fell back from the low precision" : ""));
  }
  return out;
}

std::string FormatProduct(const v1::MultiplyResponse& r, int64_t block_size) {
  std::string out = r.has_c() ? absl::StrCat("  c: ", FormatMatrixCorner(r.c(), 3, 4)) : "";
  if (block_size > 0) {
    const double fraction = r.block_products_total() > 0
                                ? static_cast<double>(r.block_products()) /
                                      static_cast<double>(r.block_products_total())
                                : 0.0;
    absl::StrAppend(&out, "  block products: ", r.block_products(), " of ",
                    r.block_products_total(), absl::StrFormat(" (%.1f%%)", 100 * fraction),
                    " with ", block_size, " x ", block_size, " blocks\n");
  }
  if (r.has_check()) {
    const v1::ProductCheck& check = r.check();
    absl::StrAppend(
        &out, "  freivalds: ", check.passed() ? "passed" : "FAILED",
        absl::StrFormat(" (discrepancy %.3g, tolerance %.3g, %d vectors, seed %#x)\n",
                        check.discrepancy(), check.tolerance(), check.vectors(), check.seed()));
  }
  return out;
}

std::string FormatPermanent(const v1::PermanentResponse& r, bool complex_input) {
  std::string out;
  if (complex_input) {
    absl::StrAppend(&out, "  per    = ", absl::StrFormat("%.15g%+.15gi", r.value(), r.imag()),
                    "\n");
  } else {
    absl::StrAppend(&out, "  per    = ", absl::StrFormat("%.15g", r.value()), "\n");
  }
  if (!r.exact().empty()) absl::StrAppend(&out, "  exact  = ", r.exact(), "\n");
  absl::StrAppend(&out, "  method = ", PermanentMethodName(r.method_used()), "\n");
  absl::StrAppend(&out, "  precision = ", PermanentPrecisionName(r.precision_used()),
                  ", walk = ", r.walk_used() == v1::PERMANENT_WALK_SPARSE ? "sparse" : "dense",
                  "\n");
  if (r.has_certificate()) absl::StrAppend(&out, FormatCertificate(r.certificate()));
  return out;
}

std::string FormatResidentShape(const v1::ResidentMatrix& m) {
  return absl::StrCat(m.rows(), " x ", m.cols(), " ", DTypeFlagName(m.dtype()), ", ",
                      FormatBytes(m.bytes()));
}

std::string FormatKept(const google::protobuf::Map<std::string, v1::ResidentMatrix>& kept) {
  const std::map<std::string, v1::ResidentMatrix> by_name(kept.begin(), kept.end());
  std::string out;
  for (const auto& [name, m] : by_name) {
    absl::StrAppend(&out, "  kept ", name, ": ", m.handle(), " (", FormatResidentShape(m), ")\n");
  }
  return out;
}

}  // namespace matrixd
