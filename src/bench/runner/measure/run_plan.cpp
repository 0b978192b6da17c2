#include "runner/measure/run_plan.h"

namespace mtc::bench {

nlohmann::json plan_to_json(const RunPlan& plan) {
  std::vector<std::string> directions;
  for (Direction d : plan.directions) directions.emplace_back(to_string(d));
  std::vector<std::string> patterns;
  for (Pattern p : plan.settings.patterns) patterns.emplace_back(to_string(p));
  const CaseSettings& s = plan.settings;
  return nlohmann::json{{"directions", directions},
                        {"strategies", plan.strategies},
                        {"devices", plan.devices},
                        {"patterns", patterns},
                        {"inputs", s.inputs},
                        {"gap_us", s.gap_s * 1e6},
                        {"gap_touch_bytes", s.gap_touch_bytes},
                        {"step_frees_previous_output", kStepFreesPreviousOutput},
                        {"warmup", s.warmup},
                        {"rounds_min", s.stopping.min_rounds},
                        {"rounds_max", s.stopping.max_rounds},
                        {"round_time_s", s.stopping.round_time_s},
                        {"round_min_samples", s.stopping.round_min_samples},
                        {"min_samples", s.stopping.min_samples},
                        {"min_time_s", s.stopping.min_time_s},
                        {"noise_target", s.stopping.noise_target},
                        {"timeout_s", s.stopping.timeout_s},
                        {"interval_level", s.interval_level},
                        {"noise_estimator",
                         "the larger of: within, 1.2533 * 1.4826 * MAD / sqrt(n) / median over all "
                         "samples; between, the "
                         "standard error of the mean log round median (and of the process means "
                         "with several processes)"},
                        {"order_seed", s.order_seed},
                        {"round_cpus", s.round_cpus},
                        {"engine_libraries", plan.engine_libraries},
                        {"quick", plan.quick},
                        {"processes", plan.processes},
                        {"max_samples", s.stopping.max_samples},
                        {"overlap_us", s.overlap_s * 1e6},
                        {"raw_samples", s.raw_samples},
                        {"profile", plan.profile},
                        {"fixed_samples", s.fixed_samples > 0 ? nlohmann::json(s.fixed_samples)
                                                              : nlohmann::json(nullptr)}};
}

}  // namespace mtc::bench
