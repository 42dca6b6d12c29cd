#pragma once
// Adam with torch.optim.Adam's arithmetic (no weight decay, no amsgrad):
//   m ← β1 m + (1−β1) g,  v ← β2 v + (1−β2) g²,
//   A ← A − (lr / (1−β1^t)) · m / (√v / √(1−β2^t) + eps).
// Every rank applies the same step to the same gradient, so A stays identical
// on all ranks without a broadcast. The state (moments and step count) is part
// of a checkpoint.

#include <cstdint>
#include <vector>

#include "kotml/learn/metric.hpp"

namespace kotml::learn {

struct AdamOptions {
  double lr = 0.1;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  /// Error naming the option for lr ≤ 0, betas outside [0, 1), eps ≤ 0.
  void validate() const;
};

class Adam {
 public:
  Adam(AdamOptions options, std::size_t size);

  /// One step on params (size values) with gradient grad (size values).
  void step(MetricMatrix& params, const std::vector<double>& grad);

  const AdamOptions& options() const { return options_; }
  void set_lr(double lr) { options_.lr = lr; }
  std::int64_t steps() const { return steps_; }
  const std::vector<double>& first_moment() const { return m_; }
  const std::vector<double>& second_moment() const { return v_; }
  /// Restores a checkpointed state.
  void restore(std::int64_t steps, std::vector<double> m, std::vector<double> v);

 private:
  AdamOptions options_;
  std::int64_t steps_ = 0;
  std::vector<double> m_, v_;
};

}  // namespace kotml::learn
