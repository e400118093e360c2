/* Avro datum blocks decoded into columns (the Avro 1.11 spec, "Binary Encoding").
 *
 * The schema arrives compiled into a program by planner_service/metadata/avro_columns.py: nodes of four
 * int32s (type, output slot or -1, a, b) and a table of child node numbers. A record's children are
 * children[a .. a+b), a union's branches likewise; an array's item is node a; a map's key and value are
 * nodes a and b; a fixed's size is a. Leaves and arrays with an output slot append one value per datum to
 * their column: fixed-width values, variable-length bytes (int64 offsets and data), or an array's int64
 * offsets into its items' columns; a union with an output slot records the branch it took (int32). A union writes nulls into the outputs of the branches it did not take,
 * so every column of a record stays aligned. Nothing outside the given blocks is read: a datum that runs
 * past its block, a bad union branch, a negative length or an overlong varint is an error, as is a block
 * whose datums do not end exactly at its end.
 *
 * One more output reduces a map instead of listing it: an array of (int key, long value) records whose
 * output is of kind K_MASK (its node's b: a width in 64-bit words) appends, per datum, a bitmap of the keys
 * in [0, 64 b) whose entries all have the value 0 (a key given twice, once with another value, is not
 * proven). Iceberg's null counts become "which columns this file proves null-free" without a list. */
#include "kernels.h"

enum { T_NULL, T_BOOL, T_INT, T_LONG, T_FLOAT, T_DOUBLE, T_BYTES, T_STRING, T_FIXED, T_RECORD, T_ARRAY, T_MAP,
       T_UNION, T_ENUM, T_COUNT };
enum { K_U8, K_I32, K_I64, K_F32, K_F64, K_BIN, K_LIST, K_MASK, K_COUNT };
#define MAX_DEPTH 64
#define MAX_MASK_WORDS 1024

typedef struct {
    int kind;
    Buf valid;    /* one byte per value, 1 = present */
    Buf values;   /* fixed-width values, or the bytes of variable-length ones */
    Buf offsets;  /* K_BIN: byte offsets; K_LIST: item offsets (int64, length + 1 of them) */
    int64_t length, nulls, items;
    int32_t words;  /* K_MASK: the bitmap's width in 64-bit words */
} Column;

typedef struct {
    const int32_t *nodes;
    Py_ssize_t n_nodes;
    const int32_t *children;
    Py_ssize_t n_children;
    Column *columns;
    uint8_t *live;  /* per node: 1 when it or a node below it has an output slot */
    int32_t *flat;  /* per node without outputs: the varints it is made of when it is only those, else 0 */
    uint8_t *leafy;  /* per node: 1 for a record without outputs whose fields are all leaves */
    const uint8_t *p, *end;
    const char *error;
} Decoder;

static int fail(Decoder *d, const char *message) {
    if (d->error == NULL) d->error = message;
    return -1;
}

static inline int read_long(Decoder *d, int64_t *out) {
    int status = avro_long(&d->p, d->end, out);
    if (status == AVRO_LONG_OK) return 0;
    return fail(d, status == AVRO_LONG_ENDS_EARLY ? "a value runs past the end of its block"
                                                  : "a variable-length integer is longer than 10 bytes");
}

static inline int push_valid(Decoder *d, Column *c, uint8_t present) {
    if (buf_reserve(&c->valid, 1) < 0) return fail(d, "out of memory");
    c->valid.p[c->valid.len++] = (char)present;
    c->length++;
    c->nulls += !present;
    return 0;
}

/* One fixed-width value (of the column's width) from `value`, which holds at least 8 bytes. */
static inline int push_value(Decoder *d, Column *c, const void *value, uint8_t present) {
    Buf *b = &c->values;
    if (buf_reserve(b, 8) < 0) return fail(d, "out of memory");
    switch (c->kind) {
        case K_U8: memcpy(b->p + b->len, value, 1); b->len += 1; break;
        case K_I32: case K_F32: memcpy(b->p + b->len, value, 4); b->len += 4; break;
        default: memcpy(b->p + b->len, value, 8); b->len += 8; break;
    }
    return push_valid(d, c, present);
}

static inline int push_bytes(Decoder *d, Column *c, const uint8_t *data, size_t n, uint8_t present) {
    if (buf_append(&c->values, data, n) < 0 || buf_reserve(&c->offsets, 8) < 0) return fail(d, "out of memory");
    int64_t offset = (int64_t)c->values.len;
    memcpy(c->offsets.p + c->offsets.len, &offset, 8);
    c->offsets.len += 8;
    return push_valid(d, c, present);
}

static int push_list_end(Decoder *d, Column *c, uint8_t present) {
    if (buf_append(&c->offsets, &c->items, 8) < 0) return fail(d, "out of memory");
    return push_valid(d, c, present);
}

/* A K_MASK column's next bitmap, zeroed, or NULL when out of memory. */
static uint64_t *push_mask(Decoder *d, Column *c, uint8_t present) {
    size_t size = (size_t)c->words * 8;
    if (buf_reserve(&c->values, size) < 0) {
        fail(d, "out of memory");
        return NULL;
    }
    uint64_t *mask = (uint64_t *)(c->values.p + c->values.len);
    memset(mask, 0, size);
    c->values.len += size;
    return push_valid(d, c, present) < 0 ? NULL : mask;
}

static const int32_t *node(Decoder *d, int32_t n) { return d->nodes + 4 * (Py_ssize_t)n; }

/* The value of node n is absent (a union took another branch): a null in each of its outputs. */
static int append_null(Decoder *d, int32_t n, int depth) {
    const int32_t *nd = node(d, n);
    int32_t type = nd[0], out = nd[1], a = nd[2], b = nd[3];
    static const uint8_t zeros[8] = {0};
    if (!d->live[n]) return 0;
    if (depth > MAX_DEPTH) return fail(d, "the schema nests too deeply");
    switch (type) {
        case T_RECORD:
        case T_UNION:
            for (int32_t i = 0; i < b; i++)
                if (append_null(d, d->children[a + i], depth + 1) < 0) return -1;
            if (type == T_RECORD || out < 0) return 0;
            return push_value(d, &d->columns[out], zeros, 0);  /* a union's branch number: null */
        case T_NULL:
            return 0;
        default:
            break;
    }
    if (out < 0) return 0;
    Column *c = &d->columns[out];
    if (c->kind == K_BIN) return push_bytes(d, c, zeros, 0, 0);
    if (c->kind == K_LIST) return push_list_end(d, c, 0);
    if (c->kind == K_MASK) return push_mask(d, c, 0) == NULL ? -1 : 0;
    return push_value(d, c, zeros, 0);
}

/* Skipping: a node with no output below it is passed over without decoding its values. */

/* Past k variable-length integers: eight bytes at a time while at least eight remain to pass (a byte
 * without its high bit ends an integer), then byte by byte; `run` counts the bytes of the integer under
 * way, so that one longer than 10 bytes is an error either way. */
static inline int skip_varints(Decoder *d, int64_t k) {
    const uint8_t *p = d->p, *end = d->end;
    int run = 0;
#if defined(__BYTE_ORDER__) && __BYTE_ORDER__ == __ORDER_LITTLE_ENDIAN__
    while (k >= 8 && end - p >= 8) {
        uint64_t word;
        memcpy(&word, p, 8);
        uint64_t stops = ~word & 0x8080808080808080ULL;  /* the high bit of each byte that ends an integer */
        if (stops == 0 || run + (__builtin_ctzll(stops) >> 3) >= 10) break;
        k -= (int64_t)(((stops >> 7) * 0x0101010101010101ULL) >> 56);  /* how many end here */
        run = __builtin_clzll(stops) >> 3;  /* the bytes after the last end */
        p += 8;
    }
#endif
    while (k > 0) {
        if (p >= end) return fail(d, "a value runs past the end of its block");
        if (*p++ & 0x80) {
            if (++run == 10) return fail(d, "a variable-length integer is longer than 10 bytes");
        } else {
            run = 0;
            k--;
        }
    }
    d->p = p;
    return 0;
}

static inline int skip_bytes(Decoder *d, int64_t n) {
    if (n < 0) return fail(d, "a negative length");
    if (n > d->end - d->p) return fail(d, "a value runs past the end of its block");
    d->p += n;
    return 0;
}

/* Past one value of a leaf type (not a record, union, array or map). */
static inline int skip_leaf(Decoder *d, const int32_t *nd) {
    int64_t v;
    switch (nd[0]) {
        case T_NULL:
            return 0;
        case T_INT:
        case T_LONG:
        case T_ENUM:
            return skip_varints(d, 1);
        case T_BOOL:
            return skip_bytes(d, 1);
        case T_FLOAT:
            return skip_bytes(d, 4);
        case T_DOUBLE:
            return skip_bytes(d, 8);
        case T_FIXED:
            return skip_bytes(d, nd[2]);
        default:  /* T_BYTES, T_STRING */
            if (read_long(d, &v) < 0) return -1;
            return skip_bytes(d, v);
    }
}

static int is_leaf(int32_t type) { return type != T_RECORD && type != T_UNION && type != T_ARRAY && type != T_MAP; }

static int skip(Decoder *d, int32_t n, int depth) {
    const int32_t *nd = node(d, n);
    int32_t type = nd[0], a = nd[2], b = nd[3];
    int64_t v;
    if (depth > MAX_DEPTH) return fail(d, "the schema nests too deeply");
    if (d->flat[n]) return skip_varints(d, d->flat[n]);
    if (is_leaf(type)) return skip_leaf(d, nd);
    switch (type) {
        case T_RECORD:
            for (int32_t i = 0; i < b; i++)
                if (skip(d, d->children[a + i], depth + 1) < 0) return -1;
            return 0;
        case T_UNION:
            if (read_long(d, &v) < 0) return -1;
            if (v < 0 || v >= b) return fail(d, "a union branch out of range");
            return skip(d, d->children[a + v], depth + 1);
        case T_ARRAY:
        case T_MAP: {
            int64_t count;
            for (;;) {
                if (read_long(d, &count) < 0) return -1;
                if (count == 0) return 0;
                if (count < 0) {  /* a block that gives its size in bytes: jumped over */
                    int64_t size;
                    if (count == INT64_MIN) return fail(d, "a bad array block count");
                    if (read_long(d, &size) < 0 || skip_bytes(d, size) < 0) return -1;
                    continue;
                }
                if (count > d->end - d->p) return fail(d, "an array is longer than its block");
                if (type == T_ARRAY && d->flat[a]) {
                    if (skip_varints(d, count * d->flat[a]) < 0) return -1;
                    continue;
                }
                if (type == T_ARRAY && d->leafy[a]) {  /* records of leaves (a map's entries): no calls */
                    const int32_t *item = node(d, a), *fields = d->children + item[2];
                    for (int64_t i = 0; i < count; i++)
                        for (int32_t f = 0; f < item[3]; f++)
                            if (skip_leaf(d, node(d, fields[f])) < 0) return -1;
                    continue;
                }
                for (int64_t i = 0; i < count; i++) {
                    if (type == T_MAP && skip(d, a, depth + 1) < 0) return -1;
                    if (skip(d, type == T_MAP ? b : a, depth + 1) < 0) return -1;
                }
            }
        }
        default:
            return fail(d, "a bad program node");
    }
}

/* d->live and d->flat for every node (the program is checked): to a fixed point, as nodes may refer to
 * nodes after them. */
static int analyse(Decoder *d) {
    Py_ssize_t n_nodes = d->n_nodes;
    d->live = calloc((size_t)n_nodes, 1);
    d->flat = calloc((size_t)n_nodes, sizeof(int32_t));
    d->leafy = calloc((size_t)n_nodes, 1);
    if (d->live == NULL || d->flat == NULL || d->leafy == NULL) return -1;
    for (Py_ssize_t n = 0; n < n_nodes; n++) {
        const int32_t *nd = node(d, (int32_t)n);
        d->live[n] = nd[1] >= 0;
        d->flat[n] = nd[1] < 0 && (nd[0] == T_INT || nd[0] == T_LONG || nd[0] == T_ENUM);
    }
    for (int changed = 1; changed;) {
        changed = 0;
        for (Py_ssize_t n = 0; n < n_nodes; n++) {
            const int32_t *nd = node(d, (int32_t)n);
            int32_t type = nd[0], a = nd[2], b = nd[3];
            uint8_t live = d->live[n];
            int64_t flat = 0;
            if (type == T_RECORD || type == T_UNION) {
                for (int32_t i = 0; i < b; i++) live |= d->live[d->children[a + i]];
                if (type == T_RECORD && !live) {
                    flat = b > 0;
                    for (int32_t i = 0; i < b && flat; i++) {
                        int32_t f = d->flat[d->children[a + i]];
                        flat = f ? flat + f : 0;
                    }
                    flat = flat ? flat - 1 : 0;
                    if (flat > 1 << 20) flat = 0;
                }
            } else if (type == T_ARRAY || type == T_MAP) {
                live |= d->live[a] | (type == T_MAP && d->live[b]);
            } else {
                flat = d->flat[n];
            }
            if (live != d->live[n] || flat != d->flat[n]) {
                d->live[n] = live;
                d->flat[n] = (int32_t)flat;
                changed = 1;
            }
        }
    }
    for (Py_ssize_t n = 0; n < n_nodes; n++) {
        const int32_t *nd = node(d, (int32_t)n);
        int leafy = nd[0] == T_RECORD && !d->live[n] && nd[3] > 0;
        for (int32_t i = 0; i < nd[3] && leafy; i++) leafy = is_leaf(node(d, d->children[nd[2] + i])[0]);
        d->leafy[n] = (uint8_t)leafy;
    }
    return 0;
}

static int decode(Decoder *d, int32_t n, int depth);

/* An array's or a map's blocks of items (a negative count is followed by the block's size in bytes). */
static int decode_items(Decoder *d, const int32_t *nd, int depth) {
    int64_t total = 0, count;
    for (;;) {
        if (read_long(d, &count) < 0) return -1;
        if (count == 0) break;
        if (count < 0) {
            int64_t size;
            if (count == INT64_MIN) return fail(d, "a bad array block count");
            count = -count;
            if (read_long(d, &size) < 0) return -1;
        }
        if (count > d->end - d->p) return fail(d, "an array is longer than its block");  /* >= 1 byte each */
        for (int64_t i = 0; i < count; i++) {
            if (nd[0] == T_MAP && decode(d, nd[2], depth + 1) < 0) return -1;
            if (decode(d, nd[0] == T_MAP ? nd[3] : nd[2], depth + 1) < 0) return -1;
        }
        total += count;
    }
    if (nd[1] >= 0) {
        Column *c = &d->columns[nd[1]];
        c->items += total;
        return push_list_end(d, c, 1);
    }
    return 0;
}

/* A map of (int key, long value) entries (an array of records, nd: the array) as the bitmap of its keys
 * whose value is 0 (see the top of this file). */
static int decode_zero_keys(Decoder *d, Column *c) {
    uint64_t *mask = push_mask(d, c, 1), other[MAX_MASK_WORDS];  /* other: keys with a value that is not 0 */
    int64_t count, key, value, keys = (int64_t)c->words * 64;
    if (mask == NULL) return -1;
    memset(other, 0, (size_t)c->words * 8);
    for (;;) {
        if (read_long(d, &count) < 0) return -1;
        if (count == 0) {
            for (int32_t w = 0; w < c->words; w++) mask[w] &= ~other[w];
            return 0;
        }
        if (count < 0) {
            int64_t size;
            if (count == INT64_MIN) return fail(d, "a bad array block count");
            count = -count;
            if (read_long(d, &size) < 0) return -1;
        }
        if (count > d->end - d->p) return fail(d, "an array is longer than its block");
        for (int64_t i = 0; i < count; i++) {
            if (read_long(d, &key) < 0 || read_long(d, &value) < 0) return -1;
            if (key < INT32_MIN || key > INT32_MAX) return fail(d, "an int is out of range");
            if (key < 0 || key >= keys) continue;
            (value == 0 ? mask : other)[key >> 6] |= 1ULL << (key & 63);
        }
    }
}

static int decode(Decoder *d, int32_t n, int depth) {
    const int32_t *nd = node(d, n);
    int32_t type = nd[0], out = nd[1], a = nd[2], b = nd[3];
    Column *c = out >= 0 ? &d->columns[out] : NULL;
    int64_t v;
    if (!d->live[n]) return skip(d, n, depth);
    if (depth > MAX_DEPTH) return fail(d, "the schema nests too deeply");
    switch (type) {
        case T_NULL:
            return 0;
        case T_BOOL: {
            if (d->p >= d->end) return fail(d, "a value runs past the end of its block");
            uint64_t value = *d->p++ != 0;
            return c ? push_value(d, c, &value, 1) : 0;
        }
        case T_INT:
        case T_ENUM: {
            if (read_long(d, &v) < 0) return -1;
            if (v < INT32_MIN || v > INT32_MAX) return fail(d, "an int is out of range");
            int32_t value[2] = {(int32_t)v, 0};
            return c ? push_value(d, c, value, 1) : 0;
        }
        case T_LONG:
            if (read_long(d, &v) < 0) return -1;
            return c ? push_value(d, c, &v, 1) : 0;
        case T_FLOAT:
        case T_DOUBLE: {
            size_t width = type == T_FLOAT ? 4 : 8;
            if ((size_t)(d->end - d->p) < width) return fail(d, "a value runs past the end of its block");
            uint64_t value = 0;
            memcpy(&value, d->p, width);  /* little-endian IEEE 754, as stored in memory here */
            d->p += width;
            return c ? push_value(d, c, &value, 1) : 0;
        }
        case T_BYTES:
        case T_STRING:
        case T_FIXED: {
            if (type == T_FIXED) {
                v = a;
            } else if (read_long(d, &v) < 0) {
                return -1;
            }
            if (v < 0) return fail(d, "a negative length");
            if (v > d->end - d->p) return fail(d, "a value runs past the end of its block");
            const uint8_t *at = d->p;
            d->p += v;
            return c ? push_bytes(d, c, at, (size_t)v, 1) : 0;
        }
        case T_RECORD:
            for (int32_t i = 0; i < b; i++)
                if (decode(d, d->children[a + i], depth + 1) < 0) return -1;
            return 0;
        case T_ARRAY:
        case T_MAP:
            if (c != NULL && c->kind == K_MASK) return decode_zero_keys(d, c);
            return decode_items(d, nd, depth);
        case T_UNION: {
            if (read_long(d, &v) < 0) return -1;
            if (v < 0 || v >= b) return fail(d, "a union branch out of range");
            int32_t branch_number[2] = {(int32_t)v, 0};
            if (c != NULL && push_value(d, c, branch_number, 1) < 0) return -1;
            for (int32_t i = 0; i < b; i++) {
                int32_t branch = d->children[a + i];
                if ((i == v ? decode(d, branch, depth + 1) : append_null(d, branch, depth + 1)) < 0) return -1;
            }
            return 0;
        }
        default:
            return fail(d, "a bad program node");
    }
}

/* Every node's fields in range, so that decoding never indexes outside the program. */
static const char *check_program(Decoder *d, Py_ssize_t n_columns, const int32_t *kinds) {
    for (Py_ssize_t i = 0; i < d->n_children; i++)
        if (d->children[i] < 0 || d->children[i] >= d->n_nodes) return "a bad child node";
    for (Py_ssize_t n = 0; n < d->n_nodes; n++) {
        const int32_t *nd = node(d, (int32_t)n);
        int32_t type = nd[0], out = nd[1], a = nd[2], b = nd[3];
        if (type < 0 || type >= T_COUNT || out >= n_columns) return "a bad node type or output";
        if ((type == T_RECORD || type == T_UNION) && (a < 0 || b < 0 || a + (Py_ssize_t)b > d->n_children))
            return "a bad child range";
        if ((type == T_ARRAY || type == T_MAP) && (a < 0 || a >= d->n_nodes)) return "a bad item node";
        if (type == T_MAP && (b < 0 || b >= d->n_nodes)) return "a bad map value node";
        if (type == T_FIXED && a < 0) return "a bad fixed size";
        if (out >= 0) {
            static const int kind_of[T_COUNT] = {-1, K_U8, K_I32, K_I64, K_F32, K_F64, K_BIN, K_BIN, K_BIN, -1,
                                                 K_LIST, K_LIST, K_I32, K_I32};
            if (type == T_ARRAY && kinds[out] == K_MASK) {
                const int32_t *item = node(d, a);
                if (b < 1 || b > MAX_MASK_WORDS) return "a bad mask width";
                if (item[0] != T_RECORD || item[3] != 2 || item[1] >= 0 || item[2] < 0 ||
                    item[2] + 2 > d->n_children)
                    return "a mask over an array that is not of (int, long) records";
                const int32_t *key = node(d, d->children[item[2]]), *value = node(d, d->children[item[2] + 1]);
                if (key[0] != T_INT || key[1] >= 0 || value[0] != T_LONG || value[1] >= 0)
                    return "a mask over an array that is not of (int, long) records";
                continue;
            }
            if (kind_of[type] < 0 || kinds[out] != kind_of[type]) return "an output of the wrong kind";
        }
    }
    return NULL;
}

/* Decoded memory handed to Python without a copy: a read-only buffer that frees it when released. */
typedef struct {
    PyObject_HEAD
    char *data;
    Py_ssize_t size;
} Memory;

static void memory_dealloc(Memory *self) {
    free(self->data);
    Py_TYPE(self)->tp_free((PyObject *)self);
}

static int memory_getbuffer(Memory *self, Py_buffer *view, int flags) {
    return PyBuffer_FillInfo(view, (PyObject *)self, self->data ? self->data : (char *)"", self->size, 1, flags);
}

static PyBufferProcs memory_as_buffer = {.bf_getbuffer = (getbufferproc)memory_getbuffer};

static PyTypeObject MemoryType = {
    PyVarObject_HEAD_INIT(NULL, 0)
    .tp_name = "planner_service._kernels.Memory",
    .tp_basicsize = sizeof(Memory),
    .tp_dealloc = (destructor)memory_dealloc,
    .tp_as_buffer = &memory_as_buffer,
    .tp_flags = Py_TPFLAGS_DEFAULT,
    .tp_doc = "Memory filled by the decoder (a read-only buffer).",
};

/* The buffer's memory as a Memory object (which takes it over), or NULL with an exception. */
static PyObject *take(Buf *b) {
    if (PyType_Ready(&MemoryType) < 0) return NULL;
    Memory *m = PyObject_New(Memory, &MemoryType);
    if (m == NULL) return NULL;
    if (b->len > 0 && b->cap > b->len + b->len / 16) {  /* grown by doubling: give the unused tail back */
        char *shrunk = realloc(b->p, b->len);
        if (shrunk != NULL) b->p = shrunk;
    }
    m->data = b->p;
    m->size = (Py_ssize_t)b->len;
    b->p = NULL;
    b->len = b->cap = 0;
    return (PyObject *)m;
}

/* A validity bitmap (Arrow: least significant bit first) from one byte per value, in place. */
static void to_bitmap(Column *c) {
    uint8_t *bytes = (uint8_t *)c->valid.p;
    for (int64_t i = 0; i < c->length; i++) {
        uint8_t bit = (uint8_t)(bytes[i] << (i & 7));
        if ((i & 7) == 0) bytes[i >> 3] = bit;
        else bytes[i >> 3] |= bit;
    }
    c->valid.len = (size_t)(c->length + 7) / 8;
}

static PyObject *column_tuple(Column *c) {
    if (c->nulls) to_bitmap(c);
    PyObject *valid = c->nulls ? take(&c->valid) : Py_NewRef(Py_None);
    PyObject *values = c->kind == K_LIST ? Py_NewRef(Py_None) : take(&c->values);
    PyObject *offsets = (c->kind == K_BIN || c->kind == K_LIST) ? take(&c->offsets) : Py_NewRef(Py_None);
    if (valid == NULL || values == NULL || offsets == NULL) {
        Py_XDECREF(valid);
        Py_XDECREF(values);
        Py_XDECREF(offsets);
        return NULL;
    }
    return Py_BuildValue("(NNNLL)", valid, values, offsets, (long long)c->length, (long long)c->nulls);
}

PyObject *kernels_decode_avro(PyObject *self, PyObject *args) {
    Py_buffer nodes, children, kinds;
    PyObject *blocks, *result = NULL;
    if (!PyArg_ParseTuple(args, "y*y*y*O!", &nodes, &children, &kinds, &PyList_Type, &blocks)) return NULL;
    Py_ssize_t n_blocks = PyList_GET_SIZE(blocks), n_columns = kinds.len / 4, parsed = 0;
    Decoder d = {(const int32_t *)nodes.buf, nodes.len / 16, (const int32_t *)children.buf, children.len / 4,
                 NULL, NULL, NULL, NULL, NULL, NULL, NULL};
    Py_buffer *views = PyMem_Calloc((size_t)n_blocks + 1, sizeof(Py_buffer));
    long long *counts = PyMem_Calloc((size_t)n_blocks + 1, sizeof(long long));
    d.columns = calloc((size_t)n_columns + 1, sizeof(Column));
    if (views == NULL || counts == NULL || d.columns == NULL) {
        PyErr_NoMemory();
        goto done;
    }
    const char *bad = d.n_nodes == 0 ? "an empty program" : check_program(&d, n_columns, (const int32_t *)kinds.buf);
    if (bad != NULL) {
        PyErr_Format(PyExc_ValueError, "decode_avro: %s", bad);
        goto done;
    }
    if (analyse(&d) < 0) {
        PyErr_NoMemory();
        goto done;
    }
    for (Py_ssize_t i = 0; i < n_columns; i++) {
        d.columns[i].kind = ((const int32_t *)kinds.buf)[i];
        if (d.columns[i].kind < 0 || d.columns[i].kind >= K_COUNT) {
            PyErr_SetString(PyExc_ValueError, "decode_avro: a bad column kind");
            goto done;
        }
        if (d.columns[i].kind == K_MASK) d.columns[i].words = 1;  /* (set from its node below) */
        int64_t zero = 0;
        if ((d.columns[i].kind == K_BIN || d.columns[i].kind == K_LIST) && buf_append(&d.columns[i].offsets, &zero, 8) < 0) {
            PyErr_NoMemory();
            goto done;
        }
    }
    for (Py_ssize_t n = 0; n < d.n_nodes; n++) {
        const int32_t *nd = node(&d, (int32_t)n);
        if (nd[1] >= 0 && d.columns[nd[1]].kind == K_MASK) d.columns[nd[1]].words = nd[3];
    }
    long long records = 0;
    for (; parsed < n_blocks; parsed++) {
        if (!PyArg_ParseTuple(PyList_GET_ITEM(blocks, parsed), "y*L", &views[parsed], &counts[parsed])) goto done;
        if (counts[parsed] > 0 && counts[parsed] <= views[parsed].len) records += counts[parsed];
    }
    for (Py_ssize_t i = 0; i < n_columns; i++) {  /* room for one value per record: most columns need no more */
        Column *c = &d.columns[i];
        size_t width = c->kind == K_I32 || c->kind == K_F32 ? 4 : c->kind == K_U8 ? 1 : 8;
        if (c->kind == K_MASK) width = 8 * (size_t)c->words;
        if (buf_reserve(&c->valid, (size_t)records) < 0 || buf_reserve(&c->offsets, (size_t)records * 8) < 0 ||
            (c->kind != K_LIST && buf_reserve(&c->values, (size_t)records * width) < 0)) {
            PyErr_NoMemory();
            goto done;
        }
    }
    Py_BEGIN_ALLOW_THREADS
    for (Py_ssize_t i = 0; i < n_blocks && d.error == NULL; i++) {
        d.p = views[i].buf;
        d.end = d.p + views[i].len;
        if (counts[i] < 0) fail(&d, "a negative record count");
        for (long long r = 0; r < counts[i] && d.error == NULL; r++) decode(&d, 0, 0);
        if (d.error == NULL && d.p != d.end) fail(&d, "a block's records end before the block does");
    }
    Py_END_ALLOW_THREADS
    if (d.error != NULL) {
        PyErr_Format(PyExc_ValueError, "%s", d.error);
        goto done;
    }
    result = PyList_New(n_columns);
    for (Py_ssize_t i = 0; result != NULL && i < n_columns; i++) {
        PyObject *column = column_tuple(&d.columns[i]);
        if (column == NULL) Py_CLEAR(result);
        else PyList_SET_ITEM(result, i, column);
    }
done:
    for (Py_ssize_t i = 0; i < parsed; i++) PyBuffer_Release(&views[i]);
    for (Py_ssize_t i = 0; d.columns != NULL && i < n_columns; i++) {
        free(d.columns[i].valid.p);
        free(d.columns[i].values.p);
        free(d.columns[i].offsets.p);
    }
    free(d.columns);
    free(d.live);
    free(d.flat);
    free(d.leafy);
    PyMem_Free(views);
    PyMem_Free(counts);
    PyBuffer_Release(&nodes);
    PyBuffer_Release(&children);
    PyBuffer_Release(&kinds);
    return result;
}
