// Human-readable text for matrixctl: numbers, shapes, matrix corners, and each response.
#ifndef MATRIXD_CLIENT_RESULT_FORMAT_H_
#define MATRIXD_CLIENT_RESULT_FORMAT_H_

#include <cstdint>
#include <string>

#include "absl/time/time.h"
#include "matrixd/v1/matrixd.pb.h"

namespace matrixd {

// "1.50 KiB", "3.20 GiB"; bytes below 1 KiB as "512 B".
std::string FormatBytes(uint64_t bytes);

// A duration in seconds with a fitting unit: "850 ns", "12.3 us", "4.56 ms", "1.234 s".
std::string FormatSeconds(double seconds);

// "500 x 500 float64".
std::string FormatShape(const v1::Matrix& matrix);

// Element (i, j) as text: integers exactly, floats with 6 significant digits, complex numbers as
// "a+bi". REQUIRES: the matrix passes CheckMatrixShape and (i, j) is inside it.
std::string FormatElement(const v1::Matrix& matrix, int64_t i, int64_t j);

// The shape and the top-left corner (at most max_rows x max_cols), one indented line per row,
// with "..." where rows or columns are cut. A malformed matrix is reported, not printed.
std::string FormatMatrixCorner(const v1::Matrix& matrix, int64_t max_rows = 4,
                               int64_t max_cols = 5);

// The server's stats and the client-observed round trip, two lines:
//   server: backend cpu, device ..., compute 4.56 ms, 12.3 GFLOP/s, 1.50 MiB moved
//   client: round trip 5.01 ms
std::string FormatStats(const v1::ComputeStats& stats, absl::Duration round_trip);

// Multi-line summaries of each response (without the stats).
std::string FormatDeterminant(const v1::DeterminantResponse& response, bool complex_input,
                              uint64_t modulus);
std::string FormatFactorization(const v1::FactorizeResponse& response);
std::string FormatProduct(const v1::MultiplyResponse& response, int64_t block_size);
std::string FormatPermanent(const v1::PermanentResponse& response, bool complex_input);

// A resident matrix's shape and size: "500 x 500 float64, 1.91 MiB".
std::string FormatResidentShape(const v1::ResidentMatrix& matrix);

// One line per kept result, "  kept c: HANDLE (500 x 500 float64, 1.91 MiB)", in name order;
// empty for none.
std::string FormatKept(const google::protobuf::Map<std::string, v1::ResidentMatrix>& kept);

}  // namespace matrixd

#endif  // MATRIXD_CLIENT_RESULT_FORMAT_H_
