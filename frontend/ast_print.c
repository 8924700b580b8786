/* ast_print.c - the AST dump behind `tilec --emit=ast`: an indented,
 * S-expression-like text, stable across runs (tests match it).
 *
 *   (kernel NAME
 *     (const NAME KIND [DEFAULT])
 *     (tensor NAME DTYPE [DIM ...])
 *     (scalar NAME TYPE)
 *     (grid E ...)
 *     STMT ...)
 *
 * Statements: (tile NAME [SPACE DTYPE [E ...]] INIT), (let NAME E),
 * (OP TARGET E) for = += ..., (for VAR LO HI [(step E)] [(pipeline E)] STMT ...),
 * (if COND (then STMT ...) [(else STMT ...)]), (block STMT ...).
 * Expressions: literals, names, (OP A [B]), (? C A B), (call F ARG ...),
 * (index BASE ELEM ...), (slice START SIZE), `:`, `*`, (. BASE FIELD),
 * (^T A), (= NAME E) for a keyword argument.
 */
#include "frontend.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void print_expr(const Expr *e, StrBuf *out);

/* Shortest %g form that reads back exactly; always shows it is a float. */
static void print_list(Expr *const *v, int n, StrBuf *out)
{
    for (int i = 0; i < n; i++) {
        sb_putc(out, ' ');
        print_expr(v[i], out);
    }
}

static void print_expr(const Expr *e, StrBuf *out)
{
    if (!e) {
        sb_puts(out, "<null>");
        return;
    }
    switch ((ExprKind)e->kind) {
    case E_INT: sb_printf(out, "%lld", (long long)e->ival); return;
    case E_FLOAT: sb_put_double(out, e->fval); return;
    case E_BOOL: sb_puts(out, e->bval ? "true" : "false"); return;
    case E_INF: sb_puts(out, "inf"); return;
    case E_NAME: sb_puts(out, e->name); return;
    case E_FULL: sb_putc(out, ':'); return;
    case E_NEWAXIS: sb_putc(out, '*'); return;
    case E_UNARY: case E_BINARY: sb_printf(out, "(%s ", tok_names[e->op]); break;
    case E_TERNARY: sb_puts(out, "(? "); break;
    case E_CALL: sb_printf(out, "(call %s", e->name ? e->name : "<null>"); break;
    case E_INDEX: sb_puts(out, "(index "); break;
    case E_MEMBER: sb_puts(out, "(. "); break;
    case E_TRANSPOSE: sb_puts(out, "(^T "); break;
    case E_SLICE: sb_puts(out, e->op == T_PLUS ? "(slice " : "(range "); break;
    case E_LIST: sb_puts(out, "(list"); break;
    case E_KWARG: sb_printf(out, "(= %s ", e->name); break;
    }
    if (e->kind != E_CALL && e->kind != E_LIST)
        print_expr(e->a, out);
    if (e->kind == E_MEMBER)
        sb_printf(out, " %s", e->name ? e->name : "<null>");
    if (e->b) {
        sb_putc(out, ' ');
        print_expr(e->b, out);
    }
    if (e->c) {
        sb_putc(out, ' ');
        print_expr(e->c, out);
    }
    print_list(e->args, e->nargs, out);
    sb_putc(out, ')');
}

static void newline(StrBuf *out, int indent)
{
    sb_putc(out, '\n');
    for (int i = 0; i < indent; i++)
        sb_puts(out, "  ");
}

static void print_stmt(const Stmt *s, int indent, StrBuf *out);

static void print_body(Stmt *const *v, int n, int indent, StrBuf *out)
{
    for (int i = 0; i < n; i++) {
        newline(out, indent);
        print_stmt(v[i], indent, out);
    }
}

static void print_tile(const Stmt *s, StrBuf *out)
{
    sb_printf(out, "(tile %s", s->name ? s->name : "<null>");
    if (s->has_type) {
        if (s->space != SP_ANY)
            sb_printf(out, " %s", s->space == SP_SHARED ? "shared" : "reg");
        sb_printf(out, " %s [", s->dtype_name ? s->dtype_name : "<null>");
        for (int i = 0; i < s->rank; i++) {
            if (i)
                sb_putc(out, ' ');
            print_expr(s->shape[i], out);
        }
        sb_putc(out, ']');
    }
    sb_putc(out, ' ');
    print_expr(s->value, out);
}

static void print_for(const Stmt *s, int indent, StrBuf *out)
{
    sb_printf(out, "(for %s ", s->name ? s->name : "<null>");
    print_expr(s->lo, out);
    sb_putc(out, ' ');
    print_expr(s->hi, out);
    if (s->step) {
        sb_puts(out, " (step ");
        print_expr(s->step, out);
        sb_putc(out, ')');
    }
    if (s->pipeline) {
        sb_puts(out, " (pipeline ");
        print_expr(s->pipeline, out);
        sb_putc(out, ')');
    }
    print_body(s->body, s->nbody, indent + 1, out);
}

static void print_if(const Stmt *s, int indent, StrBuf *out)
{
    sb_puts(out, "(if ");
    print_expr(s->value, out);
    newline(out, indent + 1);
    sb_puts(out, "(then");
    print_body(s->body, s->nbody, indent + 2, out);
    sb_putc(out, ')');
    if (s->has_else) {
        newline(out, indent + 1);
        sb_puts(out, "(else");
        print_body(s->els, s->nels, indent + 2, out);
        sb_putc(out, ')');
    }
}

static void print_stmt(const Stmt *s, int indent, StrBuf *out)
{
    switch ((StmtKind)s->kind) {
    case S_TILE: print_tile(s, out); break;
    case S_LET:
        sb_printf(out, "(let %s ", s->name ? s->name : "<null>");
        print_expr(s->value, out);
        break;
    case S_ASSIGN:
        sb_printf(out, "(%s ", tok_names[s->assign_op ? s->assign_op : T_ASSIGN]);
        print_expr(s->target, out);
        sb_putc(out, ' ');
        print_expr(s->value, out);
        break;
    case S_FOR: print_for(s, indent, out); break;
    case S_IF: print_if(s, indent, out); break;
    case S_BLOCK:
        sb_puts(out, "(block");
        print_body(s->body, s->nbody, indent + 1, out);
        break;
    case S_CALL:
        sb_puts(out, "(call ");
        print_expr(s->value, out);
        break;
    }
    sb_putc(out, ')');
}

static void print_param(const AstParam *pa, StrBuf *out)
{
    static const char *const cls[] = { "const", "tensor", "scalar" };
    sb_printf(out, "(%s %s %s", cls[pa->cls], pa->name ? pa->name : "<null>",
              pa->type_name ? pa->type_name : "<null>");
    if (pa->cls == PC_CONST && pa->deflt) {
        sb_putc(out, ' ');
        print_expr(pa->deflt, out);
    }
    if (pa->cls == PC_TENSOR) {
        sb_puts(out, " [");
        for (int i = 0; i < pa->rank; i++) {
            if (i)
                sb_putc(out, ' ');
            print_expr(pa->dims[i], out);
        }
        sb_putc(out, ']');
    }
    sb_putc(out, ')');
}

static void print_kernel(const AstKernel *k, StrBuf *out)
{
    sb_printf(out, "(kernel %s", k->name ? k->name : "<null>");
    for (int i = 0; i < k->nconsts; i++) {
        newline(out, 1);
        print_param(&k->consts[i], out);
    }
    for (int i = 0; i < k->nparams; i++) {
        newline(out, 1);
        print_param(&k->params[i], out);
    }
    newline(out, 1);
    sb_puts(out, "(grid");
    print_list(k->grid, k->ngrid, out);
    sb_putc(out, ')');
    print_body(k->body, k->nbody, 1, out);
    sb_puts(out, ")\n");
}

void fe_print_ast(const AstModule *m, StrBuf *out)
{
    for (int i = 0; i < m->nkernels; i++)
        print_kernel(&m->kernels[i], out);
}
