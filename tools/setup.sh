#!/usr/bin/env bash
# Set up primebot on a fresh Debian/Ubuntu machine: system libraries for
# headless rendering, a virtual environment in .venv, and the package with
# its test tools. Safe to run again; it only installs what is missing.
#
#   bash tools/setup.sh            CPU machine: torch pinned to the CPU build
#   bash tools/setup.sh --dev      also the test tools and Chromium (the report's browser test)
#   PRIMEBOT_TORCH=gpu bash tools/setup.sh   keep whatever torch pip picks (CUDA builds)
set -euo pipefail
cd "$(dirname "$0")/.."

DEV=0
[ "${1:-}" = "--dev" ] && DEV=1

# Mesa EGL/OSMesa for MuJoCo's offscreen renderer (MUJOCO_GL=egl or osmesa).
APT_PACKAGES=(libegl1 libegl-mesa0 libgl1 libgl1-mesa-dri libgbm1 libglvnd0 libosmesa6)
[ "$DEV" = 1 ] && APT_PACKAGES+=(chromium)
if command -v apt-get >/dev/null 2>&1; then
    missing=()
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg -s "$pkg" >/dev/null 2>&1 || missing+=("$pkg")
    done
    if [ ${#missing[@]} -gt 0 ]; then
        SUDO=""
        [ "$(id -u)" -ne 0 ] && SUDO="sudo"
        echo "[setup] apt-get install ${missing[*]}"
        $SUDO apt-get update -qq
        DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    fi
fi

PYTHON=${PYTHON:-python3}
if [ ! -x .venv/bin/python ]; then
    echo "[setup] creating .venv with $($PYTHON --version)"
    "$PYTHON" -m venv .venv
fi
.venv/bin/python -m pip install -q --upgrade pip "setuptools>=77" wheel

CONSTRAINTS=()
if [ "${PRIMEBOT_TORCH:-cpu}" = "cpu" ]; then
    # An unpinned torch pulls a multi-GB CUDA build; the CPU build is enough here.
    CONSTRAINTS=(-c constraints-cpu.txt)
fi
EXTRAS=""
[ "$DEV" = 1 ] && EXTRAS="[dev]"
echo "[setup] pip install -e .$EXTRAS ${CONSTRAINTS[*]}"
.venv/bin/python -m pip install -q "${CONSTRAINTS[@]}" -e ".$EXTRAS"
echo "[setup] done: $(.venv/bin/primebot --version)"
