# Sourced by the GPU checks that run Nsight Systems (gpu-check.sh's full mode and
# gpu-check-nsys.sh): which nsys, and the libraries it lacks on the GPU host. Run from the
# repository's root.
#
# find_nsys: sets `nsys` to MTC_NSYS when that is set, else to the nsys the GPU host ships inside
#   Nsight Compute, else to nsys on PATH. Returns 1 with `nsys_problem` saying why when there is
#   none (or MTC_NSYS is not an executable).
# unpack_nsys_libs DIR: unpacks .carry/debs/*.deb into DIR and puts their libraries on
#   LD_LIBRARY_PATH. The GPU host lacks libdw1 and libelf1, which nsys needs: `apt-get download
#   libdw1 libelf1` into .carry/debs (git-ignored) on a CPU machine. Returns 1 when there are none.

find_nsys() {
  local shipped=/opt/nvidia/nsight-compute/2025.3.1/host/target-linux-x64/nsys
  nsys="" nsys_problem=""
  if [[ -n "${MTC_NSYS:-}" ]]; then
    [[ -x "$MTC_NSYS" ]] && nsys="$MTC_NSYS" || nsys_problem="MTC_NSYS=$MTC_NSYS is not an executable"
  elif [[ -x "$shipped" ]]; then
    nsys="$shipped"
  else
    nsys="$(command -v nsys || true)"
    [[ -n "$nsys" ]] || nsys_problem="no Nsight Systems on this host (MTC_NSYS names one)"
  fi
  [[ -n "$nsys" ]]
}

unpack_nsys_libs() {
  compgen -G ".carry/debs/*.deb" > /dev/null || return 1
  local deb
  for deb in .carry/debs/*.deb; do dpkg -x "$deb" "$1"; done
  export LD_LIBRARY_PATH="$1/usr/lib/x86_64-linux-gnu${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}"
}
