// Early-return macros for absl::Status and absl::StatusOr, for core/ and server/ alike (as Triton
// keeps its status macros in one header, src/status.h).
//
//   MATRIXD_RETURN_IF_ERROR(context.Upload(host, buffer, bytes));
//   MATRIXD_ASSIGN_OR_RETURN(DeviceBuffer buffer, context.Allocate(bytes));
//   MATRIXD_ASSIGN_OR_RETURN(existing, ComputeSomething());  // assigns to a declared variable
//
// Both return the failed status unchanged from the enclosing function, which must return
// absl::Status or an absl::StatusOr<U>. MATRIXD_ASSIGN_OR_RETURN expands to several statements: do
// not use it as the body of an unbraced if/else, and wrap an `lhs` holding a comma (a template
// with two arguments) in a type alias.
#ifndef MATRIXD_CORE_STATUS_MACROS_H_
#define MATRIXD_CORE_STATUS_MACROS_H_

#include <utility>

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define MATRIXD_STATUS_MACROS_CONCAT_INNER(a, b) a##b
#define MATRIXD_STATUS_MACROS_CONCAT(a, b) MATRIXD_STATUS_MACROS_CONCAT_INNER(a, b)

// Returns the status of `expr` (an absl::Status) when it is not OK.
#define MATRIXD_RETURN_IF_ERROR(expr)                                     \
  do {                                                                    \
    if (::absl::Status matrixd_status_ = (expr); !matrixd_status_.ok()) { \
      return matrixd_status_;                                             \
    }                                                                     \
  } while (0)

// Evaluates `expr` (an absl::StatusOr<T>); returns its status when it is not OK, else moves its
// value into `lhs`, which may declare a variable (`T name`, `const auto name`) or name one.
#define MATRIXD_ASSIGN_OR_RETURN(lhs, expr)                                                    \
  MATRIXD_ASSIGN_OR_RETURN_IMPL_(MATRIXD_STATUS_MACROS_CONCAT(matrixd_statusor_, __COUNTER__), \
                                 lhs, expr)

#define MATRIXD_ASSIGN_OR_RETURN_IMPL_(statusor, lhs, expr) \
  auto statusor = (expr);                                   \
  if (!statusor.ok()) return std::move(statusor).status();  \
  lhs = *std::move(statusor)

#endif  // MATRIXD_CORE_STATUS_MACROS_H_
