/* args.c - turns weft-cli's command-line parameters (the arguments after
 * METHOD) into the params array of a msgpack-RPC request: nothing, one JSON
 * object (named parameters), one JSON array (positional parameters), or a
 * list of key=value pairs gathered into one map.  The rules are in cli.h;
 * they are kept here, apart from main.c, so that the unit test can run
 * them. */
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "weft/err.h"

#include "cli.h"

__attribute__((format(printf, 3, 4))) static int fail(char *err, size_t errlen, const char *fmt, ...)
{
	va_list ap;

	if (errlen > 0) {
		va_start(ap, fmt);
		vsnprintf(err, errlen, fmt, ap);
		va_end(ap);
	}
	return WEFT_EINVAL;
}

/* jansson constructors fail only on out-of-memory here; weft aborts on OOM. */
static json_t *must(json_t *v)
{
	if (!v)
		abort();
	return v;
}

/* One argument that is a whole JSON object or array. */
static int parse_json_arg(const char *arg, json_t **params, char *err, size_t errlen)
{
	json_error_t jerr;
	const char *what = arg[0] == '{' ? "object" : "array";
	json_t *v = json_loads(arg, JSON_ALLOW_NUL, &jerr);

	if (!v)
		return fail(err, errlen, "invalid JSON %s argument (column %d): %s", what, jerr.column,
			    jerr.text);
	if (json_is_object(v)) {
		json_t *arr = must(json_array());
		if (json_array_append_new(arr, v) < 0)
			abort();
		*params = arr;
	} else {
		*params = v;
	}
	return 0;
}

/* The value part of key=value: JSON when it parses, else a plain string. */
static json_t *parse_value(const char *val)
{
	json_t *v = json_loads(val, JSON_DECODE_ANY | JSON_ALLOW_NUL, NULL);

	if (v)
		return v;
	if (!weft_utf8_valid(val, strlen(val)))
		return NULL;
	return must(json_string_nocheck(val));
}

static int parse_pairs(int argc, char *const argv[], json_t *map, char *err, size_t errlen)
{
	for (int i = 0; i < argc; i++) {
		const char *arg = argv[i];
		const char *eq = strchr(arg, '=');
		size_t klen;

		if (!eq)
			return fail(err, errlen, "argument '%s' is not key=value", arg);
		klen = (size_t)(eq - arg);
		if (klen == 0)
			return fail(err, errlen, "argument '%s' has an empty key", arg);
		if (!weft_utf8_valid(arg, klen))
			return fail(err, errlen, "the key of argument %d is not valid UTF-8", i + 1);
		if (json_object_getn(map, arg, klen))
			return fail(err, errlen, "key '%.*s' is given more than once", (int)klen, arg);
		json_t *v = parse_value(eq + 1);
		if (!v)
			return fail(err, errlen, "the value of '%.*s' is not valid UTF-8", (int)klen, arg);
		if (json_object_setn_new_nocheck(map, arg, klen, v) < 0)
			abort(); /* out of memory: key and value are valid */
	}
	return 0;
}

int weft_cli_parse_params(int argc, char *const argv[], json_t **params, char *err, size_t errlen)
{
	json_t *map, *arr;
	int rc;

	*params = NULL;
	if (errlen > 0)
		err[0] = '\0';
	if (argc <= 0) {
		*params = must(json_array());
		return 0;
	}
	if (argc == 1 && (argv[0][0] == '{' || argv[0][0] == '['))
		return parse_json_arg(argv[0], params, err, errlen);

	map = must(json_object());
	rc = parse_pairs(argc, argv, map, err, errlen);
	if (rc < 0) {
		json_decref(map);
		return rc;
	}
	arr = must(json_array());
	if (json_array_append_new(arr, map) < 0)
		abort();
	*params = arr;
	return 0;
}
