#include "kotml/dist/comm.hpp"

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <limits>
#include <map>
#include <new>
#include <set>

#include <unistd.h>

#include "kotml/core/log.hpp"
#include "kotml/core/phase_timers.hpp"
#include "kotml/dist/exchange_grid.hpp"
#include "personal_exchange.hpp"

namespace kotml::dist {
namespace {

// Errors travel as their kind and three strings joined by a separator that
// cannot occur in a one-line message.
constexpr char field_separator = '\x1f';

std::string pack(const Error& e) {
  return static_cast<char>(e.kind()) + (e.file() + field_separator + e.element() +
                                        field_separator + e.reason());
}

Error unpack(const std::string& text) {
  const auto kind = static_cast<Error::Kind>(text.at(0));
  const auto first = text.find(field_separator, 1);
  const auto second = text.find(field_separator, first + 1);
  return Error(text.substr(1, first - 1), text.substr(first + 1, second - first - 1),
               text.substr(second + 1))
      .with_kind(kind);
}

}  // namespace

std::vector<std::pair<std::string, std::string>> singleton_settings(
    const std::function<const char*(const char*)>& environment) {
#if defined(OPEN_MPI) && OMPI_MAJOR_VERSION == 4
  for (const char* launcher_variable : {"OMPI_COMM_WORLD_SIZE", "PMIX_RANK", "PMI_RANK", "PMI_FD"})
    if (environment(launcher_variable) != nullptr) return {};
  return {{"OMPI_MCA_ess_singleton_isolated", "1"}, {"OMPI_MCA_pml", "ob1"}, {"OMPI_MCA_btl", "self"}};
#else
  (void)environment;
  return {};
#endif
}

namespace {

/// The names of the environment's Open MPI and PMIx variables.
std::set<std::string> mpi_environment_names() {
  std::set<std::string> names;
  for (char** entry = environ; *entry != nullptr; ++entry) {
    const std::string text(*entry);
    if (text.rfind("OMPI_", 0) == 0 || text.rfind("PMIX_", 0) == 0) names.insert(text.substr(0, text.find('=')));
  }
  return names;
}

/// The session directory base of this singleton, removed at exit.
std::string& private_session_base() {
  static std::string path;
  return path;
}

void remove_private_session_base() {
  std::error_code ignored;
  std::filesystem::remove_all(private_session_base(), ignored);
}

/// An isolated Open MPI 4 singleton does not draw a job family: its session
/// directory is always ompi.<host>.<uid>/jf.0/… under the temporary folder, so
/// singletons started together share it, and the first to finish removes it
/// from under another one still in MPI_Init ("session_dir.c … No such file or
/// directory"; seen when the tests run two kotml processes at once). Each
/// singleton gets a base directory of its own instead (unless the user chose
/// one), removed when the process exits, Open MPI's leftovers with it.
void use_private_session_base() {
  if (std::getenv("OMPI_MCA_orte_tmpdir_base") != nullptr) return;
  const char* tmp = std::getenv("TMPDIR");
  std::string pattern = std::string(tmp != nullptr && *tmp != '\0' ? tmp : "/tmp") + "/kotml-mpi.XXXXXX";
  if (::mkdtemp(pattern.data()) == nullptr) return;  // Open MPI's default then
  private_session_base() = pattern;
  std::atexit(remove_private_session_base);
  setenv("OMPI_MCA_orte_tmpdir_base", pattern.c_str(), /*overwrite=*/0);
}

}  // namespace

void initialize_mpi(int* argc, char*** argv) {
  const auto settings = singleton_settings([](const char* name) { return std::getenv(name); });
  if (settings.empty()) {
    MPI_Init(argc, argv);
    return;
  }
  const auto before = mpi_environment_names();
  for (const auto& [variable, value] : settings) setenv(variable.c_str(), value.c_str(), /*overwrite=*/0);
  use_private_session_base();
  MPI_Init(argc, argv);
  // What this sets, and what MPI_Init adds for an isolated singleton (such as
  // OMPI_MCA_pmix=isolated), describe this process's world of one. A child
  // that inherited them (the tests start `mpirun -n 3 kotml`) would crash.
  for (const auto& name : mpi_environment_names())
    if (before.count(name) == 0) unsetenv(name.c_str());
}

Error failure_of_current_exception() {
  try {
    throw;
  } catch (const Error& e) {
    return e;
  } catch (const std::bad_alloc& e) {
    // Kokkos' failed allocations derive from std::bad_alloc and name the View.
    return Error("", "", std::string("out of memory (") + e.what() +
                             "): use a smaller problem, or more ranks or nodes");
  } catch (const std::exception& e) {
    return Error::internal(e.what());
  } catch (...) {
    return Error::internal("an exception of unknown type");
  }
}

Comm::Comm(MPI_Comm comm) : comm_(comm) {
  MPI_Comm_rank(comm_, &rank_);
  MPI_Comm_size(comm_, &size_);
}

bool Comm::spans_world() const {
  int world = 0;
  MPI_Comm_size(MPI_COMM_WORLD, &world);
  return world == size_;
}

void Comm::barrier() const { MPI_Barrier(comm_); }

void Comm::agree(const std::optional<Error>& local_failure) const {
  // Timed as its own phase, nested under the caller's ("solve/agree"): the
  // scaling study measures what these agreements cost.
  const timers::Scope timed("agree");
  int mine = local_failure ? rank_ : size_;
  int first_failing = mine;
  MPI_Allreduce(&mine, &first_failing, 1, MPI_INT, MPI_MIN, comm_);
  if (first_failing == size_) return;
  std::string message = (rank_ == first_failing) ? pack(*local_failure) : std::string();
  bcast_string(message, first_failing);
  throw CollectiveError(unpack(message));
}

void Comm::bcast(void* data, std::size_t bytes, int root) const {
  // MPI counts are int; large payloads go in chunks.
  auto* bytes_ptr = static_cast<char*>(data);
  const std::size_t chunk = std::size_t(1) << 30;
  for (std::size_t offset = 0; offset < bytes; offset += chunk) {
    const int count = static_cast<int>(std::min(chunk, bytes - offset));
    MPI_Bcast(bytes_ptr + offset, count, MPI_BYTE, root, comm_);
  }
}

void Comm::bcast_string(std::string& text, int root) const {
  std::uint64_t n = text.size();
  bcast(&n, sizeof n, root);
  text.resize(n);
  if (n) bcast(text.data(), n, root);
}

void Comm::bcast_strings(std::vector<std::string>& texts, int root) const {
  std::string joined;
  std::vector<std::uint64_t> lengths;
  if (rank_ == root) {
    for (const auto& t : texts) {
      lengths.push_back(t.size());
      joined += t;
    }
  }
  bcast_vector(lengths, root);
  bcast_string(joined, root);
  if (rank_ != root) {
    texts.clear();
    std::size_t offset = 0;
    for (auto n : lengths) {
      texts.push_back(joined.substr(offset, n));
      offset += n;
    }
  }
}

std::int64_t Comm::sum(std::int64_t local) const {
  std::int64_t total = 0;
  MPI_Allreduce(&local, &total, 1, MPI_INT64_T, MPI_SUM, comm_);
  return total;
}

void Comm::sum_in_place(std::int64_t* values, std::size_t count) const {
  if (count > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw InternalError("sum_in_place: " + std::to_string(count) + " values pass the int range of MPI counts");
  MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_INT64_T, MPI_SUM, comm_);
}

double Comm::max(double local) const {
  double result = 0;
  MPI_Allreduce(&local, &result, 1, MPI_DOUBLE, MPI_MAX, comm_);
  return result;
}

void Comm::max_in_place(double* values, std::size_t count) const {
  if (count > static_cast<std::size_t>(std::numeric_limits<int>::max()))
    throw InternalError("max_in_place: " + std::to_string(count) + " values pass the int range of MPI counts");
  MPI_Allreduce(MPI_IN_PLACE, values, static_cast<int>(count), MPI_DOUBLE, MPI_MAX, comm_);
}

double Comm::min(double local) const {
  double result = 0;
  MPI_Allreduce(&local, &result, 1, MPI_DOUBLE, MPI_MIN, comm_);
  return result;
}

std::int64_t Comm::max(std::int64_t local) const {
  std::int64_t result = 0;
  MPI_Allreduce(&local, &result, 1, MPI_INT64_T, MPI_MAX, comm_);
  return result;
}

bool Comm::any(bool local) const {
  int mine = local ? 1 : 0, result = 0;
  MPI_Allreduce(&mine, &result, 1, MPI_INT, MPI_LOR, comm_);
  return result != 0;
}

bool Comm::all(bool local) const {
  int mine = local ? 1 : 0, result = 0;
  MPI_Allreduce(&mine, &result, 1, MPI_INT, MPI_LAND, comm_);
  return result != 0;
}

namespace {
/// Every rank's count and displacement for an allgatherv, and their total. A
/// block past MPI's int counts is sent as −1, so that every rank sees it and
/// throws, rather than one rank alone leaving the others in the collective.
struct GatherLayout {
  std::vector<int> counts, displs;
  int mine = 0, total = 0;
};

GatherLayout gather_layout(std::size_t count, MPI_Comm comm, int size) {
  constexpr auto int_max = static_cast<std::size_t>(std::numeric_limits<int>::max());
  GatherLayout layout;
  layout.mine = count <= int_max ? static_cast<int>(count) : -1;
  layout.counts.resize(static_cast<std::size_t>(size));
  layout.displs.resize(static_cast<std::size_t>(size));
  MPI_Allgather(&layout.mine, 1, MPI_INT, layout.counts.data(), 1, MPI_INT, comm);
  std::int64_t total = 0;
  bool representable = true;
  for (int r = 0; r < size; ++r) {
    layout.displs[static_cast<std::size_t>(r)] = static_cast<int>(total);
    representable = representable && layout.counts[static_cast<std::size_t>(r)] >= 0;
    total += layout.counts[static_cast<std::size_t>(r)];
  }
  if (!representable || total > std::numeric_limits<int>::max())
    throw InternalError("allgatherv: the ranks' blocks pass the int range of MPI counts");
  layout.total = static_cast<int>(total);
  return layout;
}

template <class T>
std::vector<T> allgatherv_impl(const std::vector<T>& local, MPI_Datatype type, MPI_Comm comm, int size) {
  const auto layout = gather_layout(local.size(), comm, size);
  std::vector<T> all(static_cast<std::size_t>(layout.total));
  MPI_Allgatherv(local.data(), layout.mine, type, all.data(), layout.counts.data(), layout.displs.data(), type,
                 comm);
  return all;
}

template <class T>
void allgatherv_into(const T* local, std::int64_t count, T* all, std::int64_t all_count, MPI_Datatype type,
                     MPI_Comm comm, int size) {
  const auto layout = gather_layout(static_cast<std::size_t>(count), comm, size);
  if (layout.total != all_count)
    throw InternalError("allgatherv: the ranks' blocks total " + std::to_string(layout.total) +
                        " values, the buffer holds " + std::to_string(all_count));
  MPI_Allgatherv(local, layout.mine, type, all, layout.counts.data(), layout.displs.data(), type, comm);
}
}  // namespace

std::vector<double> Comm::allgatherv(const std::vector<double>& local) const {
  return allgatherv_impl(local, MPI_DOUBLE, comm_, size_);
}

std::vector<std::int64_t> Comm::allgatherv(const std::vector<std::int64_t>& local) const {
  return allgatherv_impl(local, MPI_INT64_T, comm_, size_);
}

void Comm::allgatherv(const float* local, std::int64_t count, float* all, std::int64_t all_count) const {
  allgatherv_into(local, count, all, all_count, MPI_FLOAT, comm_, size_);
}

void Comm::allgatherv(const double* local, std::int64_t count, double* all, std::int64_t all_count) const {
  allgatherv_into(local, count, all, all_count, MPI_DOUBLE, comm_, size_);
}

void Comm::allgatherv(const std::int32_t* local, std::int64_t count, std::int32_t* all,
                      std::int64_t all_count) const {
  allgatherv_into(local, count, all, all_count, MPI_INT32_T, comm_, size_);
}

std::vector<std::int64_t> Comm::alltoallv(const std::vector<std::int64_t>& send,
                                          const std::vector<std::int64_t>& send_counts,
                                          std::vector<std::int64_t>& recv_counts, ExchangeRoute route) const {
  const auto ranks = static_cast<std::size_t>(size_);
  if (send_counts.size() != ranks) throw InternalError("alltoallv: one count per rank expected");
  recv_counts.assign(ranks, 0);
  MPI_Alltoall(send_counts.data(), 1, MPI_INT64_T, recv_counts.data(), 1, MPI_INT64_T, comm_);
  ExchangeLayout layout{send_counts, std::vector<std::int64_t>(ranks), recv_counts, std::vector<std::int64_t>(ranks)};
  std::int64_t sent = 0, received = 0, heard_from = 0;
  bool representable = true;
  for (std::size_t r = 0; r < ranks; ++r) {
    representable = representable && send_counts[r] >= 0 && send_counts[r] <= std::numeric_limits<int>::max() &&
                    recv_counts[r] >= 0 && recv_counts[r] <= std::numeric_limits<int>::max();
    layout.send_displs[r] = sent;
    layout.recv_displs[r] = received;
    sent += send_counts[r];
    received += recv_counts[r];
    heard_from += r != static_cast<std::size_t>(rank_) && recv_counts[r] != 0 ? 1 : 0;
  }
  // One collective for both: whether the counts are sound, and the most
  // messages any rank would receive directly.
  double verdict[3] = {representable && static_cast<std::size_t>(sent) == send.size() ? 0.0 : 1.0,
                       static_cast<double>(heard_from), 0.0};
  // An automatic exchange never takes the grid where no rank can hear from
  // more than the bound: the fit of its messages is then not worth computing.
  const double grid_width = ExchangeGrid(size_).width();
  const bool grid_possible = route == ExchangeRoute::grid || (route == ExchangeRoute::automatic &&
                                                              static_cast<double>(size_ - 1) > grid_messages_bound * grid_width);
  if (grid_possible && verdict[0] == 0.0) verdict[2] = grid_messages_fit(layout, rank_) ? 0.0 : 1.0;
  max_in_place(verdict, 3);
  if (verdict[0] != 0.0)
    throw InternalError("alltoallv: a share passes the int range of MPI counts or the counts do not match the buffer");
  const bool through_grid =
      grid_possible && verdict[2] == 0.0 &&
      (route == ExchangeRoute::grid || verdict[1] > grid_messages_bound * grid_width);
  std::vector<std::int64_t> out(static_cast<std::size_t>(received));
  if (through_grid)
    exchange_through_grid(send.data(), out.data(), layout, rank_, comm_);
  else
    exchange_direct(send.data(), out.data(), layout, rank_, comm_);
  return out;
}

std::vector<std::string> Comm::allgather_strings(const std::string& local) const {
  const auto layout = gather_layout(local.size(), comm_, size_);
  std::vector<char> all(static_cast<std::size_t>(layout.total));
  MPI_Allgatherv(local.data(), layout.mine, MPI_CHAR, all.data(), layout.counts.data(), layout.displs.data(),
                 MPI_CHAR, comm_);
  std::vector<std::string> texts;
  for (int r = 0; r < size_; ++r)
    texts.emplace_back(all.data() + layout.displs[static_cast<std::size_t>(r)],
                       static_cast<std::size_t>(layout.counts[static_cast<std::size_t>(r)]));
  return texts;
}

std::vector<double> Comm::sum_by_id(const std::vector<GlobalId>& ids,
                                    const std::vector<double>& partials, std::size_t width) const {
  if (partials.size() != ids.size() * width)
    throw InternalError("sum_by_id got partials of the wrong length");
  const std::vector<std::int64_t> local_ids(ids.begin(), ids.end());
  const auto all_ids = allgatherv(local_ids);
  const auto all_partials = allgatherv(partials);
  std::vector<std::size_t> order(all_ids.size());
  for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
  std::sort(order.begin(), order.end(),
            [&](std::size_t a, std::size_t b) { return all_ids[a] < all_ids[b]; });
  std::vector<double> total(width, 0.0);
  for (std::size_t unit : order)
    for (std::size_t k = 0; k < width; ++k) total[k] += all_partials[unit * width + k];
  return total;
}

void Comm::gather_warnings(const std::vector<std::string>& local_warnings) const {
  std::string joined;
  for (const auto& w : local_warnings) joined += w + '\n';
  const auto per_rank = allgather_strings(joined);
  if (rank_ != 0) return;
  std::set<std::string> printed;
  for (const auto& text : per_rank) {
    std::size_t start = 0;
    while (start < text.size()) {
      const auto end = text.find('\n', start);
      const std::string line = text.substr(start, end - start);
      if (!line.empty() && printed.insert(line).second) log::warn(line);
      start = end + 1;
    }
  }
}

}  // namespace kotml::dist
