#pragma once
// Rank-0 output. Every rank may call these; only rank 0 writes, so a run on any
// number of ranks prints what a one-rank run prints.

#include <ostream>
#include <string>

namespace kotml::log {

/// Called once by the program's main after MPI is up.
void set_rank(int rank);
bool is_root();

/// std::cout on rank 0, a sink that discards everything elsewhere.
std::ostream& out();
/// std::cerr on rank 0, a sink elsewhere.
std::ostream& err();

/// "kotml: warning: <text>" on rank 0. Warnings raised on other ranks must be
/// gathered first (dist::Comm::gather_warnings) to reach the user.
void warn(const std::string& text);

/// "kotml: note: <text>" on rank 0: what kotml chose for the user, who did
/// not ask (a default fitted to the data), unless --quiet.
void note(const std::string& text);

/// Progress lines, printed only when verbosity is on (--verbose).
void set_verbose(bool verbose);
bool verbose();
void info(const std::string& text);

}  // namespace kotml::log
