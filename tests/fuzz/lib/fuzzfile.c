/* fuzzfile.c - in-memory input files and a scratch directory for fuzz
 * targets (fuzzfile.h). */
#include <dirent.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <unistd.h>

#include "fuzzfile.h"

char *ff_input_text(const void *data, size_t len)
{
	char *text = malloc(len + 1);
	if (text == NULL)
		abort();
	memcpy(text, data, len);
	text[len] = '\0';
	return text;
}

const char *ff_input_path(const void *data, size_t len)
{
	static int fd = -1;
	static char path[64];
	if (fd < 0) {
		fd = memfd_create("weft-fuzz-input", 0);
		if (fd < 0)
			abort();
		snprintf(path, sizeof(path), "/proc/self/fd/%d", fd);
	}
	if (ftruncate(fd, 0) != 0 || (len && pwrite(fd, data, len, 0) != (ssize_t)len))
		abort();
	return path;
}

static char scratch[4096];

static void scratch_remove(void)
{
	DIR *d = opendir(scratch);
	struct dirent *e;
	char p[8192];
	if (d == NULL)
		return;
	while ((e = readdir(d)) != NULL) {
		if (strcmp(e->d_name, ".") == 0 || strcmp(e->d_name, "..") == 0)
			continue;
		snprintf(p, sizeof(p), "%s/%s", scratch, e->d_name);
		unlink(p);
	}
	closedir(d);
	rmdir(scratch);
}

const char *ff_scratch_path(const char *name)
{
	static char path[8192];
	if (scratch[0] == '\0') {
		const char *tmp = getenv("TMPDIR");
		snprintf(scratch, sizeof(scratch), "%s/weft-fuzz.XXXXXX", tmp && *tmp ? tmp : "/tmp");
		if (mkdtemp(scratch) == NULL)
			abort();
		atexit(scratch_remove);
	}
	snprintf(path, sizeof(path), "%s/%s", scratch, name);
	return path;
}
