/* units.h - byte counts as people read them, the one form every text
 * output uses (the CLI's reports and status lines, the flame graph's
 * labels): "512 B", "1.50 GiB". */
#ifndef MH_MODEL_UNITS_H
#define MH_MODEL_UNITS_H

#include <stdint.h>

/* Binary units with two decimals above 1 KiB. Returns buf. */
const char *mh__bytes_text(uint64_t bytes, char buf[32]);

#endif
