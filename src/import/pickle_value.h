/* pickle_value.h - the generic value tree that the strict pickle reader builds.
 *
 * The reader (pickle_read.c) turns a pickle into a small tree of plain values:
 * None, bool, int, big int, float, str, bytes, tuple, list, dict, set and
 * frozenset. Nothing else can be expressed, so nothing can be imported or
 * called. Snapshot import (snapshot_import.c) walks the tree. The tree is a
 * DAG: pickle memo references make one node appear in several places (torch
 * shares frame dicts and frame lists); it never has cycles (the reader refuses
 * to change a container after it was placed inside another, see pickle_read.c).
 *
 * All nodes and arrays live in the document's arena (large item arrays in
 * blocks of their own, freed with it); strings and bytes of the
 * binary opcodes point into the input buffer, which the document borrows. */
#ifndef MH_IMPORT_PICKLE_VALUE_H
#define MH_IMPORT_PICKLE_VALUE_H

#include <stddef.h>
#include <stdint.h>

enum mh__pv_type {
    MH__PV_NONE = 0,
    MH__PV_BOOL,
    MH__PV_INT,    /* fits int64 */
    MH__PV_BIGINT, /* little-endian two's complement bytes in u.s, n bytes */
    MH__PV_FLOAT,
    MH__PV_STR,   /* UTF-8 (not NUL-terminated), n bytes */
    MH__PV_BYTES, /* n bytes */
    MH__PV_TUPLE, /* n items */
    MH__PV_LIST,
    MH__PV_DICT, /* n key/value pairs: items[2k] key, items[2k+1] value */
    MH__PV_SET,
    MH__PV_FROZENSET,
    /* streaming only (pickle_stream.h): a value its consumer already turned
     * into an id; n = the consumer's kind, u.i = its value */
    MH__PV_HANDLE
};

/* One value: 16 bytes. Containers keep `cap` item slots in u.items. */
struct mh__pv {
    uint8_t type;   /* enum mh__pv_type */
    uint8_t frozen; /* container placed inside another: no longer mutable */
    uint8_t mark;   /* free for consumers (visited flags); 0 after parsing */
    uint8_t height; /* 0 for scalars, 1 + tallest child for containers */
    uint32_t n;
    union {
        int64_t i;            /* INT, BOOL */
        double f;             /* FLOAT */
        const char *s;        /* STR, BYTES, BIGINT */
        struct mh__pv **items; /* containers */
    } u;
};

/* Number of items of a container (pairs count twice for dicts); 0 otherwise. */
size_t mh__pv_len(const struct mh__pv *v);
/* Item i of a tuple, list or set; NULL when out of range or not a sequence. */
const struct mh__pv *mh__pv_at(const struct mh__pv *v, size_t i);
/* Value for a str key in a dict (the last one wins, as in Python); NULL if
 * absent or `d` is not a dict. */
const struct mh__pv *mh__pv_get(const struct mh__pv *d, const char *key);

int mh__pv_is_seq(const struct mh__pv *v); /* tuple or list */
int mh__pv_is_str(const struct mh__pv *v, const char *text);
/* Conversions return 0, or MH_EFORMAT when the value has another type or
 * does not fit. Bools count as ints (as in Python). */
int mh__pv_i64(const struct mh__pv *v, int64_t *out);
int mh__pv_u64(const struct mh__pv *v, uint64_t *out);
int mh__pv_f64(const struct mh__pv *v, double *out); /* float or int */
int mh__pv_bool(const struct mh__pv *v, int *out);   /* bool or int */
/* Name of a type for error messages ("dict", "str", ...). */
const char *mh__pv_type_name(const struct mh__pv *v);

#endif
