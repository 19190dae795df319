/* store_cdc.h - content-defined chunking for the chunk store: FastCDC (Xia
 * et al., ATC'16) with normalised chunking, level 2, and a gear table
 * derived from a per-owner key.
 *
 * What it computes.  A chunk's bytes are fed through the gear hash
 * h = (h << 1) + G[byte]; a chunk ends after the byte at which h has zeros
 * in every bit of a mask.  The mask is the "small" one (avg_bits + 2 one-bits,
 * harder to hit) while the chunk is at most avg bytes long, the "large" one
 * (avg_bits - 2 one-bits, easier) after that, so chunk sizes cluster around
 * avg.  Both masks spread their bits over the 48 high bits of h (FastCDC's
 * padded masks), and the large mask's bits are a subset of the small one's.
 * No chunk is cut before min bytes (the first min - 64 bytes of a chunk are
 * not even hashed: the 64 bytes before min fill the hash window, so every
 * cut decision depends on the 64 bytes up to it and on nothing else), and
 * a chunk that reaches max bytes is cut there.  Only the last chunk of a
 * stream may be shorter than min.
 *
 * The key.  G, the 256 64-bit gear values, is the XChaCha20 key stream of
 * the owner's 32-byte key under a fixed labelled nonce, so two owners cut
 * the same content at unrelated places: the chunk sizes every storing node
 * sees cannot be matched across owners to spot shared content (within one
 * owner's files they remain a fingerprint; padding ciphertext sizes is the
 * pipeline's part).  The table is secret-derived and lives in sodium_malloc
 * memory, wiped by weft_cdc_free.
 *
 * Sizes on random data with min = avg / 4: a mean of about 1.15 * avg
 * (measured 1.13-1.19 for avg 4 KiB to 1 MiB).  Past avg a byte cuts with
 * odds 4 / avg, so the default max = avg * 8 is all but never reached on
 * such data; it bounds chunks of low-entropy input (runs of one byte).
 *
 * Streaming.  A struct weft_cdc is immutable once made and can be shared by
 * any number of streams (threads included).  Each stream keeps its own
 * struct weft_cdc_state, a few words: bytes are fed in buffers of any size,
 * each byte once, and the cut points do not depend on how the stream was
 * split into buffers.  Nothing is copied or allocated per call. */
#ifndef WEFT_STORE_CDC_H
#define WEFT_STORE_CDC_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

#define WEFT_CDC_KEY_LEN 32
#define WEFT_CDC_MIN_MIN 64                     /* smallest allowed min */
#define WEFT_CDC_MAX_MAX ((uint32_t)64 << 20)   /* largest allowed max: 64 MiB */
#define WEFT_CDC_DEFAULT_AVG ((uint32_t)1 << 20) /* 1 MiB */

/* Chunk sizes in bytes.  A field left 0 takes its default: avg 1 MiB,
 * min avg / 4, max avg * 8.  Valid when avg is a power of two,
 * 64 <= min < avg < max <= 64 MiB. */
struct weft_cdc_params {
	uint32_t min;
	uint32_t avg;
	uint32_t max;
};

/* A chunker: the key-derived gear table and the resolved parameters. */
struct weft_cdc;

/* The state of one stream.  Zero it (= {0}) before the first byte;
 * weft_cdc_update and weft_cdc_finish leave it zeroed after each cut. */
struct weft_cdc_state {
	uint64_t hash; /* gear hash over the current chunk's bytes so far */
	uint64_t len;  /* bytes of the current chunk fed so far */
};

/* Fills the zero fields of *p with their defaults and checks the result.
 * 0, or WEFT_EINVAL (p is then partly filled).  For validating user
 * options without making a chunker. */
int weft_cdc_params_check(struct weft_cdc_params *p);

/* Makes a chunker for key with params p (NULL: all defaults).  0 and *out,
 * owned by the caller until weft_cdc_free; or WEFT_EINVAL (bad p; *out is
 * NULL).  Aborts when memory runs out.  key is not kept. */
int weft_cdc_new(struct weft_cdc **out, const uint8_t key[WEFT_CDC_KEY_LEN], const struct weft_cdc_params *p);

/* Wipes and frees c; accepts NULL. */
void weft_cdc_free(struct weft_cdc *c);

/* The chunker's resolved parameters (defaults filled in). */
void weft_cdc_params(const struct weft_cdc *c, struct weft_cdc_params *out);

/* Feeds p[0..len) to the stream s as the continuation of its current
 * chunk.  Returns how many bytes of p belong to the current chunk, n <= len,
 * and sets *cut:
 *   *cut true:  the current chunk ends with p[n - 1] (1 <= n); s is reset,
 *               and the caller feeds p + n, len - n next for the chunks
 *               after it;
 *   *cut false: n == len; all of p belongs to the current chunk, which
 *               continues in the next buffer.
 * The chunk's total length is what the caller fed since the previous cut;
 * it is between min and max.  len 0 returns 0 without a cut. */
size_t weft_cdc_update(const struct weft_cdc *c, struct weft_cdc_state *s, const void *p, size_t len, bool *cut);

/* Ends the stream: returns the length of its last chunk, the bytes fed
 * since the last cut (0 when there are none: the stream is empty or ended
 * on a cut), and resets s.  The last chunk may be shorter than min. */
uint64_t weft_cdc_finish(struct weft_cdc_state *s);

#endif
