#pragma once
// Warm-start state of the pairs a rank solves, kept between training steps and
// carried through checkpoints: exact EMD bases (State = std::int32_t, one
// parent per node) or Sinkhorn potentials (State = double, f then g).
//
// A pair is keyed by its two cohort donor indices, (source << 32) | target. A
// pair is always solved on the same rank (the placement is fixed for a run),
// so its state lives there. For a checkpoint every rank's states are gathered
// and sorted by pair, so the file is the same for any rank count; on restart a
// rank takes back the states of the pairs it owns.

#include <algorithm>
#include <cstdint>
#include <map>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "kotml/core/types.hpp"
#include "kotml/dist/comm.hpp"
#include "kotml/learn/checkpoint.hpp"

namespace kotml::learn {

inline std::uint64_t pair_key(GlobalId source, GlobalId target) {
  return (static_cast<std::uint64_t>(source) << 32) | static_cast<std::uint64_t>(target);
}

template <class State>
class WarmStarts {
  static_assert(std::is_same<State, std::int32_t>::value || std::is_same<State, double>::value,
                "warm starts are EMD bases (int32) or Sinkhorn potentials (double)");

 public:
  /// The stored state of a pair, when it has the expected size (a pair's size
  /// never changes within a run; the check guards a foreign checkpoint).
  const std::vector<State>* find(std::uint64_t key, std::size_t size) const {
    const auto found = states_.find(key);
    if (found == states_.end() || found->second.size() != size) return nullptr;
    return &found->second;
  }
  void store(std::uint64_t key, std::vector<State> state) { states_[key] = std::move(state); }
  void clear() { states_.clear(); }
  std::size_t size() const { return states_.size(); }

  /// Collective: every rank's states, sorted by pair, into the checkpoint's
  /// warm-start section of this kind.
  void gather_into(WarmBases& warm, const dist::Comm& comm) const {
    std::vector<std::uint64_t> keys;
    for (const auto& entry : states_) keys.push_back(entry.first);
    std::sort(keys.begin(), keys.end());
    std::vector<std::int64_t> heads;  // (source, target, size) per pair
    std::vector<State> values;
    for (auto key : keys) {
      const auto& s = states_.at(key);
      heads.push_back(static_cast<std::int64_t>(key >> 32));
      heads.push_back(static_cast<std::int64_t>(key & 0xffffffffULL));
      heads.push_back(static_cast<std::int64_t>(s.size()));
      values.insert(values.end(), s.begin(), s.end());
    }
    const auto all_heads = comm.allgatherv(heads);
    const auto all_values = gather_values(values, comm);
    std::map<std::pair<std::int64_t, std::int64_t>, std::pair<std::size_t, std::size_t>> sorted;  // pair -> [begin, end)
    std::size_t at = 0;
    for (std::size_t i = 0; i < all_heads.size(); i += 3) {
      const auto n = static_cast<std::size_t>(all_heads[i + 2]);
      sorted[{all_heads[i], all_heads[i + 1]}] = {at, at + n};
      at += n;
    }
    warm = WarmBases{};
    auto& out = values_of(warm);
    warm.offset.push_back(0);
    for (const auto& [pair, range] : sorted) {
      warm.first.push_back(pair.first);
      warm.second.push_back(pair.second);
      out.insert(out.end(), all_values.begin() + static_cast<std::ptrdiff_t>(range.first),
                 all_values.begin() + static_cast<std::ptrdiff_t>(range.second));
      warm.offset.push_back(static_cast<std::int64_t>(out.size()));
    }
  }

  /// The states of a checkpoint's pairs for which owned(source, target) holds.
  template <class Owned>
  void restore(const WarmBases& warm, const Owned& owned) {
    const auto& in = values_of(warm);
    for (std::size_t p = 0; p < warm.first.size(); ++p) {
      if (!owned(warm.first[p], warm.second[p])) continue;
      states_[pair_key(warm.first[p], warm.second[p])] =
          std::vector<State>(in.begin() + warm.offset[p], in.begin() + warm.offset[p + 1]);
    }
  }

 private:
  static std::vector<State>& values_of(WarmBases& warm) {
    if constexpr (std::is_same<State, double>::value) return warm.potentials;
    else return warm.basis;
  }
  static const std::vector<State>& values_of(const WarmBases& warm) {
    if constexpr (std::is_same<State, double>::value) return warm.potentials;
    else return warm.basis;
  }
  /// Comm gathers doubles and int64s; bases travel widened.
  static std::vector<State> gather_values(const std::vector<State>& values, const dist::Comm& comm) {
    if constexpr (std::is_same<State, double>::value) {
      return comm.allgatherv(values);
    } else {
      const auto all = comm.allgatherv(std::vector<std::int64_t>(values.begin(), values.end()));
      return std::vector<State>(all.begin(), all.end());
    }
  }

  std::unordered_map<std::uint64_t, std::vector<State>> states_;
};

}  // namespace kotml::learn
