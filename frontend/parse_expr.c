/* parse_expr.c - expressions of the recursive-descent parser (parser.h):
 * one function per precedence level group, binary levels by precedence
 * climbing (fe_bin_prec); each node's height is checked as it is built
 * (grown()), see parse.c.
 */
#include "parser.h"

/* ---- expressions ---- */

static Expr *new_expr(Parser *p, ExprKind k, Loc loc)
{
    Expr *e = arena_alloc(p->a, sizeof *e);
    e->kind = (uint8_t)k;
    e->loc = loc;
    e->height = 1;
    return e;
}

static int height_of(const Expr *e) { return e ? e->height : 0; }

/* Set e's height from its children (all parsed); a tree deeper than
 * FE_MAX_EXPR_HEIGHT is an error at e (the operator that went too deep), its
 * children dropped so that nothing after the parser walks them. */
static Expr *grown(Parser *p, Expr *e)
{
    int h = height_of(e->a);
    if (height_of(e->b) > h) h = height_of(e->b);
    if (height_of(e->c) > h) h = height_of(e->c);
    for (int i = 0; i < e->nargs; i++)
        if (height_of(e->args[i]) > h)
            h = height_of(e->args[i]);
    e->height = h + 1;
    if (e->height <= FE_MAX_EXPR_HEIGHT)
        return e;
    if (!p->panic)
        diag_error(p->d, e->loc, "expression nested too deeply (limit %d)", FE_MAX_EXPR_HEIGHT);
    p->panic = true;
    Expr *bad = new_expr(p, E_INT, e->loc);
    return bad;
}

/* A placeholder for a broken expression, so callers need no NULL checks. */
static Expr *bad_expr(Parser *p)
{
    return new_expr(p, E_INT, peek(p)->loc);
}

/* primary := INT | FLOAT | 'true' | 'false' | 'inf' | NAME | '(' expr ')' | '[' [expr {',' expr}] ']' */
Expr *fe_parse_primary(Parser *p)
{
    const Token *t = peek(p);
    Expr *e;
    switch (t->kind) {
    case T_INT: e = new_expr(p, E_INT, t->loc); e->ival = t->ival; break;
    case T_FLOAT: e = new_expr(p, E_FLOAT, t->loc); e->fval = t->fval; break;
    case T_TRUE: case T_FALSE:
        e = new_expr(p, E_BOOL, t->loc);
        e->bval = t->kind == T_TRUE;
        break;
    case T_INF: e = new_expr(p, E_INF, t->loc); break;
    case T_IDENT: e = new_expr(p, E_NAME, t->loc); e->name = fe_parse_text(p, t); break;
    case T_LPAREN:
        advance(p);
        e = fe_parse_expr(p);
        fe_parse_expect(p, T_RPAREN);
        return e;
    case T_LBRACK: {   /* a list: reshape(t, [4, 8]) */
        advance(p);
        e = new_expr(p, E_LIST, t->loc);
        PtrVec args = { 0 };
        if (!at(p, T_RBRACK))
            do
                fe_parse_push(p, &args, fe_parse_expr(p));
            while (!p->panic && accept(p, T_COMMA));
        e->args = (Expr **)args.v;
        e->nargs = args.n;
        fe_parse_expect(p, T_RBRACK);
        return grown(p, e);
    }
    default:
        fe_parse_expected(p, "expression");
        return bad_expr(p);
    }
    advance(p);
    return e;
}

/* index_elem := ':' | '*' | expr [':' ['+'] expr]    (before ',' or ']') */
static Expr *parse_index_elem(Parser *p)
{
    const Token *t = peek(p);
    TokKind next = (TokKind)peek_at(p, 1)->kind;
    if ((t->kind == T_COLON || t->kind == T_STAR) && (next == T_COMMA || next == T_RBRACK)) {
        advance(p);
        return new_expr(p, t->kind == T_COLON ? E_FULL : E_NEWAXIS, t->loc);
    }
    if (t->kind == T_RBRACK || t->kind == T_COMMA) {
        fe_parse_expected(p, "index, window `start : +size`, ':' or '*'");
        return bad_expr(p);
    }
    Expr *e = fe_parse_expr(p);
    if (!at(p, T_COLON))
        return e;
    const Token *colon = advance(p);
    Expr *s = new_expr(p, E_SLICE, colon->loc);
    s->a = e;
    if (accept(p, T_PLUS))   /* `a : b` (an end, not a size) is checked by the index's user */
        s->op = T_PLUS;
    s->b = fe_parse_expr(p);
    return grown(p, s);
}

/* index := '[' index_elem {',' index_elem} ']' */
static Expr *parse_index(Parser *p, Expr *base)
{
    const Token *lb = advance(p);
    Expr *e = new_expr(p, E_INDEX, lb->loc);
    e->a = base;
    PtrVec args = { 0 };
    fe_parse_list(p, &args, parse_index_elem, T_RBRACK);
    e->args = (Expr **)args.v;
    e->nargs = args.n;
    return grown(p, e);
}

/* arg := NAME '=' expr | expr */
static Expr *parse_arg(Parser *p)
{
    if (at(p, T_IDENT) && peek_at(p, 1)->kind == T_ASSIGN) {
        const Token *t = advance(p);
        advance(p);
        Expr *e = new_expr(p, E_KWARG, t->loc);
        e->name = fe_parse_text(p, t);
        e->a = fe_parse_expr(p);
        return grown(p, e);
    }
    return fe_parse_expr(p);
}

/* call := NAME '(' [arg {',' arg}] ')' */
static Expr *parse_call(Parser *p, Expr *callee)
{
    const Token *lp = advance(p);
    Expr *e = new_expr(p, E_CALL, callee->loc);
    if (callee->kind != E_NAME)
        fe_parse_error(p, lp, "only a builtin or a dtype name can be called");
    e->name = callee->name;
    PtrVec args = { 0 };
    if (at(p, T_RPAREN))
        advance(p);
    else
        fe_parse_list(p, &args, parse_arg, T_RPAREN);
    e->args = (Expr **)args.v;
    e->nargs = args.n;
    return grown(p, e);
}

/* postfix := primary { '^T' | index | '(' args ')' | '.' NAME } */
static Expr *parse_postfix(Parser *p)
{
    Expr *e = fe_parse_primary(p);
    while (!p->panic) {
        const Token *t = peek(p);
        if (t->kind == T_CARET_T) {
            advance(p);
            Expr *x = new_expr(p, E_TRANSPOSE, t->loc);
            x->a = e;
            e = grown(p, x);
        } else if (t->kind == T_LBRACK) {
            e = parse_index(p, e);
        } else if (t->kind == T_LPAREN) {
            e = parse_call(p, e);
        } else if (t->kind == T_DOT) {
            advance(p);
            Expr *x = new_expr(p, E_MEMBER, t->loc);
            x->a = e;
            if (at(p, T_IDENT))
                x->name = fe_parse_text(p, advance(p));
            else
                fe_parse_expected(p, "field name after '.'");
            e = grown(p, x);
        } else {
            break;
        }
    }
    return e;
}

/* unary := ('-' | '!' | '~') unary | postfix */
static Expr *parse_unary(Parser *p)
{
    const Token *t = peek(p);
    if (t->kind != T_MINUS && t->kind != T_BANG && t->kind != T_TILDE)
        return parse_postfix(p);
    advance(p);
    Expr *e = new_expr(p, E_UNARY, t->loc);
    e->op = t->kind;
    if (!fe_parse_enter(p, "expression"))
        e->a = bad_expr(p);
    else
        e->a = parse_unary(p);
    p->depth--;
    return grown(p, e);
}

/* Binary precedence, 0 = not a binary operator. ORDER: COMMON precedence. */
int fe_bin_prec(TokKind k)
{
    switch (k) {
    case T_OROR: return 1;
    case T_ANDAND: return 2;
    case T_EQ: case T_NE: return 3;
    case T_LT: case T_LE: case T_GT: case T_GE: return 4;
    case T_PIPE: return 5;
    case T_CARET: return 6;
    case T_AMP: return 7;
    case T_SHL: case T_SHR: return 8;
    case T_PLUS: case T_MINUS: return 9;
    case T_STAR: case T_SLASH: case T_PERCENT: case T_AT: return 10;
    default: return 0;
    }
}

/* binary := unary { BINOP unary }   (precedence climbing, left assoc.,
 * operators of precedence >= min only) */
Expr *fe_parse_binary(Parser *p, int min)
{
    Expr *lhs = parse_unary(p);
    for (;;) {
        const Token *t = peek(p);
        int prec = fe_bin_prec((TokKind)t->kind);
        if (p->panic || prec == 0 || prec < min)
            return lhs;
        advance(p);
        Expr *e = new_expr(p, E_BINARY, t->loc);
        e->op = t->kind;
        e->a = lhs;
        e->b = fe_parse_binary(p, prec + 1);
        lhs = grown(p, e);
    }
}

/* expr := binary ['?' expr ':' expr]   (right assoc.) */
Expr *fe_parse_expr(Parser *p)
{
    if (!fe_parse_enter(p, "expression")) {
        p->depth--;
        return bad_expr(p);
    }
    Expr *c = fe_parse_binary(p, 1);
    if (!p->panic && at(p, T_QUESTION)) {
        const Token *q = advance(p);
        Expr *e = new_expr(p, E_TERNARY, q->loc);
        e->a = c;
        e->b = fe_parse_expr(p);
        if (!p->panic)
            fe_parse_expect(p, T_COLON);
        e->c = fe_parse_expr(p);
        c = grown(p, e);
    }
    p->depth--;
    return c;
}
