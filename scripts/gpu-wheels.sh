#!/usr/bin/env bash
# Download the wheels that scripts/gpu-check.sh installs on a GPU machine without internet.
#
#   scripts/gpu-wheels.sh [DEST]        # default DEST: .whl/ (git-ignored)
#
# The GPU image already holds PyTorch, NumPy, pytest and much more (the list is
# scripts/gpu-image-packages.txt); this fetches the platform's other dependencies
# (pyproject.toml's [project] dependencies) and what they need, as manylinux x86-64 wheels
# for CPython $GPU_PYTHON (default 3.12, the image's), and drops every wheel of a package
# the image already has, so that nothing there is shadowed by another version. Versions
# follow $PYTHON's environment where it has the package (the one the test suite passes
# in), else the newest that fit. (`python scripts/gpu_env.py installed-wheels DIR`
# instead repacks them from $PYTHON's environment, for a dry run of the check here.)
set -euo pipefail
cd "$(dirname "$0")/.."
DEST=${1:-.whl}
PYTHON=${PYTHON:-python3}
GPU_PYTHON=${GPU_PYTHON:-3.12}
IMAGE_HAS=$(grep -v '^#' scripts/gpu-image-packages.txt)

mkdir -p "$DEST"
mapfile -t REQUIREMENTS < <("$PYTHON" scripts/gpu_env.py requirements)
PLATFORMS=()
for p in manylinux_2_28_x86_64 manylinux_2_27_x86_64 manylinux_2_17_x86_64 manylinux2014_x86_64 \
         manylinux1_x86_64 manylinux_2_24_x86_64 manylinux_2_31_x86_64 manylinux_2_34_x86_64; do
    PLATFORMS+=(--platform "$p")
done
CONSTRAINTS=$(mktemp)
trap 'rm -f "$CONSTRAINTS"' EXIT
"$PYTHON" -m pip freeze --all | grep -E '^[A-Za-z0-9_.-]+==[^+]+$' >"$CONSTRAINTS" || true
rm -f "$DEST"/*.whl
"$PYTHON" -m pip download --quiet --only-binary=:all: --python-version "$GPU_PYTHON" \
    --implementation cp "${PLATFORMS[@]}" -c "$CONSTRAINTS" -d "$DEST" "${REQUIREMENTS[@]}"
for wheel in "$DEST"/*.whl; do
    name=$(basename "$wheel" | cut -d- -f1 | tr '[:upper:]_.' '[:lower:]--')
    for have in $IMAGE_HAS; do
        if [ "$name" = "$have" ]; then rm -f "$wheel"; fi
    done
done
echo "gpu-wheels: $(ls "$DEST"/*.whl | wc -l) wheels in $DEST ($(du -sh "$DEST" | cut -f1); a device run carries at most 64 MiB):"
ls "$DEST"
