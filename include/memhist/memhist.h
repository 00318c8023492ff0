/* memhist/memhist.h - umbrella header for the memhist C API. */
#ifndef MEMHIST_MEMHIST_H
#define MEMHIST_MEMHIST_H

#include "allocconf.h"
#include "error.h"
#include "event.h"
#include "model.h"
#include "optsteps.h"
#include "reader.h"
#include "recorder.h"
#include "version.h"
#include "writer.h"

#endif
