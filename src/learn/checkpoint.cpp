#include "kotml/learn/checkpoint.hpp"

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

}  // namespace

void write_checkpoint(const std::string& path, const Checkpoint& c) {
  AtomicFile target(path);
  {
    auto file = io::h5::File::create(target.temporary_path());
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
               std::vector<std::int64_t>{c.epochs_done, c.epochs_done << 20});
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
  c.adam_steps = file.read<std::int64_t>("adam/step").at(0);
  c.epochs_done = file.read<std::int64_t>("progress/epochs_done").at(0);
  c.converged = file.read<std::int64_t>("progress/converged").at(0) != 0;
  c.seed = file.read<std::uint64_t>("rng/seed").at(0);
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
  for (std::size_t e = 0; e < epoch.size(); ++e) {
    EpochRecord r;
    r.epoch = epoch[e];
    r.loss = loss.at(e);
    r.regularizer = regularizer.at(e);
    r.grad_norm = grad_norm.at(e);
    r.min_grad_norm = min_grad_norm.at(e);
    r.seconds = seconds.at(e);
    r.cpu_seconds = cpu_seconds.at(e);
    r.steps = steps.at(e);
    r.triplets = triplets.at(e);
    r.active_triplets = active.at(e);
    c.history.push_back(r);
  }
  c.warm.first = file.read<std::int64_t>("warm/first");
  c.warm.second = file.read<std::int64_t>("warm/second");
  c.warm.offset = file.read<std::int64_t>("warm/offset");
  c.warm.basis = file.read<std::int32_t>("warm/basis");
  c.warm.potentials = file.read<double>("warm/potentials");
  const auto stored = static_cast<std::int64_t>(c.warm.basis.size() + c.warm.potentials.size());
  if (c.warm.offset.size() != c.warm.first.size() + 1 || c.warm.second.size() != c.warm.first.size() ||
      stored != c.warm.offset.back())
    throw Error(path, "warm", "warm-start bases are inconsistent");
  return c;
}

}  // namespace kotml::learn
