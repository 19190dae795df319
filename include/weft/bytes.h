/* bytes.h - fixed-width integer codecs for keys, records and wire fields:
 * big-endian (kv keys sort by number, msgpack and frame headers) and the
 * one little-endian form the AEAD nonces and seqset records use.
 * Header-only: they compile to a load/store and a byte swap.  p need not be
 * aligned. */
#ifndef WEFT_BYTES_H
#define WEFT_BYTES_H

#include <stdint.h>

static inline void weft_be16_put(uint8_t *p, uint16_t v)
{
	p[0] = (uint8_t)(v >> 8);
	p[1] = (uint8_t)v;
}

static inline uint16_t weft_be16_get(const uint8_t *p)
{
	return (uint16_t)((uint16_t)p[0] << 8 | p[1]);
}

static inline void weft_be32_put(uint8_t *p, uint32_t v)
{
	p[0] = (uint8_t)(v >> 24);
	p[1] = (uint8_t)(v >> 16);
	p[2] = (uint8_t)(v >> 8);
	p[3] = (uint8_t)v;
}

static inline uint32_t weft_be32_get(const uint8_t *p)
{
	return (uint32_t)p[0] << 24 | (uint32_t)p[1] << 16 | (uint32_t)p[2] << 8 | p[3];
}

static inline void weft_be64_put(uint8_t *p, uint64_t v)
{
	weft_be32_put(p, (uint32_t)(v >> 32));
	weft_be32_put(p + 4, (uint32_t)v);
}

static inline uint64_t weft_be64_get(const uint8_t *p)
{
	return (uint64_t)weft_be32_get(p) << 32 | weft_be32_get(p + 4);
}

static inline void weft_le64_put(uint8_t *p, uint64_t v)
{
	for (int i = 0; i < 8; i++)
		p[i] = (uint8_t)(v >> (8 * i));
}

static inline uint64_t weft_le64_get(const uint8_t *p)
{
	uint64_t v = 0;
	for (int i = 7; i >= 0; i--)
		v = v << 8 | p[i];
	return v;
}

#endif
