#include "runner/measure/progress.h"

#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>

namespace mtc::bench {

Progress::Progress(bool enabled, std::FILE* stream)
    : enabled_(enabled && stream != nullptr && isatty(fileno(stream)) == 1), stream_(stream) {}

Progress::~Progress() { end_case(); }

void Progress::begin_case(std::string label) {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  label_ = std::move(label);
  last_draw_ = {};
  draw_locked(render(label_, 0, -1.0, 0.0, 20));
}

void Progress::update(int64_t samples, double noise, double fraction) {
  if (!enabled_) return;
  const auto now = std::chrono::steady_clock::now();
  std::lock_guard lock(mutex_);
  if (now - last_draw_ < std::chrono::milliseconds(100)) return;
  last_draw_ = now;
  draw_locked(render(label_, samples, noise, fraction, 20));
}

void Progress::end_case() {
  if (!enabled_) return;
  std::lock_guard lock(mutex_);
  if (last_width_ == 0) return;
  std::fprintf(stream_, "\r%*s\r", static_cast<int>(last_width_), "");
  std::fflush(stream_);
  last_width_ = 0;
}

std::string Progress::render(std::string_view label, int64_t samples, double noise, double fraction,
                             int bar_width) {
  const int filled = static_cast<int>(std::clamp(fraction, 0.0, 1.0) * bar_width + 0.5);
  const std::string noise_text =
      noise < 0.0 ? std::string("--") : fmt::format("{:.2f} %", std::min(noise, 1.0) * 100.0);
  return fmt::format("{} [{}{}] {} samples, noise {}", label, std::string(filled, '#'),
                     std::string(bar_width - filled, '.'), samples, noise_text);
}

void Progress::draw_locked(const std::string& text) {
  const size_t pad = last_width_ > text.size() ? last_width_ - text.size() : 0;
  std::fprintf(stream_, "\r%s%*s", text.c_str(), static_cast<int>(pad), "");
  std::fflush(stream_);
  last_width_ = text.size();
}

}  // namespace mtc::bench
