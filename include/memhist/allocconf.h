/* memhist/allocconf.h - PyTorch CUDA caching-allocator settings.
 *
 * Parsed from the PYTORCH_CUDA_ALLOC_CONF / PYTORCH_ALLOC_CONF syntax
 * ("key:value,key:value"). The model uses them to apply PyTorch's rounding
 * and split rules; the simulator uses them to make the allocator's
 * decisions. All-zero means PyTorch's defaults. */
#ifndef MEMHIST_ALLOCCONF_H
#define MEMHIST_ALLOCCONF_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define MH_KB 1024ull
#define MH_MB (1024ull * 1024ull)
#define MH_GB (1024ull * 1024ull * 1024ull)

struct mh_alloc_conf {
    uint64_t max_split_size;             /* bytes; 0 = unlimited */
    uint64_t max_non_split_rounding;     /* bytes; 0 = 20 MiB */
    uint64_t large_segment_size;         /* bytes; 0 = 20 MiB */
    double garbage_collection_threshold; /* 0 = off; in (0,1) */
    double memory_fraction;              /* per-process fraction of capacity; 0 = 1.0 (none set) */
    int expandable_segments;             /* bool */
    uint32_t roundup_power2_divisions[16]; /* by floor(log2(size)) - 20, clamped; 0 = none */
};

/* Parses `text` on top of defaults. On error returns MH_ECONFIG and writes a
 * message naming the bad key or value into err (if errlen > 0). NULL or ""
 * gives the defaults. Keys PyTorch accepts that do not affect sizing
 * (pinned_*, release_lock_on_cudamalloc, ...) are accepted and ignored;
 * backend:cudaMallocAsync is rejected with MH_EUNSUPPORTED. */
int mh_alloc_conf_parse(const char *text, struct mh_alloc_conf *out, char *err, size_t errlen);
/* Canonical text form ("expandable_segments:True,max_split_size_mb:128", "" for
 * defaults). Returns the length it needed (as snprintf). */
int mh_alloc_conf_format(const struct mh_alloc_conf *conf, char *buf, size_t len);

/* PyTorch's sizing rules (reference: pytorch-allocator.md section 1.10). */
uint64_t mh_round_size(const struct mh_alloc_conf *conf, uint64_t size);
/* 1 when a rounded size belongs to the small pool (<= 1 MiB). */
int mh_is_small_size(uint64_t rounded);
/* Segment (cudaMalloc) size for a rounded request. */
uint64_t mh_allocation_size(const struct mh_alloc_conf *conf, uint64_t rounded);
/* Whether a free block of `block_size` serving `rounded` is split. */
int mh_should_split(const struct mh_alloc_conf *conf, int small_pool, int expandable,
                    uint64_t block_size, uint64_t rounded);
/* Page size of an expandable segment in the given pool. */
uint64_t mh_expandable_page_size(const struct mh_alloc_conf *conf, int small_pool);
/* Effective values with defaults applied. */
uint64_t mh_conf_max_split(const struct mh_alloc_conf *conf); /* UINT64_MAX if unlimited */
uint64_t mh_conf_max_non_split_rounding(const struct mh_alloc_conf *conf);
uint64_t mh_conf_large_segment(const struct mh_alloc_conf *conf);

#ifdef __cplusplus
}
#endif
#endif
