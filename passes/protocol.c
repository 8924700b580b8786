/* protocol.c - the protocol pass: the static checker of the schedule's
 * barrier rings (ir/protocol.c) run over every kernel that holds a
 * warp-specialized region.
 *
 * Needs: verified IR. Guarantees: a kernel with `ws` roles reaches the code
 * generator only when the checker proved, for any trip count, that each
 * ring phase gets its arrivals and bytes, every read of a slot lies between
 * its full-wait and its release, a slot is refilled only after every
 * consumer released it and the named barriers agree on their thread counts;
 * otherwise a located error says which op breaks which rule (or what keeps
 * the proof from going through). Kernels without roles are not touched.
 */
#include "passes.h"

int pass_protocol(Module *m, PassCtx *ctx)
{
    int nws = 0;
    for (int i = 0; i < m->nfuncs; i++)
        nws += ir_find_op(m->funcs[i], OP_WS) != NULL;
    if (!nws)
        return 0;
    int nerr = ir_protocol_check(m, ctx->diag);
    pass_note(ctx, "%d kernel%s with warp-specialized roles: %s", nws, nws == 1 ? "" : "s",
              nerr ? "the protocol check failed" : "every ring and named barrier proved for any trip count");
    return nerr;
}
