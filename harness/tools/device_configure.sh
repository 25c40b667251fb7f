# Sourced by the device_*.sh scripts: the one CMake configure the GPU machine needs (Release,
# sm_90, -Werror, Boost.Program_options from the staged ./.boost-po, since the GPU machine has
# Boost headers but no compiled program_options). Run from the repository root.
#   device_configure SRC_DIR      # configures SRC_DIR/build-dev
device_configure() {
  cmake -S "$1" -B "$1/build-dev" -DCMAKE_BUILD_TYPE=Release -DDMUON_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DBOOST_ROOT="$PWD/.boost-po" -DBoost_NO_SYSTEM_PATHS=ON -DBoost_USE_STATIC_LIBS=ON
}

# Builds build-dev's dmuon-bench unless it is there (a warm machine keeps it). Logs to LOG
# (the caller's run log); on failure the build's last 60 lines go there and it returns 1.
#   device_build_bench LOG
device_build_bench() {
  [ -x build-dev/harness/dmuon-bench ] && return 0
  echo "== $(date -u +%H:%M:%S) configure + build dmuon-bench" | tee -a "$1"
  device_configure . > /tmp/build.txt 2>&1 && cmake --build build-dev -j16 --target dmuon-bench >> /tmp/build.txt 2>&1 &&
    return 0
  tail -60 /tmp/build.txt >> "$1"
  echo "== $(date -u +%H:%M:%S) BUILD FAILED" | tee -a "$1"
  return 1
}
