#!/usr/bin/env bash
# Build the native Linux system package (.deb / .rpm / .pkg.tar.zst) for this distro.
#
#   installers/linux/build_system_package.sh [extra briefcase options]
#
# Briefcase builds system packages only with the distro's own Python: the Python that
# runs Briefcase must be /usr/bin/python3, same version string (a pyenv or venv Python
# of another patch level is refused). So Briefcase gets its own venv made from
# /usr/bin/python3, under build/ (gitignored). Needs python3-dev and python3-venv,
# plus the [tool.briefcase] system_requires for this distro (build-essential, cmake).
# Run installers/build_wheels.sh cpu first for a portable llama.cpp; without
# installers/wheels/ pip builds llama-cpp-python from source for this CPU only.
set -euo pipefail
cd "$(dirname "$0")/../.."

venv=build/briefcase-system-venv
if [ ! -x "$venv/bin/briefcase" ]; then
    /usr/bin/python3 -m venv "$venv"
    "$venv/bin/python" -m pip install --quiet "briefcase>=0.4.7"
fi
briefcase="$venv/bin/briefcase"
if [ -d build/hearth ]; then  # a project exists: refresh its code and packages
    "$briefcase" update linux system --update-requirements --no-input "$@"
else
    "$briefcase" create linux system --no-input "$@"
fi
"$briefcase" build linux system --no-input "$@"
"$briefcase" package linux system --no-input "$@"
ls -l dist/
