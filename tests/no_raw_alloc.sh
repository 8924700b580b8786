#!/usr/bin/env bash
# Every heap block of the compiler's own code comes from lib/alloc.c
# (tc_malloc, tc_zalloc, tc_realloc, tc_strdup, tc_free): out of memory
# unwinds the API call as TILEC_ERR_NOMEM only for blocks it knows about.
# No malloc, calloc, realloc, free, strdup and the like in the C sources
# of the library's folders, but in lib/alloc.c. Exit 1 with the places found.
set -u
root="${1:-$(cd "$(dirname "$0")/.." && pwd)}"
dirs=("$root/lib" "$root/driver" "$root/frontend" "$root/ir" "$root/passes" "$root/codegen" "$root/target")
for d in "${dirs[@]}"; do
  [ -d "$d" ] || { echo "no_raw_alloc: missing folder $d"; exit 1; }
done
calls='(^|[^_a-zA-Z0-9.>])(malloc|calloc|realloc|reallocarray|free|strdup|strndup|asprintf|vasprintf|open_memstream|getline|getdelim|realpath|aligned_alloc|posix_memalign)[[:space:]]*\('
found=$(grep -rnE "$calls" --include='*.c' --include='*.h' --include='*.re' "${dirs[@]}" 2>/dev/null \
        | grep -v "^$root/lib/alloc\.c:" | grep -vE ':[0-9]+:[[:space:]]*(/?\*|//)')
if [ -n "$found" ]; then
  echo "no_raw_alloc: allocations outside lib/alloc.c:"
  echo "$found"
  exit 1
fi
echo "no_raw_alloc: every allocation in ${#dirs[@]} folders goes through lib/alloc.c"
