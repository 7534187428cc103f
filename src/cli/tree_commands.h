// The udiag commands that read and write files of the daemon's tracefs tree.
// Each takes the resolved daemon directory and returns the exit status.
#pragma once

#include <string>
#include <vector>

namespace udiag::cli {

// Prints a file. A trace_pipe is streamed, as `cat` does on tracefs, until
// SIGINT or SIGTERM.
int Cat(const std::string& dir, const std::string& path);

// Writes `words` joined by spaces plus a newline, like `echo WORDS > PATH`
// (or `>>` with `append`).
int Write(const std::string& dir, const std::string& path, const std::vector<std::string>& words, bool append);

// Lists a directory, one entry a line, directories with a trailing '/'.
int List(const std::string& dir, const std::string& path);

// `mkdir PATH` / `rmdir PATH` in the tree: only instances/<name> can be
// made or removed (EPERM elsewhere; EEXIST, EINVAL, ENOENT, EBUSY as tracefs).
int MakeDirectory(const std::string& dir, const std::string& path);
int RemoveDirectory(const std::string& dir, const std::string& path);

// Writes 1 (or 0) to the enable file of every event the patterns select
// (see consumer::MatchEvents). ENOENT, and nothing written, when a pattern
// selects no event.
int SetEnabled(const std::string& dir, const std::vector<std::string>& patterns, bool enable);

}  // namespace udiag::cli
