/* util.h - small helpers every part of weft shares: allocation that aborts
 * on out-of-memory, strict decimal parsing, and atomic replacement of a file
 * (src/lib/util.c).  Protocols may use the first two, never the file helper
 * (a protocol does no I/O of its own). */
#ifndef WEFT_UTIL_H
#define WEFT_UTIL_H

#include <stddef.h>
#include <stdint.h>
#include <sys/types.h>

/* ---- allocation: never NULL; print "out of memory" and abort instead, as
 * every weft _new() does.  A size of 0 allocates a minimal block (never NULL
 * either).  The caller owns the result and frees it with free(). ---- */

void *weft_xmalloc(size_t size);
/* Zeroed; nmemb * size may not overflow (abort if it does). */
void *weft_xcalloc(size_t nmemb, size_t size);
/* Resizes p (NULL: a new block) to nmemb * size bytes, like reallocarray:
 * aborts when the product overflows.  The old pointer is invalid after. */
void *weft_xrealloc(void *p, size_t nmemb, size_t size);
char *weft_xstrdup(const char *s);
/* A malloc'd copy of p[0..len) (at least one byte allocated). */
void *weft_xmemdup(const void *p, size_t len);
/* Zeroed memory for a large table probed at random (a hash index): from
 * 2 MiB on, mapped with the transparent huge pages hint, so that a probe
 * costs fewer TLB misses and filling it fewer page faults.  Free it with
 * weft_table_free(p, the same nmemb * size). */
void *weft_table_alloc(size_t nmemb, size_t size);
void weft_table_free(void *p, size_t nmemb, size_t size);

/* ---- parsing ---- */

/* A decimal number 0 .. 2^64 - 1, strictly: ASCII digits only (no sign, no
 * space, no "0x"), no leading zero except "0" itself, not empty, no
 * overflow.  0 with *out set, or WEFT_EINVAL with *out untouched. */
int weft_parse_u64(const char *s, uint64_t *out);
/* The same for the len bytes at s (s need not be NUL-terminated; a NUL
 * among them is not a digit). */
int weft_parse_u64n(const char *s, size_t len, uint64_t *out);

/* ---- text ---- */

/* in as the inside of a JSON string (quotes, backslashes and control
 * characters escaped), NUL-terminated, cut to fit cap bytes (cap > 0). */
void weft_json_escape(char *out, size_t cap, const char *in);

/* ---- files ---- */

/* Replaces path by a file holding the len bytes at data, with permissions
 * exactly mode (whatever the umask), atomically: the bytes go to a new
 * temporary file beside path (created 0600, so a secret is never readable
 * by others, then set to mode), which is fsynced and renamed over path,
 * and the directory is then fsynced so that the rename is durable (best
 * effort: some file systems refuse to fsync a directory).  A reader sees
 * the old file or the new one, never a mix; after a failure path is
 * unchanged and no temporary file is left.  0 or a weft error code
 * (WEFT_ENOSPC for a full disk, WEFT_EPERM, WEFT_ENOENT for a missing
 * directory ...). */
int weft_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode);

#endif
