#include "core/cpu/kernel_names.h"

namespace matrixd::cpu {

const char* KernelNameOf(const DeterminantResult& result) {
  return result.method_used == DeterminantMethod::kCondensation ? "condensation" : "lu";
}
const char* KernelNameOf(const FactorizeResult& result) {
  switch (result.kind) {
    case FactorizationKind::kCholesky:
      return "potrf";
    case FactorizationKind::kQr:
      return "geqrf";
    case FactorizationKind::kLu:
      break;
  }
  // A refinement: LAPACK's mixed-precision solver (no factors returned), or getrf refined.
  if (result.refinement.has_value()) return result.lu.empty() ? "gesv_mixed" : "getrf+refine";
  return "getrf";
}
const char* KernelNameOf(const SolveResult& /*result*/) { return "solve"; }
const char* KernelNameOf(const MultiplyResult& result) {
  return result.block_products_total > 0 ? "block_sparse_gemm" : "gemm";
}
const char* KernelNameOf(const PermanentResult& result) {
  return result.method_used == PermanentMethod::kRyser ? "ryser" : "glynn";
}

}  // namespace matrixd::cpu
