/* sched_int.h - the state of the interpreter's schedule, shared by
 * interp_sched.c (barriers, TMA, asynchronous products, dispatch),
 * interp_tmem.c (tensor memory, tcgen05 products) and interp_roles.c (WS
 * roles as coroutines, the scheduler, deadlocks). interp_sched.c's header
 * describes the model. */
#ifndef TILEC_SCHED_INT_H
#define TILEC_SCHED_INT_H

#include "interp_int.h"

/* Clock entries: one per role, MAIN (the code outside ws), and one lane
 * per role for the completions of its tcgen05 products (sched_lane): a
 * TC_COMMIT's arrival publishes its lane, and a role learns it only by
 * observing such an arrival (directly or through others), never from its
 * own issue or a plain arrive after it. */
enum { MAIN = WS_MAXROLES, LANES = WS_MAXROLES + 1, NCLK = 2 * WS_MAXROLES + 1, MAX_FRAMES = 64 };
static inline int sched_lane(int r) { return LANES + r; }
enum { RUN_OK = 0, RUN_ERR = 1, RUN_BLOCKED = 2 };
enum { FILL_NONE = 0, FILL_FLYING, FILL_LANDED };
#define READ_FLYING INT64_MAX

typedef struct VClock { int64_t c[NCLK]; } VClock;

typedef struct MBar {
    int64_t count;              /* arrivals per phase */
    int64_t pending;            /* arrivals still missing in the current phase */
    int64_t tx;                 /* bytes declared minus bytes landed, current phase */
    int64_t expected, issued;   /* bytes declared by expects / carried by copies issued, current phase */
    int64_t phase;              /* phases completed */
    int inflight;               /* copies issued against it, not landed */
    VClock clock, done;         /* arrivals of the current phase; of the last completed one */
    int64_t seen[NCLK];         /* per role: phases its waits have observed completed */
    bool waited[NCLK];          /* per role: a wait of it has passed */
    int64_t exp_phase[NCLK];    /* per role: the phase of its last MBAR_EXPECT + 1 (0 = none) */
    Loc expect_loc;             /* the current phase's last MBAR_EXPECT */
    int64_t prev_expected;      /* bytes declared for the last completed phase, and where */
    Loc prev_loc;
} MBar;

typedef struct Fill {
    int state;                  /* FILL_* */
    ValId ring;
    int64_t rslot, phase;       /* the barrier phase the copy completes */
    int64_t reader[NCLK];       /* per role: the clock entry whose publication releases its reads
                                 * (0 = none, READ_FLYING = a product still reads it) */
    Loc read_loc[NCLK];
} Fill;

typedef struct Product {
    int role;
    bool done, retired;
    ValId acc;                  /* locked until retired */
    Elem *val;                  /* a @ b + acc, computed at issue */
    ValId rbuf[2];
    int64_t rslot[2];
    Loc loc;
} Product;

/* Tensor memory: written by a role's TC_MMAs, readable once a TC_COMMIT
 * after the last of them published the writer's clock. */
typedef struct Tmem {
    bool written;               /* by a product or a store */
    int writer;                 /* the role whose products wrote it last (-1: none since the last store) */
    bool uncommitted;           /* a product wrote it since that role's last TC_COMMIT */
    int64_t ready;              /* the writer's lane entry its TC_COMMIT published */
    Loc loc;                    /* the last TC_MMA into it */
    int reader;                 /* the role whose products read it (an A operand) last, or -1 */
    bool read_open;             /* such a read since that role's last TC_COMMIT */
    int64_t read_done;          /* the reader's lane entry that commit published */
    Loc rloc;
    int toucher;                /* the role that loaded or stored it last, or -1 */
    bool stored;                /* that access was a TMEM_STORE */
    int64_t touched;            /* the toucher's clock entry its next arrival publishes */
    Loc tloc;
} Tmem;

/* A slot a TC_MMA reads until the role's next TC_COMMIT. */
typedef struct TcRead { int role; ValId buf; int64_t slot; } TcRead;

typedef struct Copy {
    ValId buf, ring;
    int64_t slot, rslot, n, bytes;
    Elem *data;
} Copy;

typedef struct NBar {
    int64_t threads, arrived, gen;
    VClock clock, done;
    Loc loc;
} NBar;

typedef struct Frame {
    const Block *b;
    int pc;
    const Op *op;               /* the FOR / IF owning the block; NULL = the role's region */
    int64_t iv, hi, step;
} Frame;

typedef struct Role {
    Frame fr[MAX_FRAMES];
    int depth;
    bool done;
    int64_t nb_gen;             /* NAMED_BAR sync: generation it arrived in, -1 = none */
    int64_t threads;
} Role;

struct Sched {
    VClock vc[NCLK];
    int cur;                    /* the role running (MAIN outside WS) */
    Role *roles;
    int nroles;
    const Op *ws;
    Product *prod;
    int nprod, capprod;
    int pfirst;                 /* products before it are all complete */
    Copy *copy;
    int ncopy, capcopy;
    ValId *rings;
    int nrings, caprings;
    NBar nb[NAMED_BAR_IDS];
    bool *tma_buf;              /* per value: a TMA_LOAD fills this buffer */
    TcRead *tcread;             /* slots read by TC_MMAs not yet committed */
    int ntcread, captcread;
    ValId *tmems;               /* TMEM_ALLOC results */
    int ntmem, captmem;
    int64_t commits[WS_MAXROLES];   /* per role: TC_COMMITs issued (its lane's clock) */
    uint64_t rng;
    int *ids;                   /* sched_completions' result */
    int capids;
};

static inline void sched_vc_join(VClock *a, const VClock *b)
{
    for (int i = 0; i < NCLK; i++)
        if (b->c[i] > a->c[i])
            a->c[i] = b->c[i];
}

/* interp_sched.c */
Sched *sched_get(Interp *I);               /* made on first use, per block */
const char *sched_role_desc(Interp *I, int r);
int sched_flying(Sched *S, int r);         /* role r's products in flight */
/* Completions possible now, into S->ids (copy k as k, product i as
 * -(i + 1)); returns how many. */
int sched_completions(Interp *I);
int sched_complete(Interp *I, int id);
int sched_complete_first(Interp *I, bool *any);   /* *any = false: nothing in flight */
/* Appends v to a growing list of values (rings, tensor memories). */
void sched_val_push(Interp *I, ValId **list, int *n, int *cap, ValId v);
/* The barrier slot named by operands i (ring) and i + 1 (slot), its index
 * in *slot (slot may be NULL); NULL after reporting. */
MBar *sched_mbar_at(Interp *I, const Op *op, int i, int64_t *slot);
Fill *sched_fills(Interp *I, ValId buf);   /* buf's per-slot fill state, made on first use */
/* An arrival of the running role; extra (may be NULL): a clock the arrival
 * publishes beside the role's own (a commit's lane). */
int sched_mbar_arrive_with(Interp *I, const Op *op, MBar *m, int64_t slot, VClock *extra);

/* interp_tmem.c: TMEM_ALLOC, TC_MMA, TC_COMMIT, TMEM_LOAD, TMEM_STORE (RUN_*) */
int sched_exec_tmem_alloc(Interp *I, const Op *op);
int sched_exec_tc_mma(Interp *I, const Op *op);
int sched_exec_tc_commit(Interp *I, const Op *op);
int sched_exec_tmem_load(Interp *I, const Op *op);
int sched_exec_tmem_store(Interp *I, const Op *op);

/* interp_roles.c */
int sched_run_ws(Interp *I, const Op *ws);

#endif
