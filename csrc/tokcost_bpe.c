/* The BPE trainer's merge loop in C: the same merges, in the same order, as the pure-Python
 * loop in tokcost/bpe/train.py (_merge), which stays the reference and the fallback when this
 * module is not built. Python keeps the vocabulary (one callback per merge); C keeps the words,
 * the pair counts, the words holding each pair and the queue.
 *
 * Order (HF tokenizers trainer.rs, `impl Ord for Merge`): the highest count first, ties to the
 * smaller (left id, right id); entries of one pair (HF's queue holds several) by age, as the
 * Python heap's sequence number orders them. Counts are int64: train.py calls this only when
 * no pair count can pass 2^62. */
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    int32_t *v;
    Py_ssize_t n, cap;
} IntVec;

static int vec_push(IntVec *l, int32_t x) {
    if (l->n == l->cap) {
        Py_ssize_t cap = l->cap ? l->cap * 2 : 4;
        int32_t *p = PyMem_RawRealloc(l->v, sizeof(int32_t) * (size_t)cap);
        if (p == NULL) return -1;
        l->v = p;
        l->cap = cap;
    }
    l->v[l->n++] = x;
    return 0;
}

/* ---- pair table: open addressing, linear probing; a pair is (left << 32 | right) ---- */
#define EMPTY UINT64_MAX

typedef struct {
    uint64_t key;
    int64_t count;
    int32_t aux; /* index into the current merge's list of added pairs, or -1 */
} Slot;

typedef struct {
    Slot *slots;
    size_t mask, used;
} Table;

static inline size_t hash_key(uint64_t key) {
    key ^= key >> 29;
    key *= 0x9E3779B97F4A7C15ULL;
    return (size_t)(key ^ (key >> 32));
}

static int table_init(Table *t, size_t want) {
    size_t cap = 1024;
    while (cap < want * 2) cap <<= 1;
    t->slots = PyMem_RawMalloc(sizeof(Slot) * cap);
    if (t->slots == NULL) return -1;
    for (size_t i = 0; i < cap; i++) {
        t->slots[i].key = EMPTY;
        t->slots[i].count = 0;
        t->slots[i].aux = -1;
    }
    t->mask = cap - 1;
    t->used = 0;
    return 0;
}

static int table_grow(Table *t) {
    Slot *old = t->slots;
    size_t old_cap = t->mask + 1;
    if (table_init(t, old_cap) < 0) { /* want = old_cap: doubles the capacity */
        t->slots = old;
        t->mask = old_cap - 1;
        return -1;
    }
    for (size_t i = 0; i < old_cap; i++) {
        if (old[i].key == EMPTY) continue;
        size_t j = hash_key(old[i].key) & t->mask;
        while (t->slots[j].key != EMPTY) j = (j + 1) & t->mask;
        t->slots[j] = old[i];
        t->used++;
    }
    PyMem_RawFree(old);
    return 0;
}

/* The slot of `key`, made (count 0) when absent; NULL when out of memory. */
static Slot *table_get(Table *t, uint64_t key) {
    size_t j = hash_key(key) & t->mask;
    for (;;) {
        Slot *s = &t->slots[j];
        if (s->key == key) return s;
        if (s->key == EMPTY) break;
        j = (j + 1) & t->mask;
    }
    if ((t->used + 1) * 10 > (t->mask + 1) * 7) {
        if (table_grow(t) < 0) return NULL;
        return table_get(t, key);
    }
    Slot *s = &t->slots[j];
    s->key = key;
    s->count = 0;
    s->aux = -1;
    t->used++;
    return s;
}

/* ---- the queue: a binary max-heap of (count, pair, seq, words holding the pair) ---- */
typedef struct {
    int64_t count;
    uint64_t key;
    uint64_t seq;
    IntVec pos;
} Entry;

typedef struct {
    Entry *e;
    Py_ssize_t n, cap;
} Heap;

static inline int before(const Entry *x, const Entry *y) {
    if (x->count != y->count) return x->count > y->count;
    if (x->key != y->key) return x->key < y->key;
    return x->seq < y->seq;
}

static void sift_down(Heap *h, Py_ssize_t i) {
    Entry item = h->e[i];
    for (;;) {
        Py_ssize_t c = 2 * i + 1;
        if (c >= h->n) break;
        if (c + 1 < h->n && before(&h->e[c + 1], &h->e[c])) c++;
        if (!before(&h->e[c], &item)) break;
        h->e[i] = h->e[c];
        i = c;
    }
    h->e[i] = item;
}

static int heap_push(Heap *h, Entry item) {
    if (h->n == h->cap) {
        Py_ssize_t cap = h->cap ? h->cap * 2 : 1024;
        Entry *p = PyMem_RawRealloc(h->e, sizeof(Entry) * (size_t)cap);
        if (p == NULL) return -1;
        h->e = p;
        h->cap = cap;
    }
    Py_ssize_t i = h->n++;
    while (i > 0) {
        Py_ssize_t parent = (i - 1) / 2;
        if (!before(&item, &h->e[parent])) break;
        h->e[i] = h->e[parent];
        i = parent;
    }
    h->e[i] = item;
    return 0;
}

static void heap_free(Heap *h) {
    for (Py_ssize_t i = 0; i < h->n; i++) PyMem_RawFree(h->e[i].pos.v);
    PyMem_RawFree(h->e);
}

/* ---- the pairs one merge added: their word lists, in the order first added ---- */
typedef struct {
    uint64_t key;
    IntVec pos;
} Added;

typedef struct {
    Added *a;
    Py_ssize_t n, cap;
} AddedList;

/* Count `c` more of pair (x, y) and, when `iw` >= 0, note word iw as holding it. */
static int bump(Table *t, AddedList *added, uint64_t key, int64_t c, int32_t iw) {
    Slot *s = table_get(t, key);
    if (s == NULL) return -1;
    s->count += c;
    if (iw < 0) return 0;
    if (s->aux < 0) {
        if (added->n == added->cap) {
            Py_ssize_t cap = added->cap ? added->cap * 2 : 64;
            Added *p = PyMem_RawRealloc(added->a, sizeof(Added) * (size_t)cap);
            if (p == NULL) return -1;
            added->a = p;
            added->cap = cap;
        }
        s->aux = (int32_t)added->n;
        added->a[added->n].key = key;
        added->a[added->n].pos = (IntVec){NULL, 0, 0};
        added->n++;
    }
    IntVec *l = &added->a[s->aux].pos;
    if (l->n == 0 || l->v[l->n - 1] != iw) return vec_push(l, iw);
    return 0;
}

#define PAIR(x, y) (((uint64_t)(uint32_t)(x) << 32) | (uint32_t)(y))

typedef struct {
    int32_t *sym;       /* every word's symbols, end to end, rewritten in place */
    const int64_t *start;
    int32_t *len;
    const int64_t *counts;
    Py_ssize_t n_words;
    int32_t *tlen;      /* token length (byte-level characters) by id */
    Py_ssize_t tlen_cap;
    int64_t max_len;    /* 0: no limit */
} Corpus;

/* Merge (a, b) into r in each word of `pos`, updating counts and noting added pairs. */
static int apply_merge(Corpus *cp, Table *t, AddedList *added, const IntVec *pos,
                       int32_t a, int32_t b, int32_t r) {
    int64_t r_len = cp->tlen[r], max_len = cp->max_len;
    for (Py_ssize_t k = 0; k < pos->n; k++) {
        int32_t iw = pos->v[k];
        int32_t *w = cp->sym + cp->start[iw];
        int32_t L = cp->len[iw], i = 0, j = 0;
        int64_t c = cp->counts[iw];
        while (i < L) {
            if (w[i] == a && i + 1 < L && w[i + 1] == b) {
                if (j > 0) { /* w[j - 1]: r when an occurrence ended here, as in the Python */
                    int32_t prev = w[j - 1];
                    if (bump(t, added, PAIR(prev, a), -c, -1) < 0) return -1;
                    if (max_len == 0 || cp->tlen[prev] + r_len <= max_len)
                        if (bump(t, added, PAIR(prev, r), c, iw) < 0) return -1;
                }
                if (i + 2 < L) {
                    int32_t nxt = w[i + 2];
                    if (bump(t, added, PAIR(b, nxt), -c, -1) < 0) return -1;
                    if (max_len == 0 || cp->tlen[nxt] + r_len <= max_len)
                        if (bump(t, added, PAIR(r, nxt), c, iw) < 0) return -1;
                }
                w[j++] = r;
                i += 2;
            } else {
                w[j++] = w[i++];
            }
        }
        cp->len[iw] = j;
    }
    return 0;
}

/* Every pair's count and the words holding it, as heap entries. */
static int initial_pairs(Corpus *cp, Table *t, Heap *h) {
    AddedList all = {NULL, 0, 0};
    for (Py_ssize_t iw = 0; iw < cp->n_words; iw++) {
        const int32_t *w = cp->sym + cp->start[iw];
        for (int32_t i = 0; i + 1 < cp->len[iw]; i++)
            if (bump(t, &all, PAIR(w[i], w[i + 1]), cp->counts[iw], (int32_t)iw) < 0) goto fail;
    }
    for (Py_ssize_t k = 0; k < all.n; k++) {
        Slot *s = table_get(t, all.a[k].key);
        s->aux = -1;
        Entry e = {s->count, all.a[k].key, (uint64_t)k, all.a[k].pos};
        all.a[k].pos.v = NULL;
        if (heap_push(h, e) < 0) {
            PyMem_RawFree(e.pos.v);
            goto fail;
        }
    }
    PyMem_RawFree(all.a);
    return 0;
fail:
    for (Py_ssize_t k = 0; k < all.n; k++) PyMem_RawFree(all.a[k].pos.v);
    PyMem_RawFree(all.a);
    return -1;
}

static int set_tlen(Corpus *cp, Py_ssize_t id, int32_t value) {
    if (id >= cp->tlen_cap) {
        Py_ssize_t cap = cp->tlen_cap * 2 > id + 1 ? cp->tlen_cap * 2 : id + 1;
        int32_t *p = PyMem_RawRealloc(cp->tlen, sizeof(int32_t) * (size_t)cap);
        if (p == NULL) return -1;
        cp->tlen = p;
        cp->tlen_cap = cap;
    }
    cp->tlen[id] = value;
    return 0;
}

/* The loop of train.py's _merge; returns 1 when the pairs ran out, 0 when the vocabulary
 * filled, -1 with an exception set. */
static int run(Corpus *cp, Table *t, Heap *h, PyObject *intern, Py_ssize_t n_keys,
               Py_ssize_t vocab_size, int64_t min_freq) {
    uint64_t seq = (uint64_t)h->n;
    AddedList added = {NULL, 0, 0};
    int result = 0;
    while (n_keys < vocab_size) {
        if (h->n == 0) { result = 1; break; }
        Entry *top = &h->e[0];
        int64_t cur = table_get(t, top->key)->count;
        if (top->count != cur) { /* stale: re-queued at its count, as heapreplace */
            top->count = cur;
            top->seq = seq++;
            sift_down(h, 0);
            continue;
        }
        Entry e = h->e[0];
        h->e[0] = h->e[--h->n];
        if (h->n) sift_down(h, 0);
        if (cur < 1 || cur < min_freq) {
            PyMem_RawFree(e.pos.v);
            result = 1;
            break;
        }
        int32_t a = (int32_t)(e.key >> 32), b = (int32_t)(e.key & 0xFFFFFFFFu);
        PyObject *got = PyObject_CallFunction(intern, "ii", a, b);
        long r = got == NULL ? -1 : PyLong_AsLong(got);
        Py_XDECREF(got);
        if (r < 0 || r > 0x10FFFF) {
            if (!PyErr_Occurred()) PyErr_SetString(PyExc_ValueError, "bad token id from intern");
            PyMem_RawFree(e.pos.v);
            result = -1;
            break;
        }
        if (r >= n_keys) {
            n_keys = r + 1;
            if (set_tlen(cp, r, cp->tlen[a] + cp->tlen[b]) < 0) {
                PyMem_RawFree(e.pos.v);
                PyErr_NoMemory();
                result = -1;
                break;
            }
        }
        added.n = 0;
        int failed = apply_merge(cp, t, &added, &e.pos, a, b, (int32_t)r);
        PyMem_RawFree(e.pos.v);
        for (Py_ssize_t k = 0; k < added.n; k++) {
            Slot *s = table_get(t, added.a[k].key);
            s->aux = -1;
            Entry ne = {s->count, added.a[k].key, 0, added.a[k].pos};
            if (failed || ne.count <= 0) {
                PyMem_RawFree(ne.pos.v);
                continue;
            }
            ne.seq = seq++;
            if (heap_push(h, ne) < 0) {
                PyMem_RawFree(ne.pos.v);
                failed = 1;
            }
        }
        if (failed) {
            PyErr_NoMemory();
            result = -1;
            break;
        }
    }
    PyMem_RawFree(added.a);
    return result;
}

static int get_buffer(PyObject *obj, Py_buffer *view, Py_ssize_t item, int writable,
                      const char *what) {
    if (PyObject_GetBuffer(obj, view, writable ? PyBUF_WRITABLE : PyBUF_SIMPLE) < 0) return -1;
    if (view->len % item) {
        PyErr_Format(PyExc_ValueError, "%s: %zd bytes is not a whole number of items",
                     what, view->len);
        PyBuffer_Release(view);
        return -1;
    }
    return 0;
}

PyDoc_STRVAR(merge_doc,
"merge(symbols, starts, lengths, counts, token_lengths, n_keys, vocab_size, max_len,\n"
"      min_freq, intern) -> bool\n\n"
"Learn merges until the vocabulary holds vocab_size tokens; True when the pairs ran out\n"
"first. symbols (int32, writable), starts (int64), lengths (int32, writable), counts\n"
"(int64) describe the words; token_lengths (int32) the n_keys tokens. intern(left, right)\n"
"is called once per merge, in order, and returns the id of the token it makes.");

static PyObject *merge(PyObject *self, PyObject *args) {
    (void)self;
    PyObject *o_sym, *o_start, *o_len, *o_counts, *o_tlen, *intern;
    Py_ssize_t n_keys, vocab_size;
    long long max_len, min_freq;
    if (!PyArg_ParseTuple(args, "OOOOOnnLLO:merge", &o_sym, &o_start, &o_len, &o_counts,
                          &o_tlen, &n_keys, &vocab_size, &max_len, &min_freq, &intern))
        return NULL;
    if (!PyCallable_Check(intern)) {
        PyErr_SetString(PyExc_TypeError, "intern must be callable");
        return NULL;
    }
    Py_buffer b_sym, b_start, b_len, b_counts, b_tlen;
    int have = 0, status = -1;
    Table t = {NULL, 0, 0};
    Heap h = {NULL, 0, 0};
    Corpus cp = {0};
    if (get_buffer(o_sym, &b_sym, 4, 1, "symbols") < 0) goto done;
    have = 1;
    if (get_buffer(o_start, &b_start, 8, 0, "starts") < 0) goto done;
    have = 2;
    if (get_buffer(o_len, &b_len, 4, 1, "lengths") < 0) goto done;
    have = 3;
    if (get_buffer(o_counts, &b_counts, 8, 0, "counts") < 0) goto done;
    have = 4;
    if (get_buffer(o_tlen, &b_tlen, 4, 0, "token_lengths") < 0) goto done;
    have = 5;
    Py_ssize_t n_words = b_len.len / 4;
    if (b_start.len / 8 != n_words || b_counts.len / 8 != n_words || b_tlen.len / 4 != n_keys) {
        PyErr_SetString(PyExc_ValueError, "starts, lengths and counts must have one item per "
                        "word, token_lengths one per token");
        goto done;
    }
    cp.sym = b_sym.buf;
    cp.start = b_start.buf;
    cp.len = b_len.buf;
    cp.counts = b_counts.buf;
    cp.n_words = n_words;
    cp.max_len = max_len;
    int64_t n_sym = b_sym.len / 4;
    for (Py_ssize_t iw = 0; iw < n_words; iw++) { /* every word inside the symbols */
        if (cp.start[iw] < 0 || cp.len[iw] < 0 || cp.start[iw] + cp.len[iw] > n_sym) {
            PyErr_SetString(PyExc_ValueError, "a word lies outside the symbols");
            goto done;
        }
    }
    for (int64_t i = 0; i < n_sym; i++) {
        if (cp.sym[i] < 0 || cp.sym[i] >= n_keys) {
            PyErr_SetString(PyExc_ValueError, "a symbol is not a token id");
            goto done;
        }
    }
    cp.tlen_cap = n_keys > 16 ? n_keys : 16;
    cp.tlen = PyMem_RawMalloc(sizeof(int32_t) * (size_t)cp.tlen_cap);
    if (cp.tlen == NULL || table_init(&t, (size_t)(n_sym / 4 + 1)) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    memcpy(cp.tlen, b_tlen.buf, sizeof(int32_t) * (size_t)n_keys);
    if (initial_pairs(&cp, &t, &h) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    status = run(&cp, &t, &h, intern, n_keys, vocab_size, min_freq);
done:
    heap_free(&h);
    PyMem_RawFree(t.slots);
    PyMem_RawFree(cp.tlen);
    if (have >= 5) PyBuffer_Release(&b_tlen);
    if (have >= 4) PyBuffer_Release(&b_counts);
    if (have >= 3) PyBuffer_Release(&b_len);
    if (have >= 2) PyBuffer_Release(&b_start);
    if (have >= 1) PyBuffer_Release(&b_sym);
    if (status < 0) return NULL;
    return PyBool_FromLong(status);
}


/* ======================= pre-tokenization of ASCII lines ======================= */
/* The three named split patterns (tokcost/adapters/openai_encodings.py) written out as
 * code, for lines of ASCII text; a line holding any other byte goes back to Python, whose
 * `regex` splitter stays the reference (the tests compare the two). Character classes come
 * from Python, which asks `regex` itself, so \s and \p{...} mean here what they mean there. */

enum { CL_L = 1, CL_N = 2, CL_S = 4, CL_U = 8, CL_W = 16 };
enum { PAT_GPT2 = 0, PAT_CL100K = 1, PAT_O200K = 2 };

typedef struct {
    const uint8_t *s;
    Py_ssize_t end;
    const uint8_t *cls; /* 128 entries */
} Line;

#define HAS(ln, i, f) ((ln)->cls[(ln)->s[(i)]] & (f))
#define OTHER(ln, i) (!HAS(ln, i, CL_S | CL_L | CL_N))
#define CRLF(c) ((c) == '\r' || (c) == '\n')

static inline Py_ssize_t run_of(const Line *ln, Py_ssize_t i, int f) {
    while (i < ln->end && HAS(ln, i, f)) i++;
    return i;
}

static inline Py_ssize_t run_other(const Line *ln, Py_ssize_t i) {
    while (i < ln->end && OTHER(ln, i)) i++;
    return i;
}

/* 's 't 're 've 'm 'll 'd at i (s[i] == '\''): its end, or 0. */
static Py_ssize_t contraction(const Line *ln, Py_ssize_t i, int icase) {
    if (i + 1 >= ln->end || ln->s[i] != '\'') return 0;
    uint8_t c = ln->s[i + 1];
    if (icase && c >= 'A' && c <= 'Z') c |= 0x20;
    if (c == 's' || c == 't' || c == 'm' || c == 'd') return i + 2;
    if (i + 2 >= ln->end) return 0;
    uint8_t d = ln->s[i + 2];
    if (icase && d >= 'A' && d <= 'Z') d |= 0x20;
    if ((c == 'r' && d == 'e') || (c == 'v' && d == 'e') || (c == 'l' && d == 'l')) return i + 3;
    return 0;
}

/* A whitespace run at i: the alternatives after the letter/number/other ones. */
static Py_ssize_t spaces(const Line *ln, Py_ssize_t i, int pattern) {
    Py_ssize_t k = run_of(ln, i, CL_S);
    if (k == ln->end && pattern != PAT_O200K) return k; /* \s++$ */
    if (pattern != PAT_GPT2) { /* \s*[\r\n] (cl100k), \s*[\r\n]+ (o200k): to the last break */
        for (Py_ssize_t p = k - 1; p >= i; p--)
            if (CRLF(ln->s[p])) return p + 1;
    }
    if (k == ln->end) return k;       /* \s+(?!\S) at the end (o200k) */
    return k - i >= 2 ? k - 1 : k;    /* \s+(?!\S), else one \s (\s+ of one) */
}

static Py_ssize_t next_gpt2(const Line *ln, Py_ssize_t i) {
    Py_ssize_t k = contraction(ln, i, 0);
    if (k) return k;
    Py_ssize_t j = ln->s[i] == ' ' && i + 1 < ln->end ? i + 1 : i;
    for (int pass = 0; pass < 2; pass++, j = i) { /* with the optional space, then without */
        if (HAS(ln, j, CL_L)) return run_of(ln, j, CL_L);
        if (HAS(ln, j, CL_N)) return run_of(ln, j, CL_N);
        if (OTHER(ln, j)) return run_other(ln, j);
        if (j == i) break;
    }
    return spaces(ln, i, PAT_GPT2);
}

static Py_ssize_t next_cl100k(const Line *ln, Py_ssize_t i) {
    Py_ssize_t k = contraction(ln, i, 1);
    if (k) return k;
    uint8_t c = ln->s[i];
    /* [^\r\n\p{L}\p{N}]?+\p{L}++ */
    if (HAS(ln, i, CL_L)) return run_of(ln, i, CL_L);
    if (!HAS(ln, i, CL_N) && !CRLF(c)) {
        if (i + 1 < ln->end && HAS(ln, i + 1, CL_L)) return run_of(ln, i + 1, CL_L);
    }
    if (HAS(ln, i, CL_N)) { /* \p{N}{1,3}+ */
        k = i + 1;
        while (k < ln->end && k < i + 3 && HAS(ln, k, CL_N)) k++;
        return k;
    }
    Py_ssize_t j = c == ' ' && i + 1 < ln->end && OTHER(ln, i + 1) ? i + 1 : i;
    if (OTHER(ln, j)) { /* ' ?[^\s\p{L}\p{N}]++[\r\n]*+' */
        k = run_other(ln, j);
        while (k < ln->end && CRLF(ln->s[k])) k++;
        return k;
    }
    return spaces(ln, i, PAT_CL100K);
}

/* o200k's letters: [^\r\n\p{L}\p{N}]?, then [Lu Lt Lm Lo M]* [Ll Lm Lo M]+ or [..]+ [..]*,
 * then an optional contraction (any case). 0 when neither matches at i. */
static Py_ssize_t letters_o200k(const Line *ln, Py_ssize_t i) {
    uint8_t c = ln->s[i];
    Py_ssize_t j = i;
    if (!HAS(ln, i, CL_L | CL_N) && !CRLF(c)) {
        if (!(i + 1 < ln->end && HAS(ln, i + 1, CL_L))) return 0;
        j = i + 1; /* without the prefix, a non-letter at i matches neither */
    } else if (!HAS(ln, i, CL_L)) {
        return 0;
    }
    /* ASCII letters are upper or lower, never both: the greedy runs need no backtracking */
    Py_ssize_t u = run_of(ln, j, CL_U);
    Py_ssize_t w = run_of(ln, u, CL_W);
    if (w == u && u == j) return 0;
    Py_ssize_t k = contraction(ln, w, 1);
    return k ? k : w;
}

static Py_ssize_t next_o200k(const Line *ln, Py_ssize_t i) {
    Py_ssize_t k = letters_o200k(ln, i);
    if (k) return k;
    uint8_t c = ln->s[i];
    if (HAS(ln, i, CL_N)) {
        k = i + 1;
        while (k < ln->end && k < i + 3 && HAS(ln, k, CL_N)) k++;
        return k;
    }
    Py_ssize_t j = c == ' ' && i + 1 < ln->end && OTHER(ln, i + 1) ? i + 1 : i;
    if (OTHER(ln, j)) { /* ' ?[^\s\p{L}\p{N}]+[\r\n/]*' */
        k = run_other(ln, j);
        while (k < ln->end && (CRLF(ln->s[k]) || ln->s[k] == '/')) k++;
        return k;
    }
    return spaces(ln, i, PAT_O200K);
}

/* ---- a table of byte strings (pointing into the caller's buffer) and their counts ---- */
typedef struct {
    const uint8_t *p;
    Py_ssize_t len;
    uint64_t hash;
    int64_t count;
} Word;

typedef struct {
    Word *w;
    size_t mask, used;
} WordTable;

static inline uint64_t hash_bytes(const uint8_t *p, Py_ssize_t n) {
    uint64_t h = 0xcbf29ce484222325ULL; /* FNV-1a */
    for (Py_ssize_t i = 0; i < n; i++) h = (h ^ p[i]) * 0x100000001b3ULL;
    return h ^ (h >> 31);
}

static int words_init(WordTable *t, size_t cap) {
    t->w = PyMem_RawCalloc(cap, sizeof(Word));
    if (t->w == NULL) return -1;
    t->mask = cap - 1;
    t->used = 0;
    return 0;
}

static int words_add(WordTable *t, const uint8_t *p, Py_ssize_t n) {
    uint64_t h = hash_bytes(p, n);
    size_t j = (size_t)h & t->mask;
    for (;;) {
        Word *w = &t->w[j];
        if (w->p == NULL) break;
        if (w->hash == h && w->len == n && memcmp(w->p, p, (size_t)n) == 0) {
            w->count++;
            return 0;
        }
        j = (j + 1) & t->mask;
    }
    t->w[j] = (Word){p, n, h, 1};
    if (++t->used * 10 > (t->mask + 1) * 7) { /* grow: rehash into twice the room */
        WordTable big;
        if (words_init(&big, (t->mask + 1) * 2) < 0) return -1;
        for (size_t i = 0; i <= t->mask; i++) {
            if (t->w[i].p == NULL) continue;
            size_t k = (size_t)t->w[i].hash & big.mask;
            while (big.w[k].p != NULL) k = (k + 1) & big.mask;
            big.w[k] = t->w[i];
        }
        big.used = t->used;
        PyMem_RawFree(t->w);
        *t = big;
    }
    return 0;
}

/* Add the table to the dict `counts` (str -> int), as Counter.update would. */
static int words_emit(const WordTable *t, PyObject *counts) {
    for (size_t i = 0; i <= t->mask; i++) {
        const Word *w = &t->w[i];
        if (w->p == NULL) continue;
        PyObject *key = PyUnicode_DecodeASCII((const char *)w->p, w->len, NULL);
        if (key == NULL) return -1;
        PyObject *old = PyDict_GetItemWithError(counts, key);
        PyObject *sum = NULL;
        if (old != NULL) {
            PyObject *add = PyLong_FromLongLong(w->count);
            sum = add == NULL ? NULL : PyNumber_Add(old, add);
            Py_XDECREF(add);
        } else if (!PyErr_Occurred()) {
            sum = PyLong_FromLongLong(w->count);
        }
        int rc = sum == NULL ? -1 : PyDict_SetItem(counts, key, sum);
        Py_DECREF(key);
        Py_XDECREF(sum);
        if (rc < 0) return -1;
    }
    return 0;
}

PyDoc_STRVAR(count_ascii_doc,
"count_ascii(data, pattern, classes, counts) -> list[tuple[int, int]]\n\n"
"Split each line of `data` (UTF-8 bytes, lines end after b'\\n') that is all ASCII with\n"
"the named pattern (0 gpt2, 1 cl100k, 2 o200k) and add its pre-tokens to the dict `counts`;\n"
"`classes` holds 128 bytes of class bits (1 \\p{L}, 2 \\p{N}, 4 \\s, 8 o200k's upper\n"
"letters, 16 its lower). Returns the (start, end) byte spans of the other lines.");

static PyObject *count_ascii(PyObject *self, PyObject *args) {
    (void)self;
    Py_buffer data, cls;
    int pattern;
    PyObject *counts;
    if (!PyArg_ParseTuple(args, "y*iy*O!:count_ascii", &data, &pattern, &cls, &PyDict_Type,
                          &counts))
        return NULL;
    PyObject *rest = NULL;
    WordTable t = {NULL, 0, 0};
    if (cls.len != 128 || pattern < PAT_GPT2 || pattern > PAT_O200K) {
        PyErr_SetString(PyExc_ValueError, "classes must be 128 bytes and pattern 0, 1 or 2");
        goto done;
    }
    Py_ssize_t (*next)(const Line *, Py_ssize_t) =
        pattern == PAT_GPT2 ? next_gpt2 : pattern == PAT_CL100K ? next_cl100k : next_o200k;
    rest = PyList_New(0);
    if (rest == NULL || words_init(&t, 1 << 14) < 0) goto fail;
    const uint8_t *s = data.buf;
    Py_ssize_t n = data.len, start = 0;
    while (start < n) {
        const uint8_t *nl = memchr(s + start, '\n', (size_t)(n - start));
        Py_ssize_t end = nl == NULL ? n : nl - s + 1, i = start;
        int ascii = 1;
        for (Py_ssize_t p = start; p < end; p++) {
            if (s[p] & 0x80) {
                ascii = 0;
                break;
            }
        }
        if (!ascii) {
            PyObject *span = Py_BuildValue("(nn)", start, end);
            if (span == NULL || PyList_Append(rest, span) < 0) {
                Py_XDECREF(span);
                goto fail;
            }
            Py_DECREF(span);
            start = end;
            continue;
        }
        /* The line alone is the string the pattern sees: s + start up to end. */
        Line ln = {s + start, end - start, cls.buf};
        for (i = 0; i < ln.end;) {
            Py_ssize_t k = next(&ln, i);
            if (words_add(&t, ln.s + i, k - i) < 0) goto nomem;
            i = k;
        }
        start = end;
    }
    if (words_emit(&t, counts) < 0) goto fail;
    goto done;
nomem:
    PyErr_NoMemory();
fail:
    Py_CLEAR(rest);
done:
    PyMem_RawFree(t.w);
    PyBuffer_Release(&data);
    PyBuffer_Release(&cls);
    return rest;
}

static PyMethodDef methods[] = {
    {"merge", merge, METH_VARARGS, merge_doc},
    {"count_ascii", count_ascii, METH_VARARGS, count_ascii_doc},
    {NULL, NULL, 0, NULL},
};

static struct PyModuleDef module = {
    PyModuleDef_HEAD_INIT, "_tokcost_bpe",
    "tokcost's BPE trainer's two hot loops in C: the merges (tokcost/bpe/train.py) and the\n"
    "pre-token counts of ASCII lines (tokcost/bpe/pretokenize.py); pure Python without it.",
    -1, methods, NULL, NULL, NULL, NULL,
};

PyMODINIT_FUNC PyInit__tokcost_bpe(void) { return PyModule_Create(&module); }
