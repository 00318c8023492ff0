/* snapshot_settings.h - a snapshot's `allocator_settings` dict as the text of
 * the meta "torch_allocator_settings" (written by snapshot import, read back
 * by snapshot export so the exported pickle has the settings torch wrote). */
#ifndef MH_VIZ_SNAPSHOT_SETTINGS_H
#define MH_VIZ_SNAPSHOT_SETTINGS_H

#include "viz/pickle_value.h"
#include "viz/pickle_write.h"

/* The dict as text in *out (malloc'd; NULL if `dict` is not a dict).
 * Returns 0 or MH_ENOMEM / MH_ELIMIT. */
int mh_snapshot_settings_text(const struct mh_pv *dict, char **out);
/* Writes the key/value pairs of `text` into the dict being built on `w`
 * (between its mark and setitems), leaving out top-level keys for which
 * skip(user, key) is non-zero. Returns the number of top-level pairs written
 * or MH_ENOMEM. */
int mh_snapshot_settings_write(struct mh_pw *w, const char *text,
                               int (*skip)(void *user, const char *key), void *user);

#endif
