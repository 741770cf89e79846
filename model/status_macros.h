// Debian's abseil (20220623) has no status macros; these two are all the project needs.
#ifndef SCALECAST_MODEL_STATUS_MACROS_H_
#define SCALECAST_MODEL_STATUS_MACROS_H_

#include "absl/status/status.h"
#include "absl/status/statusor.h"

#define SC_CONCAT_INNER_(a, b) a##b
#define SC_CONCAT_(a, b) SC_CONCAT_INNER_(a, b)

#define RETURN_IF_ERROR(expr)                 \
  do {                                        \
    const ::absl::Status sc_status_ = (expr); \
    if (!sc_status_.ok()) return sc_status_;  \
  } while (0)

#define ASSIGN_OR_RETURN_IMPL_(tmp, lhs, expr) \
  auto tmp = (expr);                           \
  if (!tmp.ok()) return tmp.status();          \
  lhs = std::move(*tmp)

#define ASSIGN_OR_RETURN(lhs, expr) \
  ASSIGN_OR_RETURN_IMPL_(SC_CONCAT_(sc_statusor_, __LINE__), lhs, expr)

#endif  // SCALECAST_MODEL_STATUS_MACROS_H_
