/* util.c - the helpers of weft/util.h: allocation that aborts on OOM,
 * strict decimal parsing, atomic file replacement.  One copy of each for the
 * whole tree. */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include "weft/err.h"
#include "weft/util.h"

/* ---- allocation ---- */

static void oom(void)
{
	fputs("weft: out of memory\n", stderr);
	abort();
}

void *weft_xmalloc(size_t size)
{
	void *p = malloc(size ? size : 1);
	if (!p)
		oom();
	return p;
}

void *weft_xcalloc(size_t nmemb, size_t size)
{
	void *p = calloc(nmemb ? nmemb : 1, size ? size : 1);
	if (!p)
		oom();
	return p;
}

#define TABLE_HUGE ((size_t)2 << 20)

void *weft_table_alloc(size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		oom();
	size_t bytes = nmemb * size;
	if (bytes < TABLE_HUGE)
		return weft_xcalloc(nmemb, size);
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
	if (p == MAP_FAILED)
		oom();
	madvise(p, bytes, MADV_HUGEPAGE); /* a hint: without it the table still works */
	return p;
}

void weft_table_free(void *p, size_t nmemb, size_t size)
{
	if (p == NULL)
		return;
	if (nmemb * size < TABLE_HUGE)
		free(p);
	else
		munmap(p, nmemb * size);
}

void *weft_xrealloc(void *p, size_t nmemb, size_t size)
{
	if (size && nmemb > SIZE_MAX / size)
		oom();
	size_t bytes = nmemb * size;
	void *q = realloc(p, bytes ? bytes : 1);
	if (!q)
		oom();
	return q;
}

char *weft_xstrdup(const char *s)
{
	size_t len = strlen(s) + 1;
	return memcpy(weft_xmalloc(len), s, len);
}

void *weft_xmemdup(const void *p, size_t len)
{
	void *out = weft_xmalloc(len ? len : 1);
	if (len)
		memcpy(out, p, len);
	return out;
}

/* ---- parsing ---- */

int weft_parse_u64n(const char *s, size_t len, uint64_t *out)
{
	uint64_t v = 0;

	if (len == 0 || (s[0] == '0' && len > 1))
		return WEFT_EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (s[i] < '0' || s[i] > '9')
			return WEFT_EINVAL;
		uint64_t d = (uint64_t)(s[i] - '0');
		if (v > (UINT64_MAX - d) / 10)
			return WEFT_EINVAL;
		v = v * 10 + d;
	}
	*out = v;
	return 0;
}

int weft_parse_u64(const char *s, uint64_t *out)
{
	return weft_parse_u64n(s, strlen(s), out);
}

void weft_json_escape(char *out, size_t cap, const char *in)
{
	static const char hex[] = "0123456789abcdef";
	size_t o = 0;
	for (; *in; in++) {
		unsigned char c = (unsigned char)*in;
		char esc[7];
		size_t n = 0;
		if (c == '"' || c == '\\') {
			esc[n++] = '\\', esc[n++] = (char)c;
		} else if (c < 0x20) {
			esc[n++] = '\\', esc[n++] = 'u', esc[n++] = '0', esc[n++] = '0';
			esc[n++] = hex[c >> 4], esc[n++] = hex[c & 15];
		} else {
			esc[n++] = (char)c;
		}
		if (o + n >= cap)
			break;
		memcpy(out + o, esc, n);
		o += n;
	}
	out[o] = '\0';
}

/* ---- files ---- */

static int write_all(int fd, const uint8_t *p, size_t len)
{
	while (len > 0) {
		ssize_t w = write(fd, p, len);
		if (w < 0 && errno == EINTR)
			continue;
		if (w < 0)
			return weft_err_from_errno(errno);
		if (w == 0)
			return WEFT_ENOSPC;
		p += w;
		len -= (size_t)w;
	}
	return 0;
}

/* fsync of the directory holding path, so that a rename into it is
 * durable.  Best effort: some file systems refuse to fsync a directory. */
static void sync_dir(const char *path)
{
	char *dir = weft_xstrdup(path);
	char *slash = strrchr(dir, '/');
	const char *d = ".";

	if (slash) {
		slash[slash == dir ? 1 : 0] = '\0';
		d = dir;
	}
	int fd = open(d, O_RDONLY | O_DIRECTORY | O_CLOEXEC);
	if (fd >= 0) {
		(void)fsync(fd);
		close(fd);
	}
	free(dir);
}

int weft_write_file_atomic(const char *path, const void *data, size_t len, mode_t mode)
{
	static const char suffix[] = ".tmp.XXXXXX";
	size_t plen = strlen(path);
	char *tmp = weft_xmalloc(plen + sizeof(suffix));
	int rc = 0, fd;

	memcpy(tmp, path, plen);
	memcpy(tmp + plen, suffix, sizeof(suffix));
	fd = mkostemp(tmp, O_CLOEXEC); /* mode 0600 until the fchmod below */
	if (fd < 0) {
		rc = weft_err_from_errno(errno);
		free(tmp);
		return rc;
	}
	if (fchmod(fd, mode) < 0)
		rc = weft_err_from_errno(errno);
	if (rc == 0)
		rc = write_all(fd, data, len);
	if (rc == 0 && fsync(fd) < 0)
		rc = weft_err_from_errno(errno);
	if (close(fd) < 0 && rc == 0)
		rc = weft_err_from_errno(errno);
	if (rc == 0 && rename(tmp, path) < 0)
		rc = weft_err_from_errno(errno);
	if (rc != 0)
		unlink(tmp);
	else
		sync_dir(path);
	free(tmp);
	return rc;
}
