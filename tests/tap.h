/* tap.h - a small Test Anything Protocol producer for weft's C tests.
 *
 * Header-only.  plan(n) or done_testing() at the end; ok/is_int/is_str/is_mem
 * print "ok N - name" or "not ok N - name" with a diagnostic; skip(n, why)
 * records skipped tests; diag() prints "# ..." to stderr.  The exit status is
 * non-zero when a test failed or the count differs from the plan, so prove
 * and make see failures. */
#ifndef WEFT_TAP_H
#define WEFT_TAP_H

#include <inttypes.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int tap_run, tap_failed, tap_planned = -1;

__attribute__((unused)) static void tap_vdiag(const char *fmt, va_list ap)
{
	fflush(stdout);
	fputs("# ", stderr);
	vfprintf(stderr, fmt, ap);
	fputc('\n', stderr);
}

__attribute__((unused, format(printf, 1, 2))) static void diag(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tap_vdiag(fmt, ap);
	va_end(ap);
}

__attribute__((unused)) static void plan(int n)
{
	tap_planned = n;
	printf("1..%d\n", n);
	fflush(stdout);
}

__attribute__((unused, format(printf, 1, 2))) static void skip_all(const char *fmt, ...)
{
	va_list ap;
	printf("1..0 # skip ");
	va_start(ap, fmt);
	vprintf(fmt, ap);
	va_end(ap);
	printf("\n");
	exit(0);
}

static int tap_result(int pass, const char *fmt, va_list ap)
{
	tap_run++;
	if (!pass)
		tap_failed++;
	printf("%sok %d - ", pass ? "" : "not ", tap_run);
	vprintf(fmt, ap);
	printf("\n");
	fflush(stdout);
	return pass;
}

__attribute__((unused, format(printf, 2, 3))) static int ok(int pass, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	tap_result(pass, fmt, ap);
	va_end(ap);
	return pass;
}

__attribute__((unused, format(printf, 3, 4))) static int is_int(long long got, long long want, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int pass = tap_result(got == want, fmt, ap);
	va_end(ap);
	if (!pass)
		diag("     got: %lld\n#   expected: %lld", got, want);
	return pass;
}

__attribute__((unused, format(printf, 3, 4))) static int is_str(const char *got, const char *want, const char *fmt, ...)
{
	va_list ap;
	int same = (got == NULL && want == NULL) || (got && want && strcmp(got, want) == 0);
	va_start(ap, fmt);
	int pass = tap_result(same, fmt, ap);
	va_end(ap);
	if (!pass)
		diag("     got: '%s'\n#   expected: '%s'", got ? got : "(null)", want ? want : "(null)");
	return pass;
}

__attribute__((unused, format(printf, 4, 5))) static int is_mem(const void *got, const void *want, size_t len,
								 const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	int pass = tap_result(memcmp(got, want, len) == 0, fmt, ap);
	va_end(ap);
	if (!pass) {
		const unsigned char *g = got, *w = want;
		size_t i = 0;
		while (i < len && g[i] == w[i])
			i++;
		diag("  first difference at byte %zu of %zu: got 0x%02x, expected 0x%02x", i, len, g[i], w[i]);
	}
	return pass;
}

__attribute__((unused, format(printf, 2, 3))) static void skip(int n, const char *fmt, ...)
{
	va_list ap;
	for (int i = 0; i < n; i++) {
		tap_run++;
		printf("ok %d # skip ", tap_run);
		va_start(ap, fmt);
		vprintf(fmt, ap);
		va_end(ap);
		printf("\n");
	}
	fflush(stdout);
}

/* Ends the test program: prints the plan if none was given, returns the exit code. */
__attribute__((unused)) static int done_testing(void)
{
	if (tap_planned < 0)
		printf("1..%d\n", tap_run);
	else if (tap_planned != tap_run)
		diag("planned %d tests but ran %d", tap_planned, tap_run);
	fflush(stdout);
	if (tap_failed)
		diag("failed %d of %d tests", tap_failed, tap_run);
	return (tap_failed || (tap_planned >= 0 && tap_planned != tap_run)) ? 1 : 0;
}

#endif
