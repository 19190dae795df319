/* fuzzfile.h - files for fuzz targets whose decoder takes a path (config,
 * genesis, scenario): the input in an in-memory file, and a private
 * scratch directory for what a target writes. */
#ifndef WEFT_FUZZFILE_H
#define WEFT_FUZZFILE_H

#include <stddef.h>

/* A path (/proc/self/fd/N of one memfd, reused) whose file holds exactly
 * data[0..len); valid until the next call.  Aborts on failure. */
const char *ff_input_path(const void *data, size_t len);
/* The input as a NUL-terminated string (malloc'd; the caller frees it),
 * for decoders that take text rather than a path.  Aborts on OOM. */
char *ff_input_text(const void *data, size_t len);
/* A directory created once per process under $TMPDIR (or /tmp) and removed
 * at exit, for files a target writes; returns DIR/name in a static buffer. */
const char *ff_scratch_path(const char *name);

#endif
