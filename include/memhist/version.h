/* memhist/version.h - library and file-format version numbers.
 *
 * The library version follows semantic versioning. The .memhist file format
 * has a version of its own (MH_FORMAT_VERSION) that changes only when the
 * bytes on disk change; readers accept every format version up to their own. */
#ifndef MEMHIST_VERSION_H
#define MEMHIST_VERSION_H

#define MH_VERSION_MAJOR 0
#define MH_VERSION_MINOR 1
#define MH_VERSION_PATCH 0
#define MH_VERSION_STRING "0.1.0"

/* Format version written by this library; readers accept 1..MH_FORMAT_VERSION. */
#define MH_FORMAT_VERSION 1

#ifdef __cplusplus
extern "C" {
#endif

/* Library version as (major << 16) | (minor << 8) | patch. */
unsigned mh_version(void);
/* Library version as "MAJOR.MINOR.PATCH"; a static string. */
const char *mh_version_string(void);

#ifdef __cplusplus
}
#endif
#endif
