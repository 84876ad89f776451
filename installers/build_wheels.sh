#!/usr/bin/env bash
# Build llama-cpp-python wheels for the installers (Briefcase accepts only binary
# wheels on macOS and Windows; PyPI has only the sdist). The wheels land in
# installers/wheels/, where [tool.briefcase] requirement_installer_args points pip.
#
#   installers/build_wheels.sh cpu      # portable CPU build (no -march=native)
#   installers/build_wheels.sh metal    # macOS, Apple Silicon
#   installers/build_wheels.sh cuda     # NVIDIA, needs the CUDA toolkit
#   installers/build_wheels.sh vulkan   # any Vulkan GPU, needs the Vulkan SDK
#
# Extra CMake flags can be added with CMAKE_ARGS_EXTRA="...". Run on the target OS.
set -euo pipefail
cd "$(dirname "$0")"

flavour=${1:-cpu}
version=$(sed -n 's/.*"llama-cpp-python==\([^"]*\)".*/\1/p' ../pyproject.toml | head -n 1)
python=${PYTHON:-python3}

case "$flavour" in
    cpu)
        # Portable: a baseline x86-64 build with the common SIMD levels llama.cpp
        # selects at run time; never -march=native (it would crash on older CPUs).
        args="-DGGML_NATIVE=OFF -DGGML_BACKEND_DL=ON -DGGML_CPU_ALL_VARIANTS=ON"
        if [ "$(uname -m)" = "arm64" ] || [ "$(uname -m)" = "aarch64" ]; then
            args="-DGGML_NATIVE=OFF"
        fi
        ;;
    metal) args="-DGGML_NATIVE=OFF -DGGML_METAL=ON -DGGML_METAL_EMBED_LIBRARY=ON" ;;
    cuda) args="-DGGML_NATIVE=OFF -DGGML_CUDA=ON" ;;
    vulkan) args="-DGGML_NATIVE=OFF -DGGML_VULKAN=ON" ;;
    *) echo "unknown flavour: $flavour (cpu, metal, cuda, vulkan)" >&2; exit 2 ;;
esac

mkdir -p wheels
echo "Building llama-cpp-python $version ($flavour): CMAKE_ARGS=$args ${CMAKE_ARGS_EXTRA:-}"
CMAKE_ARGS="$args ${CMAKE_ARGS_EXTRA:-}" "$python" -m pip wheel \
    --no-deps --no-cache-dir --wheel-dir wheels "llama-cpp-python==$version"
ls -l wheels
