# Sourced by the device_*.sh scripts: the one CMake configure the GPU machine needs (Release,
# sm_90, -Werror, Boost.Program_options from the staged ./.boost-po, since the GPU machine has
# Boost headers but no compiled program_options). Run from the repository root.
#   device_configure SRC_DIR      # configures SRC_DIR/build-dev
device_configure() {
  cmake -S "$1" -B "$1/build-dev" -DCMAKE_BUILD_TYPE=Release -DDMUON_WERROR=ON -DCMAKE_CUDA_ARCHITECTURES=90 \
    -DBOOST_ROOT="$PWD/.boost-po" -DBoost_NO_SYSTEM_PATHS=ON -DBoost_USE_STATIC_LIBS=ON
}
