// Layout kernels (transposes, triangle clearing, batch gathers) move elements as plain bits of the
// element's size, so a float NaN payload or a complex pair goes through unchanged. ForElementSize
// picks the integer type of that size at run time. Included by .cu files only.
#ifndef MATRIXD_CORE_CUDA_ELEMENT_BITS_CUH_
#define MATRIXD_CORE_CUDA_ELEMENT_BITS_CUH_

#include <cuda_runtime.h>

#include <cstddef>

namespace matrixd::cuda {

template <size_t kBytes>
struct BitsOf;
template <>
struct BitsOf<4> {
  using Type = unsigned int;
};
template <>
struct BitsOf<8> {
  using Type = unsigned long long;
};
template <>
struct BitsOf<16> {
  using Type = uint4;
};

// Calls launch(BitsOf<element_size>::Type{}) and returns its result for an element size of 4, 8
// or 16 bytes; cudaErrorInvalidValue for any other.
template <typename Launch>
cudaError_t ForElementSize(size_t element_size, Launch&& launch) {
  switch (element_size) {
    case 4:
      return launch(BitsOf<4>::Type{});
    case 8:
      return launch(BitsOf<8>::Type{});
    case 16:
      return launch(BitsOf<16>::Type{});
    default:
      return cudaErrorInvalidValue;
  }
}

}  // namespace matrixd::cuda

#endif  // MATRIXD_CORE_CUDA_ELEMENT_BITS_CUH_
