#include "server/job_cost.h"

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <optional>

#include "core/factorization.h"

namespace matrixd::server {
namespace {

double ComplexFactor(DType dtype) { return IsComplex(dtype) ? 4.0 : 1.0; }

// log2 of the largest |entry| of an INT64 matrix (0 for a zero matrix).
double Log2LargestEntry(const MatrixView& a) {
  uint64_t largest = 0;
  for (const int64_t value : a.As<int64_t>()) {
    largest = std::max(largest, value < 0 ? uint64_t{0} - static_cast<uint64_t>(value)
                                          : static_cast<uint64_t>(value));
  }
  return largest == 0 ? 0.0 : std::log2(static_cast<double>(largest));
}

// 62-bit primes for a value of at most 2^bits in magnitude (sign included).
double PrimesFor(double bits) { return std::floor((bits + 1.0) / 62.0) + 1.0; }

}  // namespace

double EstimatedFlops(const DeterminantInputs& inputs) {
  const MatrixView& a = inputs.matrix.view();
  const double n = static_cast<double>(a.rows);
  double flops = n * n * n * ComplexFactor(a.dtype);
  if (a.dtype == DType::kInt64 && inputs.options.modulus == 0) {
    // Hadamard's bound as validation computed it, else its cruder form
    // |det A| <= (sqrt(n) max|a_ij|)^n (a scan of A); -infinity (a zero row) costs one prime's
    // worth.
    const std::optional<double>& given = inputs.options.hadamard_bound_bits;
    const double bits = given.has_value() ? *given : n * (0.5 * std::log2(n) + Log2LargestEntry(a));
    flops *= PrimesFor(std::max(bits, 0.0));
  }
  return flops;
}

double EstimatedFlops(const FactorizeInputs& inputs) {
  const MatrixView& a = inputs.matrix.view();
  // A batch stacks batch_count matrices of one shape.
  const double batch = static_cast<double>(std::max<int64_t>(inputs.batch_count, 1));
  const double m = static_cast<double>(a.rows) / batch;
  const double n = static_cast<double>(a.cols);
  const double k = std::min(m, n);
  double flops = 0.0;
  switch (inputs.kind) {
    case FactorizationKind::kLu:
      flops = m * n * k;
      break;
    case FactorizationKind::kQr:
      flops = 2.0 * m * n * k;
      break;
    case FactorizationKind::kCholesky:
      flops = n * n * n / 3.0;
      break;
  }
  if (const MatrixView* rhs = inputs.rhs_view(); rhs != nullptr) {
    flops += 2.0 * m * n * static_cast<double>(rhs->cols);
  }
  return batch * flops * ComplexFactor(a.dtype);
}

double EstimatedFlops(const MultiplyInputs& inputs) {
  const MatrixView& a = inputs.a.view();
  const MatrixView& b = inputs.b.view();
  const double m = static_cast<double>(inputs.options.transpose_a ? a.cols : a.rows);
  const double k = static_cast<double>(inputs.options.transpose_a ? a.rows : a.cols);
  const double n = static_cast<double>(inputs.options.transpose_b ? b.rows : b.cols);
  return 2.0 * m * k * n * ComplexFactor(a.dtype);
}

double EstimatedFlops(const PermanentInputs& inputs) {
  const MatrixView& a = inputs.matrix.view();
  const int n = static_cast<int>(a.rows);
  const int steps_log2 = inputs.options.method == PermanentMethod::kRyser ? n : n - 1;
  double flops = 2.0 * n * std::ldexp(1.0, steps_log2) * ComplexFactor(a.dtype);
  if (a.dtype == DType::kInt64) {
    // |per A| <= n! max|a_ij|^n <= (n max|a_ij|)^n.
    flops *= PrimesFor(n * (std::log2(static_cast<double>(n)) + Log2LargestEntry(a)));
  }
  return flops;
}

double EstimatedFlops(const SolveInputs& inputs) {
  return SolveFlops(inputs.factorization, inputs.rhs.view().cols, inputs.options.residual);
}

}  // namespace matrixd::server
