// A one-line progress display on stderr while measuring. Silent unless stderr is a terminal and
// --quiet is off, so logs and CI output stay clean. Thread-safe; redraws at most 10 times a
// second so it never shows up in the measurements.
#pragma once

#include <chrono>
#include <cstdio>
#include <mutex>
#include <string>
#include <string_view>

namespace mtc::bench {

class Progress {
 public:
  // Enabled when `enabled` and `stream` is a terminal.
  Progress(bool enabled, std::FILE* stream = stderr);
  ~Progress();
  Progress(const Progress&) = delete;  // owns the terminal line
  Progress& operator=(const Progress&) = delete;

  bool enabled() const { return enabled_; }
  // The case being measured: "[3/18] h2d cuda:0 engine".
  void begin_case(std::string label);
  // noise: negative until the stopping rule has evaluated it; fraction: how far the case is
  // towards its last possible round (0..1).
  void update(int64_t samples, double noise, double fraction);
  // Clears the line.
  void end_case();

  // The text of one line, for tests.
  static std::string render(std::string_view label, int64_t samples, double noise, double fraction,
                            int bar_width);

 private:
  void draw_locked(const std::string& text);

  bool enabled_;
  std::FILE* stream_;
  std::mutex mutex_;
  std::string label_;
  std::chrono::steady_clock::time_point last_draw_{};
  size_t last_width_ = 0;
};

}  // namespace mtc::bench
