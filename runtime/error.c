/* error.c - status strings, the version and the thread-local last-error
 * message every failing tilert_ call leaves behind. */
#include <stdio.h>
#include <string.h>
#include "rt.h"

static _Thread_local char last_error[4096];

TILERT_API const char *tilert_last_error(void) { return last_error; }

void tilert_clear_error(void) { last_error[0] = '\0'; }

/* The arguments may include tilert_last_error() itself: format into a copy. */
tilert_status tilert_fail(tilert_status st, const char *fmt, ...)
{
    char buf[sizeof last_error];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(buf, sizeof buf, fmt, ap);
    va_end(ap);
    memcpy(last_error, buf, sizeof buf);
    return st;
}

TILERT_API const char *tilert_status_string(tilert_status s)
{
    switch (s) {
    case TILERT_OK: return "ok";
    case TILERT_ERR_USAGE: return "bad usage";
    case TILERT_ERR_NOMEM: return "out of memory";
    case TILERT_ERR_NO_DRIVER: return "no CUDA driver";
    case TILERT_ERR_NO_DEVICE: return "no CUDA device";
    case TILERT_ERR_META: return "malformed kernel metadata";
    case TILERT_ERR_NOT_FOUND: return "no such kernel";
    case TILERT_ERR_ARGS: return "launch arguments do not match the kernel";
    case TILERT_ERR_JIT: return "PTX could not be loaded";
    case TILERT_ERR_CUDA: return "CUDA driver call failed";
    case TILERT_ERR_IO: return "file could not be read";
    }
    return "unknown status";
}

TILERT_API const char *tilert_version(void) { return "0.1.0"; }
