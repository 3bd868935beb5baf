// Dense matrices as core sees them: an element type, a shape and packed row-major bytes.
// A MatrixView borrows; a Matrix owns. Neither knows anything of protobuf or gRPC.
#ifndef MATRIXD_CORE_MATRIX_H_
#define MATRIXD_CORE_MATRIX_H_

#include <complex>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <span>
#include <string_view>
#include <vector>

namespace matrixd {

enum class DType : int { kFloat32, kFloat64, kComplex64, kComplex128, kInt64, kUInt32 };

// Bytes per element: 4, 8, 8, 16, 8, 4.
size_t ElementSize(DType dtype);
// "float32", "float64", "complex64", "complex128", "int64", "uint32".
const char* DTypeName(DType dtype);
bool IsComplex(DType dtype);
// True for the real and complex floating-point types.
bool IsFloating(DType dtype);

// The C++ element type of each dtype.
template <typename T>
constexpr DType DTypeOf();
template <>
constexpr DType DTypeOf<float>() {
  return DType::kFloat32;
}
template <>
constexpr DType DTypeOf<double>() {
  return DType::kFloat64;
}
template <>
constexpr DType DTypeOf<std::complex<float>>() {
  return DType::kComplex64;
}
template <>
constexpr DType DTypeOf<std::complex<double>>() {
  return DType::kComplex128;
}
template <>
constexpr DType DTypeOf<int64_t>() {
  return DType::kInt64;
}
template <>
constexpr DType DTypeOf<uint32_t>() {
  return DType::kUInt32;
}

// Where a MatrixView's bytes are: host memory, or the memory of the backend's device `device`
// (a resident matrix; see core/resident_matrix.h). Host code must not read a device view's data.
enum class MemorySpace : int { kHost, kDevice };

// A borrowed rows x cols matrix, row-major. REQUIRES: data holds rows*cols elements of dtype and
// is aligned for that element type (a Matrix's storage always is).
struct MatrixView {
  int64_t rows = 0;
  int64_t cols = 0;
  DType dtype = DType::kFloat64;
  const std::byte* data = nullptr;
  MemorySpace space = MemorySpace::kHost;
  int device = -1;  // the device index (Backend::DeviceMemory() order) of a kDevice view

  bool on_device() const { return space == MemorySpace::kDevice; }

  int64_t size() const { return rows * cols; }
  size_t byte_size() const { return static_cast<size_t>(size()) * ElementSize(dtype); }
  // The elements as T. REQUIRES: DTypeOf<T>() == dtype.
  template <typename T>
  std::span<const T> As() const {
    return {reinterpret_cast<const T*>(data), static_cast<size_t>(size())};
  }
};

// An owning, aligned rows x cols matrix, row-major, zero-initialised; or one that borrows memory
// the caller gave for a result (Borrowing: a shared-memory range the result must end up in), so
// that the operation writes there directly. A copy of either owns its bytes.
class Matrix {
 public:
  Matrix() = default;
  Matrix(int64_t rows, int64_t cols, DType dtype);
  Matrix(const Matrix& other);
  Matrix& operator=(const Matrix& other);
  Matrix(Matrix&& other) noexcept;
  Matrix& operator=(Matrix&& other) noexcept;
  ~Matrix() = default;
  // A new matrix whose bytes are NOT initialised, for a caller that writes every one of them
  // (a download of a result): a large one then costs no serial pass clearing it, and its pages
  // are first touched by whoever writes them (the staging's copy threads, in parallel).
  static Matrix ForOverwrite(int64_t rows, int64_t cols, DType dtype);
  // A matrix whose bytes are [bytes, bytes + rows*cols*ElementSize(dtype)), not copied, not
  // cleared. REQUIRES: the range outlives the matrix and is aligned for dtype.
  static Matrix Borrowing(int64_t rows, int64_t cols, DType dtype, std::byte* bytes);

  // Copies the bytes of `view`.
  static Matrix CopyOf(const MatrixView& view);
  // Copies `bytes` (rows*cols*ElementSize(dtype) of them) into a new matrix.
  static Matrix FromBytes(int64_t rows, int64_t cols, DType dtype,
                          std::span<const std::byte> bytes);
  // Builds a matrix from row-major values. REQUIRES: values.size() == rows * cols.
  template <typename T>
  static Matrix FromValues(int64_t rows, int64_t cols, std::span<const T> values) {
    Matrix m(rows, cols, DTypeOf<T>());
    std::memcpy(m.mutable_bytes(), values.data(), m.byte_size());
    return m;
  }
  template <typename T>
  static Matrix FromValues(int64_t rows, int64_t cols, const std::vector<T>& values) {
    return FromValues<T>(rows, cols, std::span<const T>(values));
  }

  int64_t rows() const { return rows_; }
  int64_t cols() const { return cols_; }
  DType dtype() const { return dtype_; }
  int64_t size() const { return rows_ * cols_; }
  size_t byte_size() const { return static_cast<size_t>(size()) * ElementSize(dtype_); }
  bool empty() const { return size() == 0; }
  // True when the bytes are the caller's (Borrowing), not the matrix's own.
  bool borrowed() const { return borrowed_ != nullptr; }

  MatrixView view() const { return {rows_, cols_, dtype_, bytes()}; }
  const std::byte* bytes() const { return borrowed_ != nullptr ? borrowed_ : storage_.data(); }
  std::byte* mutable_bytes() { return borrowed_ != nullptr ? borrowed_ : storage_.data(); }

  // The elements as T. REQUIRES: DTypeOf<T>() == dtype().
  template <typename T>
  std::span<T> As() {
    return {reinterpret_cast<T*>(mutable_bytes()), static_cast<size_t>(size())};
  }
  template <typename T>
  std::span<const T> As() const {
    return {reinterpret_cast<const T*>(bytes()), static_cast<size_t>(size())};
  }

 private:
  int64_t rows_ = 0;
  int64_t cols_ = 0;
  DType dtype_ = DType::kFloat64;
  // Bytes that value-initialise to nothing (the constructor clears them, ForOverwrite does not);
  // operator new aligns them to __STDCPP_DEFAULT_NEW_ALIGNMENT__ (16 on x86-64), enough for
  // every element type.
  template <typename U>
  struct DefaultInitAllocator : std::allocator<U> {
    template <typename V>
    struct rebind {
      using other = DefaultInitAllocator<V>;
    };
    using std::allocator<U>::allocator;
    template <typename V>
    void construct(V* p) noexcept {
      ::new (static_cast<void*>(p)) V;
    }
    template <typename V, typename... Args>
    void construct(V* p, Args&&... args) {
      ::new (static_cast<void*>(p)) V(std::forward<Args>(args)...);
    }
  };
  std::vector<std::byte, DefaultInitAllocator<std::byte>> storage_;
  std::byte* borrowed_ = nullptr;  // set by Borrowing; storage_ is then empty
};

}  // namespace matrixd

#endif  // MATRIXD_CORE_MATRIX_H_
