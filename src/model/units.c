/* units.c - byte counts as people read them (see units.h). */
#include <stdio.h>

#include "units.h"

const char *mh__bytes_text(uint64_t bytes, char buf[32])
{
    static const char *const units[] = {"B", "KiB", "MiB", "GiB", "TiB"};
    double v = (double)bytes;
    int u = 0;
    while (v >= 1024.0 && u < 4) {
        v /= 1024.0;
        u++;
    }
    if (u == 0)
        snprintf(buf, 32, "%llu B", (unsigned long long)bytes);
    else
        snprintf(buf, 32, "%.2f %s", v, units[u]);
    return buf;
}
