#include "kotml/learn/checkpoint.hpp"

#include <cmath>
#include <cstdio>
#include <cstring>
#include <type_traits>

#include "kotml/core/atomic_file.hpp"
#include "kotml/core/error.hpp"
#include "kotml/core/random.hpp"
#include "kotml/core/version.hpp"
#include "kotml/io/hdf5.hpp"

namespace kotml::learn {
namespace {

template <class T, class Field>
std::vector<T> column(const std::vector<EpochRecord>& history, Field field) {
  std::vector<T> values;
  for (const auto& r : history) values.push_back(static_cast<T>(r.*field));
  return values;
}

/// FNV-1a over the checkpoint's content in a fixed order, each field preceded
/// by its length: any changed, dropped or shortened field changes it. It guards
/// against edits and damage, not against an adversary who recomputes it.
class Checksum {
 public:
  template <class T>
  void add(const T* values, std::size_t count) {
    static_assert(std::is_trivially_copyable<T>::value, "hashes raw bytes");
    add_bytes(&count, sizeof count);
    add_bytes(values, count * sizeof(T));
  }
  template <class T>
  void add(const std::vector<T>& values) { add(values.data(), values.size()); }
  template <class T>
  void add_value(T value) { add(&value, 1); }
  void add(const std::string& text) { add(text.data(), text.size()); }

  std::string hex() const {
    char text[17];
    std::snprintf(text, sizeof text, "%016llx", static_cast<unsigned long long>(state_));
    return text;
  }

 private:
  void add_bytes(const void* data, std::size_t bytes) {
    const auto* p = static_cast<const unsigned char*>(data);
    for (std::size_t i = 0; i < bytes; ++i) state_ = (state_ ^ p[i]) * 0x100000001b3ULL;
  }
  std::uint64_t state_ = 0xcbf29ce484222325ULL;
};

std::string checksum_of(const Checkpoint& c) {
  Checksum h;
  h.add(c.fingerprint);
  h.add_value(c.epochs_done);
  h.add_value(static_cast<std::int64_t>(c.converged ? 1 : 0));
  h.add_value(c.seed);
  h.add_value(static_cast<std::int64_t>(c.a.extent(0)));
  h.add_value(static_cast<std::int64_t>(c.a.extent(1)));
  h.add(c.a.data(), c.a.size());
  h.add_value(c.adam_steps);
  h.add(c.adam_m);
  h.add(c.adam_v);
  h.add(column<std::int64_t>(c.history, &EpochRecord::epoch));
  h.add(column<double>(c.history, &EpochRecord::loss));
  h.add(column<double>(c.history, &EpochRecord::regularizer));
  h.add(column<double>(c.history, &EpochRecord::grad_norm));
  h.add(column<double>(c.history, &EpochRecord::min_grad_norm));
  h.add(column<double>(c.history, &EpochRecord::seconds));
  h.add(column<double>(c.history, &EpochRecord::cpu_seconds));
  h.add(column<std::int64_t>(c.history, &EpochRecord::steps));
  h.add(column<std::int64_t>(c.history, &EpochRecord::triplets));
  h.add(column<std::int64_t>(c.history, &EpochRecord::active_triplets));
  h.add(c.warm.first);
  h.add(c.warm.second);
  h.add(c.warm.offset);
  h.add(c.warm.basis);
  h.add(c.warm.potentials);
  return h.hex();
}

/// One value stored as a scalar dataset.
template <class T>
T scalar(const io::h5::File& file, const std::string& path, const std::string& name) {
  const auto values = file.read<T>(name);
  if (values.size() != 1) throw Error(path, name, "expected one value, found " + std::to_string(values.size()));
  return values[0];
}

bool all_finite(const double* values, std::size_t count) {
  for (std::size_t i = 0; i < count; ++i)
    if (!std::isfinite(values[i])) return false;
  return true;
}

/// The checks a checksum cannot make: a checkpoint whose fields contradict
/// each other, whoever wrote it.
void check_fields(const std::string& path, const Checkpoint& c) {
  if (c.epochs_done < 0) throw Error(path, "progress/epochs_done", "is negative");
  if (static_cast<std::int64_t>(c.history.size()) != c.epochs_done)
    throw Error(path, "history", "has " + std::to_string(c.history.size()) + " epochs for epochs_done = " +
                                     std::to_string(c.epochs_done));
  for (std::size_t e = 0; e < c.history.size(); ++e)
    if (c.history[e].epoch != static_cast<std::int64_t>(e) + 1)
      throw Error(path, "history/epoch", "epochs are not 1, 2, ... in order");
  if (c.adam_steps < 0) throw Error(path, "adam/step", "is negative");
  if (!all_finite(c.a.data(), c.a.size())) throw Error(path, "A", "holds NaN or infinite values");
  if (!all_finite(c.adam_m.data(), c.adam_m.size()) || !all_finite(c.adam_v.data(), c.adam_v.size()))
    throw Error(path, "adam", "optimizer moments hold NaN or infinite values");
  for (double v : c.adam_v)
    if (v < 0) throw Error(path, "adam/v", "second moments are negative");
  const auto& w = c.warm;
  if (w.offset.size() != w.first.size() + 1 || w.second.size() != w.first.size() || w.offset.front() != 0)
    throw Error(path, "warm", "warm-start bases are inconsistent");
  for (std::size_t p = 0; p + 1 < w.offset.size(); ++p)
    if (w.offset[p + 1] < w.offset[p]) throw Error(path, "warm/offset", "offsets decrease");
  for (std::size_t p = 0; p < w.first.size(); ++p)
    if (w.first[p] < 0 || w.second[p] < 0) throw Error(path, "warm", "a donor index is negative");
  if (!w.basis.empty() && !w.potentials.empty())
    throw Error(path, "warm", "holds both EMD bases and Sinkhorn potentials");
  const auto stored = static_cast<std::int64_t>(w.basis.size() + w.potentials.size());
  if (stored != w.offset.back()) throw Error(path, "warm", "warm-start bases are inconsistent");
}

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& c) {
  AtomicFile target(path);
  {
    auto file = io::h5::File::create(target);
    const auto k = static_cast<std::int64_t>(c.a.extent(0));
    const auto d = static_cast<std::int64_t>(c.a.extent(1));
    file.write("A", std::vector<double>(c.a.data(), c.a.data() + c.a.size()), {k, d});
    file.write("adam/m", c.adam_m, {k, d});
    file.write("adam/v", c.adam_v, {k, d});
    file.write("adam/step", std::vector<std::int64_t>{c.adam_steps}, {});
    file.write("progress/epochs_done", std::vector<std::int64_t>{c.epochs_done}, {});
    file.write("progress/converged", std::vector<std::int64_t>{c.converged ? 1 : 0}, {});
    file.write("rng/seed", std::vector<std::uint64_t>{c.seed}, {});
    file.write_strings("rng/purposes", {"batches", "triplets"});
    file.write("rng/next_index",
               std::vector<std::int64_t>{c.epochs_done, c.epochs_done * (std::int64_t{1} << 20)});
    file.write("rng/position", std::vector<std::int64_t>{0, 0});
    file.write("history/epoch", column<std::int64_t>(c.history, &EpochRecord::epoch));
    file.write("history/loss", column<double>(c.history, &EpochRecord::loss));
    file.write("history/regularizer", column<double>(c.history, &EpochRecord::regularizer));
    file.write("history/grad_norm", column<double>(c.history, &EpochRecord::grad_norm));
    file.write("history/min_grad_norm", column<double>(c.history, &EpochRecord::min_grad_norm));
    file.write("history/seconds", column<double>(c.history, &EpochRecord::seconds));
    file.write("history/cpu_seconds", column<double>(c.history, &EpochRecord::cpu_seconds));
    file.write("history/steps", column<std::int64_t>(c.history, &EpochRecord::steps));
    file.write("history/triplets", column<std::int64_t>(c.history, &EpochRecord::triplets));
    file.write("history/active_triplets", column<std::int64_t>(c.history, &EpochRecord::active_triplets));
    file.write("warm/first", c.warm.first);
    file.write("warm/second", c.warm.second);
    file.write("warm/offset", c.warm.offset);
    file.write("warm/basis", c.warm.basis);
    file.write("warm/potentials", c.warm.potentials);
    file.write_string_attribute("/", "fingerprint", c.fingerprint);
    file.write_string_attribute("/", "kotml_version", version_string);
    file.write_string_attribute("/", "git_hash", git_hash);
    file.write_string_attribute("/", "kind", "kotml training checkpoint");
    file.write_string_attribute("/", "checksum", checksum_of(c));
    file.close();
  }
  target.commit();
}

Checkpoint read_checkpoint(const std::string& path) {
  auto file = io::h5::File::open_read(path);
  if (!file.has_attribute("/", "kind") ||
      file.read_string_attribute("/", "kind") != "kotml training checkpoint")
    throw Error(path, "", "not a kotml training checkpoint");
  Checkpoint c;
  c.fingerprint = file.read_string_attribute("/", "fingerprint");
  const auto shape = file.shape("A");
  if (shape.size() != 2) throw Error(path, "A", "expected a 2-D matrix");
  c.a = MetricMatrix("metric_A", static_cast<std::size_t>(shape[0]), static_cast<std::size_t>(shape[1]));
  const auto a = file.read<double>("A");
  std::copy(a.begin(), a.end(), c.a.data());
  c.adam_m = file.read<double>("adam/m");
  c.adam_v = file.read<double>("adam/v");
  if (c.adam_m.size() != a.size() || c.adam_v.size() != a.size())
    throw Error(path, "adam", "optimizer moments do not match A");
  c.adam_steps = scalar<std::int64_t>(file, path, "adam/step");
  c.epochs_done = scalar<std::int64_t>(file, path, "progress/epochs_done");
  const auto converged = scalar<std::int64_t>(file, path, "progress/converged");
  if (converged != 0 && converged != 1) throw Error(path, "progress/converged", "must be 0 or 1");
  c.converged = converged == 1;
  c.seed = scalar<std::uint64_t>(file, path, "rng/seed");
  const auto epoch = file.read<std::int64_t>("history/epoch");
  const auto loss = file.read<double>("history/loss");
  const auto regularizer = file.read<double>("history/regularizer");
  const auto grad_norm = file.read<double>("history/grad_norm");
  const auto min_grad_norm = file.read<double>("history/min_grad_norm");
  const auto seconds = file.read<double>("history/seconds");
  const auto cpu_seconds = file.read<double>("history/cpu_seconds");
  const auto steps = file.read<std::int64_t>("history/steps");
  const auto triplets = file.read<std::int64_t>("history/triplets");
  const auto active = file.read<std::int64_t>("history/active_triplets");
  for (const std::size_t length : {loss.size(), regularizer.size(), grad_norm.size(), min_grad_norm.size(),
                                    seconds.size(), cpu_seconds.size(), steps.size(), triplets.size(), active.size()})
    if (length != epoch.size()) throw Error(path, "history", "its columns differ in length");
  for (std::size_t e = 0; e < epoch.size(); ++e) {
    EpochRecord r;
    r.epoch = epoch[e];
    r.loss = loss[e];
    r.regularizer = regularizer[e];
    r.grad_norm = grad_norm[e];
    r.min_grad_norm = min_grad_norm[e];
    r.seconds = seconds[e];
    r.cpu_seconds = cpu_seconds[e];
    r.steps = steps[e];
    r.triplets = triplets[e];
    r.active_triplets = active[e];
    c.history.push_back(r);
  }
  c.warm.first = file.read<std::int64_t>("warm/first");
  c.warm.second = file.read<std::int64_t>("warm/second");
  c.warm.offset = file.read<std::int64_t>("warm/offset");
  c.warm.basis = file.read<std::int32_t>("warm/basis");
  c.warm.potentials = file.read<double>("warm/potentials");
  check_fields(path, c);
  if (!file.has_attribute("/", "checksum"))
    throw Error(path, "", "has no checksum (written by an older kotml, or not by kotml): start the run again");
  if (file.read_string_attribute("/", "checksum") != checksum_of(c))
    throw Error(path, "", "the checksum does not match the content: the checkpoint was modified or damaged");
  return c;
}

}  // namespace kotml::learn
