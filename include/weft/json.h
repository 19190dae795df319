/* json.h - conversions between jansson JSON values and MessagePack, used by
 * weft-cli (parameters in, results out) and weft-sim (scenario parameters).
 * msgpack has types JSON lacks (bin, ext, uint64 above INT64_MAX, non-UTF-8
 * strings, non-string map keys); each function says how it shows them.
 * Functions that hand out a json_t give the caller a new reference.  Also
 * the JSON paths that strict parsers put in their error messages. */
#ifndef WEFT_JSON_H
#define WEFT_JSON_H

#include <stddef.h>

#include <jansson.h>

#include "weft/mp.h"

/* JSON paths for error messages, "$.faults[2].kind": path + "." + key, or
 * path + "[i]", into buf (WEFT_JSON_PATH_MAX bytes); a path that does not
 * fit ends in "...".  Returns buf.  Used by the strict parsers of weft-sim
 * scenarios and weft-campaign manifests. */
#define WEFT_JSON_PATH_MAX 192
const char *weft_json_path_key(char *buf, const char *path, const char *key);
const char *weft_json_path_index(char *buf, const char *path, size_t i);

/* Appends v to w as msgpack: object -> map (keys as str, in order), array ->
 * array, string -> str, integer -> uint when >= 0 else int, real -> float64,
 * true/false -> bool, null -> nil.  depth is how many containers already
 * enclose v in the message being written (0 for a top-level value); a
 * container that would sit deeper than WEFT_MP_MAX_DEPTH fails with
 * WEFT_ETOOBIG, as does a string or container longer than msgpack allows.
 * On failure w holds a partial value: reset or discard it. */
int weft_json_to_mp(struct weft_mpw *w, const json_t *v, unsigned int depth);

/* Reads one complete msgpack value from r and converts it to JSON:
 *   nil/bool/int/float      -> null/true,false/integer/real
 *   uint above INT64_MAX    -> a string holding its decimal value
 *   float NaN / +-infinity  -> the strings "NaN", "Infinity", "-Infinity"
 *   str                     -> string; not valid UTF-8 -> "0x" + hex
 *   bin                     -> "0x" + lowercase hex
 *   array / map             -> array / object, map order kept (a repeated
 *                              key keeps its first position, last value)
 *   map key                 -> a str as is; a key whose JSON form is a
 *                              string (bin, non-UTF-8 str, huge uint) as that
 *                              string; any other key as its compact JSON text
 *                              (at most 256 bytes of it: a longer one, e.g.
 *                              maps nested as keys, fails with WEFT_ETOOBIG)
 *   ext                     -> {"ext_type": T, "data": "0x..."} (an object:
 *                              it counts as a container for the depth limit)
 * Containers nested deeper than WEFT_MP_MAX_DEPTH fail with WEFT_ETOOBIG.
 * Returns 0 and a new reference in *out, or WEFT_EDECODE / WEFT_ETOOBIG
 * (*out = NULL; r->err is set for decode errors). */
int weft_mp_to_json(struct weft_mp_reader *r, json_t **out);

/* Converts a whole buffer holding exactly one msgpack value (trailing bytes
 * are WEFT_EDECODE).  Same result as weft_mp_to_json(). */
int weft_mp_buf_to_json(const void *buf, size_t len, json_t **out);

/* Writes "0x" followed by the lowercase hex of len bytes into a new JSON
 * string (never NULL). */
json_t *weft_json_hex_string(const void *bytes, size_t len);

/* True when s[0..len) is well-formed UTF-8 (no overlong forms, surrogates
 * or code points above U+10FFFF; NUL bytes allowed). */
int weft_utf8_valid(const char *s, size_t len);

#endif
