#pragma once
// A whole document to a file (-o of json, csv, prom, the table, report's
// HTML, plot's image): written beside the file and renamed over it, so the
// file holds the previous document or the new one, never a part of one or
// nothing. Checked up front without creating or emptying anything, so a
// run that is stopped or fails before it writes leaves the file as it was.
#include <string>

namespace xb {

// Why `path` cannot be written as -o ("No such file or directory",
// "Permission denied", "Is a directory"), or "" when it can: an existing
// file this process may write, or a new name in a folder it may write into.
std::string output_problem(const std::string& path);
// Throws UsageError "cannot write -o PATH: why" where output_problem says so.
void check_output(const std::string& path);

// Whether `path` is written by replace_file: absent, or a regular file (a
// symbolic link: what it points to). Else (a device such as /dev/stdout or
// /dev/full, a FIFO) it is written in place.
bool replaced_whole(const std::string& path);

// `text` into a new file in the folder of `path` (the mode of the file it
// replaces, else 0666 less the umask), renamed over `path`. On failure `path`
// is untouched, the temporary file removed, and the result is why ("" on
// success). An existing file in a folder where no file can be created is
// written in place instead (the one case a reader may see it part written).
std::string replace_file(const std::string& path, const std::string& text);

// Whether `a` and `b` both exist and are the same file (device and inode).
bool same_file(const std::string& a, const std::string& b);

}  // namespace xb
