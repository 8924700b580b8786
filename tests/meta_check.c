/* meta_check.c - loads a kernel metadata file through libtilert's parser
 * (tilert_module_from_meta: no driver, no GPU) and says whether the runtime
 * accepts it. Used by tests/hostile_corpus.py: whatever tilec emits with
 * exit 0, the runtime must accept.
 *
 * usage: meta_check FILE.meta    exit 0 accepted, 1 refused (reason on stderr), 2 unreadable
 */
#include <stdio.h>
#include <stdlib.h>

#include "tilert.h"

int main(int argc, char **argv)
{
    if (argc != 2) {
        fprintf(stderr, "usage: meta_check FILE.meta\n");
        return 2;
    }
    FILE *f = fopen(argv[1], "rb");
    if (!f) {
        perror(argv[1]);
        return 2;
    }
    size_t cap = 1 << 16, n = 0;
    char *buf = malloc(cap);
    size_t got;
    while (buf && (got = fread(buf + n, 1, cap - n - 1, f)) > 0) {
        n += got;
        if (n + 1 == cap) {
            char *nb = realloc(buf, cap *= 2);
            if (!nb)
                free(buf);
            buf = nb;
        }
    }
    fclose(f);
    if (!buf)
        return 2;
    buf[n] = 0;
    tilert_module *m = NULL;
    tilert_status st = tilert_module_from_meta(buf, &m);
    free(buf);
    if (st != TILERT_OK) {
        fprintf(stderr, "%s: refused: %s\n", argv[1], tilert_last_error());
        return 1;
    }
    tilert_module_free(m);
    return 0;
}
