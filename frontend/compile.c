/* compile.c - fe_compile(): the whole front end in one call,
 * lex -> parse -> fe_lower. Lowering only runs on a source that lexed and
 * parsed without errors, so sema never sees a broken AST.
 */
#include "frontend.h"

#include <string.h>

/* Register the source for caret rendering unless the caller already did. */
static void add_source_once(Diag *d, const char *file, const char *src, size_t len)
{
    for (int i = 0; i < d->nsrcs; i++)
        if (d->srcs[i].text == src || (file && d->srcs[i].file && strcmp(d->srcs[i].file, file) == 0))
            return;
    diag_add_source(d, file, src, len);
}

Module *fe_compile(Arena *a, const char *file, const char *src, size_t len,
                   const FeDefine *defs, int ndefs, Diag *d)
{
    int errors_before = d->nerrors;
    add_source_once(d, file, src, len);
    TokenList tl = fe_lex(a, file, src, len, d);
    AstModule *ast = fe_parse(a, &tl, d);
    fe_tokens_release(a, &tl);
    if (d->nerrors > errors_before)
        return NULL;
    return fe_lower(a, ast, file, defs, ndefs, d);
}
