#!/usr/bin/env bash
# run.sh BUILD_DIR SOURCE_DIR C_COMPILER [C_FLAGS] - the installation, as a
# user of it sees it: `cmake --install` into a temporary prefix, then
#  - every file in place (CLI, shared libraries with a versioned SONAME and
#    static ones, headers, CMake package, pkg-config files, man page);
#  - the shared libraries export the tilec_* / tilert_* API only (nm -D);
#  - a C program built through find_package(tilec) (shared and static
#    libraries) and one built through `pkg-config tilec tilert` compile a
#    kernel to PTX and read its metadata back;
#  - the installed tilec prints its version and compiles an example.
# C_FLAGS (the sanitizer flags of an instrumented build) go to every
# compile and link. Needs cmake, pkg-config, nm and readelf; no GPU.
set -euo pipefail
build=$(cd "$1" && pwd) src=$(cd "$2" && pwd) cc=$3 cflags=${4:-}
tmp=$(mktemp -d "${TMPDIR:-/tmp}/tilec-install.XXXXXX")
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
prefix=$tmp/prefix

cmake --install "$build" --prefix "$prefix" >"$tmp/install.log" || { cat "$tmp/install.log"; fail "cmake --install"; }
config=$(find "$prefix" -name tilecConfig.cmake)
[ -n "$config" ] || fail "no tilecConfig.cmake under the prefix"
libdir=$(dirname "$(dirname "$(dirname "$config")")")
echo "installed into $prefix (libraries in ${libdir#"$prefix"/})"

for f in bin/tilec include/tilec.h include/tilert.h share/man/man1/tilec.1; do
  [ -f "$prefix/$f" ] || fail "$f not installed"
done
for f in libtilec.a libtilert.a pkgconfig/tilec.pc pkgconfig/tilert.pc cmake/tilec/tilecConfigVersion.cmake; do
  [ -f "$libdir/$f" ] || fail "lib/$f not installed"
done
grep -q '^\.TH TILEC 1' "$prefix/share/man/man1/tilec.1" || fail "tilec.1 is not a man page"

for lib in tilec tilert; do
  so=$libdir/lib$lib.so
  [ -L "$so" ] || fail "lib$lib.so is not a link to the versioned library"
  soname=$(readelf -d "$so" | sed -n 's/.*Library soname: \[\(.*\)\]/\1/p')
  [[ "$soname" =~ ^lib$lib\.so\.[0-9]+$ ]] || fail "lib$lib.so has SONAME '$soname'"
  [ -e "$libdir/$soname" ] || fail "$soname not installed"
  nm -D --defined-only "$so" | awk '{print $NF}' > "$tmp/$lib.syms"
  others=$(grep -v "^${lib}_" "$tmp/$lib.syms" || true)
  [ -z "$others" ] || fail "lib$lib.so exports non-API symbols: $(echo $others | head -c 400)"
  echo "lib$lib.so: SONAME $soname, $(wc -l < "$tmp/$lib.syms") exported symbols, all ${lib}_*"
done

echo "== find_package(tilec)"
cmake -S "$src/tests/install" -B "$tmp/cmake-build" -DCMAKE_PREFIX_PATH="$prefix" \
      -DCMAKE_C_COMPILER="$cc" -DCMAKE_C_FLAGS="$cflags" -DCMAKE_EXE_LINKER_FLAGS="$cflags" \
      >"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "configuring the find_package consumer"; }
cmake --build "$tmp/cmake-build" >>"$tmp/consumer.log" 2>&1 || { cat "$tmp/consumer.log"; fail "building it"; }
deps=$(ldd "$tmp/cmake-build/consumer")
[[ "$deps" == *"$libdir/libtilec.so"* ]] || fail "consumer does not load the installed libtilec"
"$tmp/cmake-build/consumer"
"$tmp/cmake-build/consumer_static"

echo "== pkg-config tilec tilert"
export PKG_CONFIG_PATH=$libdir/pkgconfig
ver=$(pkg-config --modversion tilec)
echo "pkg-config: tilec $ver"
# shellcheck disable=SC2046,SC2086
"$cc" $cflags "$src/tests/install/consumer.c" -o "$tmp/consumer_pc" $(pkg-config --cflags --libs tilec tilert) \
      -Wl,-rpath,"$libdir" || fail "building through pkg-config"
"$tmp/consumer_pc"

h=$(sed -n 's/^#define TILEC_VERSION_\(MAJOR\|MINOR\|PATCH\) \([0-9]*\).*/\2/p' "$prefix/include/tilec.h" | paste -sd.)
[ "$h" = "$ver" ] || fail "tilec.h says version $h, the package $ver"

echo "== the installed command"
v=$("$prefix/bin/tilec" --version)
echo "$v"
[[ "$v" == "tilec $ver "* ]] || fail "tilec --version does not say $ver"
"$prefix/bin/tilec" "$src/examples/vector_add.tile" -o "$tmp/va.ptx"
grep -q "^// tilec $ver" "$tmp/va.ptx" || fail "no version in the PTX header"
grep -q "^compiler tilec $ver" "$tmp/va.meta" || fail "no compiler record in the metadata"
echo "install: ok"
