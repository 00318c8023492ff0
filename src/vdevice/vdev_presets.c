/* vdev_presets.c - the table of GPU models the virtual device can pose as, and the
 * size parser its environment settings use. Memory totals approximate what
 * the CUDA driver reports for these boards (nvidia-smi's "Total"), which is
 * less than the marketed size on most of them; --device-memory gives the
 * exact figure of a particular card. */
#include "vdev_presets.h"

#include <ctype.h>
#include <stdlib.h>
#include <strings.h>

#define MIB (1024ull * 1024ull)

static const struct mh__vdev_gpu presets[] = {
    {"H100", "NVIDIA H100 80GB HBM3", 132, 9, 0, 81559 * MIB, 5120, 50 << 20},
    {"H100-PCIE", "NVIDIA H100 PCIe", 114, 9, 0, 81559 * MIB, 5120, 50 << 20},
    {"H200", "NVIDIA H200", 132, 9, 0, 143771 * MIB, 6144, 50 << 20},
    {"A100-80GB", "NVIDIA A100-SXM4-80GB", 108, 8, 0, 81920 * MIB, 5120, 40 << 20},
    {"A100-40GB", "NVIDIA A100-SXM4-40GB", 108, 8, 0, 40960 * MIB, 5120, 40 << 20},
    {"L40S", "NVIDIA L40S", 142, 8, 9, 46068 * MIB, 384, 96 << 20},
    {"L4", "NVIDIA L4", 58, 8, 9, 23034 * MIB, 192, 48 << 20},
    {"A10", "NVIDIA A10", 72, 8, 6, 23028 * MIB, 384, 6 << 20},
    {"RTX4090", "NVIDIA GeForce RTX 4090", 128, 8, 9, 24564 * MIB, 384, 72 << 20},
    {"RTX3090", "NVIDIA GeForce RTX 3090", 82, 8, 6, 24576 * MIB, 384, 6 << 20},
    {"V100-32GB", "Tesla V100-SXM2-32GB", 80, 7, 0, 32768 * MIB, 4096, 6 << 20},
    {"V100-16GB", "Tesla V100-SXM2-16GB", 80, 7, 0, 16384 * MIB, 4096, 6 << 20},
    {"T4", "Tesla T4", 40, 7, 5, 15360 * MIB, 256, 4 << 20},
};

size_t mh__vdev_preset_count(void)
{
    return sizeof presets / sizeof presets[0];
}

const struct mh__vdev_gpu *mh__vdev_preset_at(size_t i)
{
    return i < mh__vdev_preset_count() ? &presets[i] : NULL;
}

/* Matches ignoring case and the separators '-', '_' and ' ' ("rtx_4090"). */
static int same_key(const char *a, const char *b)
{
    for (;;) {
        while (*a == '-' || *a == '_' || *a == ' ')
            a++;
        while (*b == '-' || *b == '_' || *b == ' ')
            b++;
        if (tolower((unsigned char)*a) != tolower((unsigned char)*b))
            return 0;
        if (!*a)
            return 1;
        a++, b++;
    }
}

const struct mh__vdev_gpu *mh__vdev_preset_find(const char *key)
{
    for (size_t i = 0; key && i < mh__vdev_preset_count(); i++)
        if (same_key(presets[i].key, key))
            return &presets[i];
    return NULL;
}

int mh__vdev_parse_size(const char *text, uint64_t *out)
{
    char *end;
    if (!text || !isdigit((unsigned char)*text))
        return -1;
    double v = strtod(text, &end);
    static const struct {
        const char *suffix;
        double mult;
    } units[] = {{"", 1},
                 {"B", 1},
                 {"K", 1024.0},
                 {"KB", 1024.0},
                 {"KiB", 1024.0},
                 {"M", 1048576.0},
                 {"MB", 1048576.0},
                 {"MiB", 1048576.0},
                 {"G", 1073741824.0},
                 {"GB", 1073741824.0},
                 {"GiB", 1073741824.0},
                 {"T", 1099511627776.0},
                 {"TB", 1099511627776.0},
                 {"TiB", 1099511627776.0}};
    for (size_t i = 0; i < sizeof units / sizeof units[0]; i++) {
        if (strcasecmp(end, units[i].suffix) == 0) {
            double bytes = v * units[i].mult;
            if (bytes < 0 || bytes > 1.8e19)
                return -1;
            *out = (uint64_t)bytes;
            return 0;
        }
    }
    return -1;
}
