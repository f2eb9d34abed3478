// The two error-propagation macros Debian's abseil (20220623) lacks.
#ifndef EHPROF_BASE_STATUS_MACROS_H_
#define EHPROF_BASE_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define EHP_CONCAT_INNER_(a, b) a##b
#define EHP_CONCAT_(a, b) EHP_CONCAT_INNER_(a, b)

// Returns the status from the enclosing function when `expr` is not OK.
#define EHP_RETURN_IF_ERROR(expr)                   \
  do {                                              \
    ::absl::Status ehp_status_ = (expr);            \
    if (!ehp_status_.ok()) return ehp_status_;      \
  } while (0)

// `EHP_ASSIGN_OR_RETURN(auto x, Foo());` declares x from an OK StatusOr or
// returns its status.
#define EHP_ASSIGN_OR_RETURN(lhs, expr) \
  EHP_ASSIGN_OR_RETURN_IMPL_(EHP_CONCAT_(ehp_statusor_, __LINE__), lhs, expr)
#define EHP_ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                               \
  if (!tmp.ok()) return tmp.status();              \
  lhs = std::move(*tmp)

#endif  // EHPROF_BASE_STATUS_MACROS_H_
