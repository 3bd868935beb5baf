#include <cuda_runtime.h>

#include <algorithm>
#include <climits>
#include <complex>
#include <cstdint>

#include "absl/status/status.h"
#include "absl/status/statusor.h"
#include "core/cuda/blocked_elimination.cuh"
#include "core/cuda/condensation_steps.cuh"
#include "core/cuda/cuda_status.h"
#include "core/cuda/elimination.h"
#include "core/cuda/elimination_fields.cuh"
#include "core/cuda/elimination_schedule.cuh"
#include "core/cuda/modular_reduction.h"
#include "core/modular_arithmetic.h"

namespace matrixd::cuda {
namespace {

template <class Field>
absl::StatusOr<EliminationOutcome<typename Field::Value>> Eliminate(
    DeviceContext& context, DeviceBuffer& matrix, int64_t n, const Field& field, Schedule schedule,
    JobControl* control, EliminationWork* work) {
  return schedule == Schedule::kBlocked
             ? BlockedElimination(context, matrix, n, field, control, work)
             : StepwiseElimination(context, matrix, n, field, control, work);
}

std::complex<double> ToComplex(double x) { return x; }
std::complex<double> ToComplex(Complex128 z) { return {z.re, z.im}; }

template <class Field>
absl::StatusOr<CondensationPivots> PivotsOf(DeviceContext& context, DeviceBuffer& matrix, int64_t n,
                                            Schedule schedule, JobControl* control,
                                            EliminationWork* work) {
  MATRIXD_ASSIGN_OR_RETURN(EliminationOutcome<typename Field::Value> outcome,
                           Eliminate(context, matrix, n, Field{}, schedule, control, work));
  CondensationPivots pivots;
  pivots.singular = outcome.singular;
  pivots.values.reserve(outcome.pivots.size());
  for (const auto p : outcome.pivots) pivots.values.push_back(ToComplex(p));
  return pivots;
}

ModU64Field MakeModU64Field(uint64_t p) { return ModU64Field{BarrettModulus::Of(p), 0}; }

// REQUIRES: 2 <= p < 2^26.
ModDoubleField MakeModDoubleField(uint64_t p) {
  const uint64_t half = p / 2;
  // An accumulator starts reduced (|acc| <= half) and may take t more products of magnitude at
  // most half^2 while it stays below 2^53, where every integer is exact.
  const uint64_t terms = ((uint64_t{1} << 53) - half) / (half * half);
  return ModDoubleField{static_cast<double>(p), 1.0 / static_cast<double>(p),
                        static_cast<double>(half),
                        static_cast<int>(std::min<uint64_t>(terms, INT_MAX))};
}

uint64_t CanonicalResidue(uint64_t r, uint64_t) { return r; }
uint64_t CanonicalResidue(double r, uint64_t p) {
  return static_cast<uint64_t>(r < 0 ? r + static_cast<double>(p) : r);
}

constexpr int kResidueThreads = 256;

// In place: an int64 entry and its residue have the same size.
template <class Field>
__global__ void __launch_bounds__(kResidueThreads)
    ResiduesKernel(Field field, int64_t* entries, int64_t count) {
  static_assert(sizeof(typename Field::Value) == sizeof(int64_t));
  auto* residues = reinterpret_cast<typename Field::Value*>(entries);
  const int64_t stride = static_cast<int64_t>(gridDim.x) * kResidueThreads;
  for (int64_t i = static_cast<int64_t>(blockIdx.x) * kResidueThreads + threadIdx.x; i < count;
       i += stride) {
    residues[i] = field.FromSigned(entries[i]);
  }
}

template <class Field>
absl::StatusOr<uint64_t> ModularDeterminantOf(DeviceContext& context, const int64_t* entries,
                                              int64_t n, uint64_t p, const Field& field,
                                              Schedule schedule, JobControl* control,
                                              EliminationWork* work) {
  using T = typename Field::Value;
  const size_t count = static_cast<size_t>(n) * static_cast<size_t>(n);
  const size_t bytes = count * sizeof(int64_t);
  MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer matrix, context.Allocate(bytes));
  MATRIXD_RETURN_IF_ERROR(context.Upload(entries, matrix, bytes));
  const int64_t blocks = std::min<int64_t>(
      (static_cast<int64_t>(count) + kResidueThreads - 1) / kResidueThreads, int64_t{1} << 16);
  ResiduesKernel<Field><<<static_cast<unsigned>(blocks), kResidueThreads, 0, context.stream()>>>(
      field, matrix.as<int64_t>(), static_cast<int64_t>(count));
  MATRIXD_CUDA_RETURN_IF_LAUNCH_ERROR(ResiduesKernel<Field>);
  work->bytes_moved += 3 * bytes;  // uploaded, read, written

  MATRIXD_ASSIGN_OR_RETURN(EliminationOutcome<T> outcome,
                           Eliminate(context, matrix, n, field, schedule, control, work));
  if (outcome.singular) return uint64_t{0};
  uint64_t det = 1;
  for (const T pivot : outcome.pivots) det = MulMod(det, CanonicalResidue(pivot, p), p);
  return det;
}

}  // namespace

absl::StatusOr<CondensationPivots> CondensePivots(DeviceContext& context, DeviceBuffer& matrix,
                                                  int64_t n, bool complex, Schedule schedule,
                                                  JobControl* control, EliminationWork* work) {
  return complex ? PivotsOf<ComplexField>(context, matrix, n, schedule, control, work)
                 : PivotsOf<RealField>(context, matrix, n, schedule, control, work);
}

absl::StatusOr<uint64_t> ModularDeterminantOnDevice(DeviceContext& context, const int64_t* entries,
                                                    int64_t n, uint64_t p,
                                                    ResidueArithmetic arithmetic, Schedule schedule,
                                                    JobControl* control, EliminationWork* work) {
  if (arithmetic == ResidueArithmetic::kBalancedFloat64) {
    return ModularDeterminantOf(context, entries, n, p, MakeModDoubleField(p), schedule, control,
                                work);
  }
  return ModularDeterminantOf(context, entries, n, p, MakeModU64Field(p), schedule, control, work);
}

}  // namespace matrixd::cuda
