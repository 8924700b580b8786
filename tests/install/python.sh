#!/usr/bin/env bash
# python.sh BUILD_DIR SOURCE_DIR PYTHON VERSION - the Python package as a
# user installs it: `cmake --install` into a temporary prefix, then
#  1. `pip install` of a copy of python/ into a venv, recording the prefix
#     (TILEC_PREFIX): from a folder outside the repository, with no
#     TILEC_LIB_DIR, `import tilec` finds libtilec in the prefix's lib/,
#     has __version__ VERSION, the examples as package data (tilec.attention's
#     source among them) and compiles one;
#  2. `pip install --target` with the libraries bundled (TILEC_BUNDLE_LIBS):
#     they load from the package's own folder.
# Exits 77 (skipped) only when this Python has no pip, venv, setuptools or
# wheel (scripts/setup.sh installs Debian's).
# TEST_PRELOAD (the sanitizer runtimes of an instrumented build) is set as
# LD_PRELOAD for the checks, not for pip.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) py=$3 version=$4
fail() { echo "FAIL: $*" >&2; exit 1; }
if ! "$py" -c "import setuptools, wheel, venv, ensurepip" 2>/dev/null || ! "$py" -m pip --version >/dev/null 2>&1; then
  echo "skip: $py lacks setuptools, wheel, venv/ensurepip or pip" \
       "(Debian: python3-setuptools python3-wheel python3-venv python3-pip, as scripts/setup.sh installs)"
  exit 77
fi
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-py.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
prefix=$tmp/prefix
cmake --install "$build" --prefix "$prefix" >/dev/null
libdir=$(dirname "$(dirname "$(dirname "$(find "$prefix" -name tilecConfig.cmake)")")")

# A copy of the package (examples/ link dereferenced), as an sdist would hold it.
cp -rL "$src/python" "$tmp/src"
rm -rf "$tmp/src/build" "$tmp/src"/*.egg-info "$tmp/src/tests"
pipopts=(--no-build-isolation --no-index --no-deps --disable-pip-version-check -q)

check='
import os, sys, tilec
want_dir, version = sys.argv[1], sys.argv[2]
assert tilec.__version__ == version, (tilec.__version__, version)
assert callable(tilec.attention)
src = tilec._attention.source("bf16")
assert "kernel attention" in src, "attention.tile not found in the package"
assert not tilec._attention._SOURCE.startswith(os.environ["SRC_ROOT"] + os.sep), tilec._attention._SOURCE
m = tilec.compile(tilec.example_path("vector_add"), arch="sm_90a")
assert ".entry vector_add(" in m.ptx and m.kernels[0].name == "vector_add"
lib = tilec._lib.paths["libtilec.so"]
assert lib.startswith(want_dir + os.sep), "libtilec loaded from %s, not %s" % (lib, want_dir)
print("tilec %s from %s: libtilec %s, %d bytes of PTX for vector_add" % (
      tilec.__version__, os.path.dirname(tilec.__file__), lib, len(m.ptx)))
'
run_check() {  # PYTHON WANT_DIR [PYTHONPATH]
  (cd "$tmp" && env -u TILEC_LIB_DIR PYTHONPATH="${3:-}" SRC_ROOT="$src" LD_PRELOAD="${TEST_PRELOAD:-}" \
     "$1" -c "$check" "$2" "$version")
}

echo "== pip install into a venv, libraries from the install prefix"
"$py" -m venv --system-site-packages "$tmp/venv"
TILEC_PREFIX=$prefix "$tmp/venv/bin/python" -m pip install "${pipopts[@]}" "$tmp/src" || fail "pip install"
run_check "$tmp/venv/bin/python" "$libdir"

echo "== pip install --target, libraries bundled in the package"
TILEC_BUNDLE_LIBS=$libdir "$py" -m pip install "${pipopts[@]}" --target "$tmp/site" "$tmp/src" || fail "pip install --target"
[ -f "$tmp/site/tilec/examples/attention.tile" ] || fail "examples not installed as package data"
run_check "$py" "$tmp/site/tilec/lib" "$tmp/site"
echo "python install: ok"
