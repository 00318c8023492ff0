/* diag.c - the message callback of the offline libraries (see diag.h). */
#include <stdarg.h>
#include <stdio.h>

#include "diag.h"

static mh__diag_fn diag_fn;
static void *diag_user;

void mh__diag_set(mh__diag_fn fn, void *user)
{
    diag_fn = fn;
    diag_user = user;
}

void mh__diag(const char *fmt, ...)
{
    char msg[1024];
    va_list ap;
    if (!diag_fn)
        return;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    diag_fn(diag_user, msg);
}
