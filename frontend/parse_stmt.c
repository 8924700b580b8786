/* parse_stmt.c - statements and blocks of the recursive-descent parser
 * (parser.h): declarations (`tile`, `let`), `for`, `if`, assignments,
 * stores and calls; a broken statement is skipped (fe_parse_sync_stmt)
 * and the block goes on.
 */
#include "parser.h"

/* ---- statements ---- */

static Stmt *new_stmt(Parser *p, StmtKind k, Loc loc)
{
    Stmt *s = arena_alloc(p->a, sizeof *s);
    s->kind = (uint8_t)k;
    s->loc = loc;
    return s;
}

/* shape := '[' expr {',' expr} ']' */
static Expr **parse_shape(Parser *p, int *rank)
{
    PtrVec v = { 0 };
    if (!fe_parse_expect(p, T_LBRACK))
        return NULL;
    fe_parse_list(p, &v, fe_parse_expr, T_RBRACK);
    *rank = v.n;
    return (Expr **)v.v;
}

/* tile_type := ['shared' | 'reg'] DTYPE shape */
static void parse_tile_type(Parser *p, Stmt *s)
{
    s->has_type = true;
    if (accept(p, T_SHARED))
        s->space = SP_SHARED;
    else if (accept(p, T_REG))
        s->space = SP_REG;
    else if (at(p, T_GLOBAL))
        fe_parse_error(p, peek(p), "a tile lives in 'shared' or 'reg' memory, not 'global'");
    if (!fe_parse_expect_name(p, "tile dtype (e.g. f32)", &s->dtype_name, &s->dtype_loc))
        return;
    s->shape = parse_shape(p, &s->rank);
}

/* tile_stmt := 'tile' NAME [':' tile_type] '=' expr ';' */
static Stmt *parse_tile(Parser *p)
{
    Stmt *s = new_stmt(p, S_TILE, advance(p)->loc);
    if (!fe_parse_expect_name(p, "tile name", &s->name, &s->name_loc))
        return s;
    if (accept(p, T_COLON))
        parse_tile_type(p, s);
    if (!p->panic && fe_parse_expect(p, T_ASSIGN))
        s->value = fe_parse_expr(p);
    fe_parse_expect_semi(p);
    return s;
}

/* let_stmt := 'let' NAME '=' expr ';' */
static Stmt *parse_let(Parser *p)
{
    Stmt *s = new_stmt(p, S_LET, advance(p)->loc);
    if (!fe_parse_expect_name(p, "variable name", &s->name, &s->name_loc))
        return s;
    if (at(p, T_COLON))
        fe_parse_error(p, peek(p), "a 'let' takes no type; declare a typed tile with 'tile %s: DTYPE[...] = ...'",
                 s->name);
    else if (fe_parse_expect(p, T_ASSIGN))
        s->value = fe_parse_expr(p);
    fe_parse_expect_semi(p);
    return s;
}

/* for_stmt := 'for' NAME 'in' expr '..' expr ['step' expr]
 *             ['pipeline' '(' expr ')'] block */
static Stmt *parse_for(Parser *p)
{
    Stmt *s = new_stmt(p, S_FOR, advance(p)->loc);
    if (!fe_parse_expect_name(p, "loop variable name", &s->name, &s->name_loc) || !fe_parse_expect(p, T_IN))
        return s;
    s->lo = fe_parse_expr(p);
    if (!p->panic && fe_parse_expect(p, T_DOTDOT))
        s->hi = fe_parse_expr(p);
    if (!p->panic && accept(p, T_STEP))
        s->step = fe_parse_expr(p);
    if (!p->panic && accept(p, T_PIPELINE) && fe_parse_expect(p, T_LPAREN)) {
        s->pipeline = fe_parse_expr(p);
        if (!p->panic)
            fe_parse_expect(p, T_RPAREN);
    }
    if (!p->panic)
        s->body = fe_parse_block(p, &s->nbody);
    return s;
}

/* if_stmt := 'if' expr block ['else' (if_stmt | block)] */
static Stmt *parse_if(Parser *p)
{
    Stmt *s = new_stmt(p, S_IF, advance(p)->loc);
    s->value = fe_parse_expr(p);
    if (p->panic)
        return s;
    s->body = fe_parse_block(p, &s->nbody);
    if (p->panic || !accept(p, T_ELSE))
        return s;
    s->has_else = true;
    if (at(p, T_IF)) {
        if (!fe_parse_enter(p, "statement")) {
            p->depth--;
            return s;
        }
        Stmt *elif = parse_if(p);
        p->depth--;
        s->els = arena_alloc(p->a, sizeof(Stmt *));
        s->els[0] = elif;
        s->nels = 1;
    } else {
        s->els = fe_parse_block(p, &s->nels);
    }
    return s;
}

static bool is_assign_op(TokKind k)
{
    return k == T_ASSIGN || k == T_PLUSEQ || k == T_MINUSEQ || k == T_STAREQ || k == T_SLASHEQ;
}

/* assign_stmt := (NAME | NAME index) ('=' | '+=' | '-=' | '*=' | '/=') expr ';'
 * call_stmt   := NAME '(' args ')' ';'       (atomic_add: sema checks the name) */
static Stmt *parse_assign(Parser *p)
{
    Stmt *s = new_stmt(p, S_ASSIGN, peek(p)->loc);
    s->target = fe_parse_expr(p);
    if (p->panic)
        return s;
    const Token *op = peek(p);
    if (s->target->kind == E_CALL && op->kind == T_SEMI) {
        s->kind = S_CALL;
        s->value = s->target;
        s->target = NULL;
        fe_parse_expect_semi(p);
        return s;
    }
    if (!is_assign_op((TokKind)op->kind)) {
        fe_parse_expected(p, "'=', '+=', '-=', '*=' or '/=' (a statement is a declaration, an assignment, a store "
                          "or atomic_add(...))");
        return s;
    }
    if (s->target->kind != E_NAME && !(s->target->kind == E_INDEX && s->target->a->kind == E_NAME))
        fe_parse_error(p, op, "cannot assign to this expression: the target must be a name or a tensor window");
    advance(p);
    s->assign_op = op->kind;
    s->value = fe_parse_expr(p);
    fe_parse_expect_semi(p);
    return s;
}

/* stmt := tile_stmt | let_stmt | for_stmt | if_stmt | block | assign_stmt | call_stmt */
static Stmt *parse_stmt(Parser *p)
{
    const Token *t = peek(p);
    switch (t->kind) {
    case T_TILE: return parse_tile(p);
    case T_LET: return parse_let(p);
    case T_FOR: return parse_for(p);
    case T_IF: return parse_if(p);
    case T_LBRACE: {
        Stmt *s = new_stmt(p, S_BLOCK, t->loc);
        s->body = fe_parse_block(p, &s->nbody);
        return s;
    }
    case T_ELSE:
        fe_parse_error(p, t, "'else' without a preceding 'if' block");
        return NULL;
    case T_STEP: case T_PIPELINE: case T_IN:
        fe_parse_error(p, t, "'%s' is only allowed in a 'for' header", tok_names[t->kind]);
        return NULL;
    case T_GRID:
        fe_parse_error(p, t, "'grid' is only allowed in a kernel header, after the parameters");
        return NULL;
    case T_GLOBAL: case T_SHARED: case T_REG:
        fe_parse_error(p, t, "'%s' is only allowed in a declared type", tok_names[t->kind]);
        return NULL;
    default:
        return parse_assign(p);
    }
}

/* Skip the rest of a `{ ... }` group whose '{' was consumed. */
static void skip_group(Parser *p)
{
    for (int depth = 1; depth > 0 && !at(p, T_EOF);) {
        TokKind k = (TokKind)advance(p)->kind;
        depth += (k == T_LBRACE) - (k == T_RBRACE);
    }
    p->panic = false;
}

/* block := '{' {stmt} '}' */
Stmt **fe_parse_block(Parser *p, int *n)
{
    const Token *lb = peek(p);
    *n = 0;
    if (!fe_parse_expect(p, T_LBRACE))
        return NULL;
    if (!fe_parse_enter(p, "block")) {
        p->depth--;
        skip_group(p);
        return NULL;
    }
    PtrVec v = { 0 };
    while (!at(p, T_RBRACE) && !at(p, T_EOF) && !at(p, T_KERNEL)) {
        int start = p->pos;
        Stmt *s = parse_stmt(p);
        if (s)
            fe_parse_push(p, &v, s);
        if (p->panic) {
            fe_parse_sync_stmt(p);
            if (p->pos == start && !at(p, T_RBRACE))
                advance(p);
        }
    }
    p->depth--;
    if (!at(p, T_RBRACE)) {
        if (fe_parse_expected(p, "'}'"))
            diag_note(p->d, lb->loc, "to match this '{'");
    } else {
        advance(p);
    }
    *n = v.n;
    return (Stmt **)v.v;
}
