// SPDX-License-Identifier: Apache-2.0
// The one way edo reports errors: an exception that carries a message meant
// for the user ("PATH: what is wrong"), the source location that threw it, and
// the process exit code the tools map it to.
#pragma once

#include <fmt/format.h>

#include <cstdint>
#include <stdexcept>
#include <string>

namespace edo {

enum class ExitCode : int {
  ok = 0,
  runtime = 1,  // bad or hostile input, I/O, out of memory
  usage = 2,    // bad flags or arguments
  gate = 3,     // a quality gate failed
};

// What kind of problem a runtime error is, for callers that answer them
// apart (the Python module's edo.Error subclasses); the tools' exit code
// does not depend on it.
enum class ErrorKind : uint8_t {
  other,        // anything else (a failed quality gate, out of memory, a GPU call)
  corrupt,      // a file that is not what it claims: bad structure, a checksum mismatch, bytes out of bounds
  io,           // a file that cannot be opened, read, written or mapped
  unsupported,  // a well-formed file or request this build cannot serve (a newer format, an unknown feature)
};

class Error : public std::runtime_error {
 public:
  Error(const std::string& message, const char* source_file, int source_line, ExitCode code = ExitCode::runtime,
        ErrorKind kind = ErrorKind::other)
      : std::runtime_error(message), source_file_(source_file), source_line_(source_line), code_(code), kind_(kind) {}

  const char* source_file() const noexcept { return source_file_; }
  int source_line() const noexcept { return source_line_; }
  ExitCode code() const noexcept { return code_; }
  ErrorKind kind() const noexcept { return kind_; }

 private:
  const char* source_file_;
  int source_line_;
  ExitCode code_;
  ErrorKind kind_;
};

}  // namespace edo

// EDO_FAIL("{}: header is truncated", path) throws edo::Error (exit code 1).
#define EDO_FAIL(...) throw ::edo::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__)
// EDO_USAGE_FAIL(...) throws edo::Error with exit code 2 (a usage error).
#define EDO_USAGE_FAIL(...) throw ::edo::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__, ::edo::ExitCode::usage)
// Runtime errors of a known kind (ErrorKind).
#define EDO_CORRUPT_FAIL(...)                                                                  \
  throw ::edo::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__, ::edo::ExitCode::runtime, \
                     ::edo::ErrorKind::corrupt)
#define EDO_IO_FAIL(...) \
  throw ::edo::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__, ::edo::ExitCode::runtime, ::edo::ErrorKind::io)
#define EDO_UNSUPPORTED_FAIL(...)                                                              \
  throw ::edo::Error(::fmt::format(__VA_ARGS__), __FILE__, __LINE__, ::edo::ExitCode::runtime, \
                     ::edo::ErrorKind::unsupported)
#define EDO_CHECK(cond, ...) \
  do {                       \
    if (!(cond)) {           \
      EDO_FAIL(__VA_ARGS__); \
    }                        \
  } while (0)
