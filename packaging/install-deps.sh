#!/usr/bin/env bash
# Installs WaferScope's build and test dependencies from Debian 12 packages.
# Idempotent: packages already present are skipped, and `apt-get update` runs at most once.
# Works as root or through sudo. Set WAFERSCOPE_DEPS=core to install only what the Qt-free
# build (core, CLI, core tests) needs.
set -euo pipefail

# dpkg-dev (dpkg-shlibdeps) and file serve `cpack -G DEB`; desktop-file-utils and appstream validate
# the desktop entry and the metainfo (packaging test); clang and its runtimes build the asan
# preset (AddressSanitizer, UndefinedBehaviorSanitizer, libFuzzer); pybind11, Python's headers and
# NumPy build the Python module (app/python), which every preset builds; nbconvert, ipykernel and
# matplotlib execute its sample notebook in the tests; libprotobuf and protoc encode the run
# directory's TensorBoard event file, which python3-protobuf decodes in the tests; libre2-dev matches config
# patterns in linear time.
core_packages=(build-essential cmake ninja-build pkg-config clang-format libtbb-dev nlohmann-json3-dev libyaml-cpp-dev libre2-dev
    libprotobuf-dev protobuf-compiler dpkg-dev file desktop-file-utils appstream clang libclang-rt-14-dev
    pybind11-dev python3-dev python3-numpy python3-protobuf jupyter-nbconvert python3-ipykernel python3-matplotlib)
gui_packages=(qt6-base-dev libqt6opengl6-dev qt6-charts-dev qt6-svg-dev libqcustomplot-dev
    libxkbcommon-dev xvfb xauth imagemagick fonts-dejavu-core)

packages=("${core_packages[@]}")
if [ "${WAFERSCOPE_DEPS:-all}" != core ]; then
    packages+=("${gui_packages[@]}")
fi

missing=()
for package in "${packages[@]}"; do
    status=$(dpkg-query -W -f='${Status}' "$package" 2>/dev/null || true)
    [ "$status" = "install ok installed" ] || missing+=("$package")
done

if [ ${#missing[@]} -eq 0 ]; then
    echo "install-deps: all ${#packages[@]} packages already installed"
    exit 0
fi

if [ "$(id -u)" -eq 0 ]; then
    as_root=()
elif command -v sudo >/dev/null 2>&1; then
    as_root=(sudo)
else
    echo "install-deps: error: need root or sudo to install: ${missing[*]}" >&2
    exit 1
fi

echo "install-deps: installing ${missing[*]}"
export DEBIAN_FRONTEND=noninteractive
"${as_root[@]}" apt-get update -qq
"${as_root[@]}" apt-get install -y -qq --no-install-recommends "${missing[@]}"
