// Small file helpers shared by the binaries.
#pragma once

#include <sys/types.h>

#include <string>
#include <string_view>

#include "rdmak8s/status.h"

namespace rdmak8s {

// Replaces `path` with `data` so that a reader, or a crash at any point, sees either the old
// content or the new, never a mix: write a temporary file beside it (unique per process and
// thread, so concurrent writers don't clobber each other's temporaries), fsync it, rename it
// over `path`, then fsync the directory (best effort: the rename is already visible). On failure
// the temporary is removed and `path` is untouched; the Status names the step and the file.
Status WriteFileAtomic(const std::string& path, std::string_view data, mode_t mode = 0644);

// Path helpers, lexical (no filesystem access): what follows the last '/' ("a/b" -> "b", "b" ->
// "b"), and what precedes it ("a/b" -> "a", "b" -> "").
std::string Basename(std::string_view path);
std::string Dirname(std::string_view path);

}  // namespace rdmak8s
