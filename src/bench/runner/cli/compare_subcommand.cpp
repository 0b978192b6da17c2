#include "runner/cli/compare_subcommand.h"

#include "runner/cli/option_binder.h"

namespace mtc::bench {

CLI::App* add_compare_subcommand(CLI::App& app, CompareArguments& arguments) {
  CLI::App* compare = app.add_subcommand(
      "compare",
      "Compare two reports (or folders of reports) case by case: SAME, FASTER, SLOWER or UNSURE "
      "per metric "
      "(the wall time's median, and the speedup over `to`). Reports of one A/B job (--ab-label) "
      "are paired by "
      "round; others are compared by the ratio of their medians. Given one report (or folder) "
      "only, compare "
      "the two engine builds it measured sample by sample: VARIANT@base (the baseline) against "
      "VARIANT@cand "
      "(or VARIANT), paired by round (default threshold 2 %). Exit 0: nothing matched --fail-on; "
      "1: a case did; 2: "
      "bad input (unreadable, another schema version, other GPU models, nothing matched).");
  compare
      ->add_option("baseline", arguments.options.baseline, "Baseline report, or a folder of them")
      ->type_name("PATH")
      ->required();
  compare
      ->add_option("candidate", arguments.options.candidate,
                   "Current report, or a folder of them (none: in-process A/B pairs of the first)")
      ->type_name("PATH");
  compare
      ->add_option(
          "--threshold", arguments.threshold,
          "Change (percent) below which a case is SAME, for every metric (default 5; against a "
          "stored baseline 30 for speedup and 55 for over_memcpy_batch; 2 in-process)")
      ->type_name("PERCENT")
      ->check(kNotEmpty);
  compare
      ->add_option("--threshold-metric", arguments.metric_thresholds,
                   "Per-metric thresholds, e.g. wall=5,speedup=10,over_memcpy_batch=50 (wins over "
                   "--threshold)")
      ->type_name("METRIC=PERCENT,...");
  compare
      ->add_option("--fail-on", arguments.fail_on,
                   "Exit 1 when a case is: slower, faster, any (either) or none")
      ->capture_default_str();
  compare
      ->add_option(
          "--baseline-kind", arguments.baseline_kind,
          "auto, fresh (same host and day) or stored (another day or host: same-run ratios only)")
      ->capture_default_str();
  compare->add_flag("--ignore-device", arguments.options.ignore_device,
                    "Compare reports from different GPU models");
  compare->add_option("--md", arguments.options.md_path, "Write the markdown summary here")
      ->type_name("PATH")
      ->check(kReportPath);
  compare->add_option("--json", arguments.options.json_path, "Write the comparison as JSON here")
      ->type_name("PATH")
      ->check(kReportPath);
  return compare;
}

compare::CompareOptions finish_compare_options(const CompareArguments& arguments) {
  compare::CompareOptions options = arguments.options;
  if (!arguments.threshold.empty())
    options.threshold = compare::parse_threshold_percent(arguments.threshold);
  if (!arguments.metric_thresholds.empty()) {
    options.metric_thresholds = compare::parse_metric_thresholds(arguments.metric_thresholds);
  }
  options.fail_on = compare::parse_fail_on(arguments.fail_on);
  options.baseline_kind = compare::parse_baseline_kind(arguments.baseline_kind);
  return options;
}

}  // namespace mtc::bench
