#include "core/matrix_generator.h"

#include <algorithm>
#include <complex>
#include <span>
#include <vector>

#include "absl/strings/str_cat.h"

namespace matrixd {
namespace {

// SplitMix64's finaliser: a counter-based generator, one call per (seed, element, part).
uint64_t Mix(uint64_t x) {
  x += 0x9e3779b97f4a7c15ULL;
  x = (x ^ (x >> 30)) * 0xbf58476d1ce4e5b9ULL;
  x = (x ^ (x >> 27)) * 0x94d049bb133111ebULL;
  return x ^ (x >> 31);
}

// Uniform in [-1, 1) from the top 53 bits.
double Uniform(uint64_t seed, uint64_t index, uint64_t part) {
  const uint64_t bits = Mix(seed ^ Mix(2 * index + part));
  return static_cast<double>(bits >> 11) * 0x1.0p-52 - 1.0;
}

template <typename T>
T Entry(const GeneratorOptions& options, int64_t i, int64_t j, int64_t cols) {
  switch (options.kind) {
    case GeneratorKind::kIdentity:
      return T(i == j ? 1 : 0);
    case GeneratorKind::kHilbert:
      if constexpr (std::is_integral_v<T>) {
        return T(0);  // refused by CheckGenerator
      } else {
        return T(1.0 / static_cast<double>(i + j + 1));
      }
    case GeneratorKind::kRandom:
      break;
  }
  const uint64_t index =
      static_cast<uint64_t>(i) * static_cast<uint64_t>(cols) + static_cast<uint64_t>(j);
  if constexpr (std::is_same_v<T, int64_t>) {
    return static_cast<int64_t>(Mix(options.seed ^ Mix(2 * index)) % 19) - 9;
  } else if constexpr (std::is_same_v<T, uint32_t>) {
    return static_cast<uint32_t>(Mix(options.seed ^ Mix(2 * index)) & 0xffff);
  } else if constexpr (std::is_same_v<T, std::complex<float>> ||
                       std::is_same_v<T, std::complex<double>>) {
    using R = typename T::value_type;
    return T(static_cast<R>(Uniform(options.seed, index, 0)),
             static_cast<R>(Uniform(options.seed, index, 1)));
  } else {
    return static_cast<T>(Uniform(options.seed, index, 0));
  }
}

template <typename T>
absl::Status Fill(ResidentMatrix& matrix, const GeneratorOptions& options) {
  const int64_t rows = matrix.rows();
  const int64_t cols = matrix.cols();
  // About 8 MiB per write: large enough for copy-engine speed, small enough to stay in cache.
  const int64_t block_rows =
      std::max<int64_t>(1, (int64_t{8} << 20) / std::max<int64_t>(1, cols * int64_t{sizeof(T)}));
  std::vector<T> block;
  for (int64_t first = 0; first < rows; first += block_rows) {
    const int64_t count = std::min(block_rows, rows - first);
    block.resize(static_cast<size_t>(count * cols));
    for (int64_t i = 0; i < count; ++i) {
      for (int64_t j = 0; j < cols; ++j) {
        block[static_cast<size_t>(i * cols + j)] = Entry<T>(options, first + i, j, cols);
      }
    }
    const uint64_t offset = static_cast<uint64_t>(first * cols) * sizeof(T);
    if (absl::Status written = matrix.Write(offset, std::as_bytes(std::span<const T>(block)));
        !written.ok()) {
      return written;
    }
  }
  return matrix.Flush();
}

}  // namespace

absl::Status CheckGenerator(const GeneratorOptions& options, DType dtype) {
  if (options.kind == GeneratorKind::kHilbert && !IsFloating(dtype)) {
    return absl::InvalidArgumentError(
        absl::StrCat("a Hilbert matrix needs a floating dtype, not ", DTypeName(dtype)));
  }
  return absl::OkStatus();
}

absl::Status GenerateInto(ResidentMatrix& matrix, const GeneratorOptions& options) {
  if (absl::Status valid = CheckGenerator(options, matrix.dtype()); !valid.ok()) return valid;
  switch (matrix.dtype()) {
    case DType::kFloat32:
      return Fill<float>(matrix, options);
    case DType::kFloat64:
      return Fill<double>(matrix, options);
    case DType::kComplex64:
      return Fill<std::complex<float>>(matrix, options);
    case DType::kComplex128:
      return Fill<std::complex<double>>(matrix, options);
    case DType::kInt64:
      return Fill<int64_t>(matrix, options);
    case DType::kUInt32:
      return Fill<uint32_t>(matrix, options);
  }
  return absl::InvalidArgumentError("unknown dtype");
}

}  // namespace matrixd
