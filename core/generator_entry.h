// The entries of a generated matrix (the Generate RPC) as pure functions of (seed, row, col),
// compiled for the host and, under nvcc, for the device too: the CPU generator
// (core/matrix_generator.cc) and the CUDA kernel (core/cuda/generated_entries.cu) share this one
// definition, so that a matrix made on a GPU is bit for bit the one made on the host.
// No CUDA header and no Abseil here: plain C++ that nvcc and the host compiler both take.
#ifndef MATRIXD_CORE_GENERATOR_ENTRY_H_
#define MATRIXD_CORE_GENERATOR_ENTRY_H_

#include <cstdint>
#include <type_traits>

#include "core/matrix.h"

#if defined(__CUDACC__)
#define MATRIXD_HOST_DEVICE __host__ __device__
#else
#define MATRIXD_HOST_DEVICE
#endif

namespace matrixd {

enum class GeneratorKind { kRandom, kIdentity, kHilbert };

struct GeneratorOptions {
  GeneratorKind kind = GeneratorKind::kRandom;
  uint64_t seed = 0;
};

// Which global rows a matrix's local rows are: local row r is global row
// ((r / block) * stride + offset) * block + r % block. The default is the identity (a whole
// matrix); part g of a matrix dealt in blocks of `block` rows over R parts has stride R, offset g
// (core/distributed_resident_matrix.h).
struct GeneratedRows {
  int64_t block = 1;
  int64_t stride = 1;
  int64_t offset = 0;

  MATRIXD_HOST_DEVICE int64_t Global(int64_t local_row) const {
    return ((local_row / block) * stride + offset) * block + local_row % block;
  }
};

namespace generator {

// SplitMix64's finaliser: a counter-based generator, one call per (seed, element, part).
MATRIXD_HOST_DEVICE inline uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) from the top 53 bits. The product by 2^-52 is exact, so a fused
// multiply-add (which nvcc may form) rounds the same as the separate operations.
MATRIXD_HOST_DEVICE inline double Uniform(uint64_t seed, uint64_t index, uint64_t part) {
  const uint64_t bits = Mix(seed ^ Mix(2 * index + part));
  return static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0;
}

// Element (i, j) of a matrix with `cols` columns, as its `Parts` scalars of type `Scalar` (2 for
// complex types: real, imaginary; 1 otherwise): kRandom uniform in [-1, 1) (INT64 in [-9, 9],
// UINT32 in [0, 2^16)), kIdentity 1 on the diagonal, kHilbert 1 / (i + j + 1) (0 for integer
// types, which CheckGenerator refuses).
template <typename Scalar, int Parts>
MATRIXD_HOST_DEVICE inline void Entry(GeneratorOptions options, int64_t i, int64_t j, int64_t cols,
                                      Scalar* out) {
  static_assert(Parts == 1 || Parts == 2);
  if (Parts == 2) out[Parts - 1] = Scalar(0);
  if (options.kind == GeneratorKind::kIdentity) {
    out[0] = Scalar(i == j ? 1 : 0);
    return;
  }
  if (options.kind == GeneratorKind::kHilbert) {
    if constexpr (std::is_integral_v<Scalar>) {
      out[0] = Scalar(0);
    } else {
      out[0] = static_cast<Scalar>(1.0 / static_cast<double>(i + j + 1));
    }
    return;
  }
  const uint64_t index =
      static_cast<uint64_t>(i) * static_cast<uint64_t>(cols) + static_cast<uint64_t>(j);
  if constexpr (std::is_same_v<Scalar, int64_t>) {
    out[0] = static_cast<int64_t>(Mix(options.seed ^ Mix(2 * index)) % 19) - 9;
  } else if constexpr (std::is_same_v<Scalar, uint32_t>) {
    out[0] = static_cast<uint32_t>(Mix(options.seed ^ Mix(2 * index)) & 0xffff);
  } else {
    for (int part = 0; part < Parts; ++part) {
      out[part] = static_cast<Scalar>(Uniform(options.seed, index, static_cast<uint64_t>(part)));
    }
  }
}

// Calls visit.template operator()<Scalar, Parts>() with dtype's element as Entry takes it (its
// scalar, and 2 parts for a complex dtype) and returns true; false for a value outside DType.
// Host code only (the CPU generator's fill and the CUDA kernel's launch share it).
template <typename Visitor>
bool ForEntryType(DType dtype, Visitor&& visit) {
  switch (dtype) {
    case DType::kFloat32:
      visit.template operator()<float, 1>();
      return true;
    case DType::kFloat64:
      visit.template operator()<double, 1>();
      return true;
    case DType::kComplex64:
      visit.template operator()<float, 2>();
      return true;
    case DType::kComplex128:
      visit.template operator()<double, 2>();
      return true;
    case DType::kInt64:
      visit.template operator()<int64_t, 1>();
      return true;
    case DType::kUInt32:
      visit.template operator()<uint32_t, 1>();
      return true;
  }
  return false;
}

}  // namespace generator
}  // namespace matrixd

#endif  // MATRIXD_CORE_GENERATOR_ENTRY_H_
