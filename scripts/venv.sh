# Sourced: where the project's Python venv lives (MTC_VENV, default ~/.cache/mtc-bench/venv).
# scripts/setup.sh makes it; scripts/env.sh and scripts/lint-python.sh find torch and ruff there.
MTC_VENV="${MTC_VENV:-$HOME/.cache/mtc-bench/venv}"
