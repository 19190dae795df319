/* err.h - weft's error codes and weft_strerror().
 *
 * Every fallible function returns 0 on success or one of the negative codes
 * below.  The band starts at -2000 so that it never collides with errno
 * values or LMDB's own codes.  "Not found" is a result, not an error: lookups
 * return the positive WEFT_NOTFOUND. */
#ifndef WEFT_ERR_H
#define WEFT_ERR_H

enum weft_err {
	WEFT_OK = 0,
	WEFT_NOTFOUND = 1,       /* a normal result: the key/item is absent */
	WEFT_EINVAL = -2001,     /* invalid argument */
	WEFT_EIO = -2002,        /* I/O or system call failure */
	WEFT_ENOSPC = -2003,     /* disk full or file size limit reached */
	WEFT_EMAPFULL = -2004,   /* LMDB map size reached: raise db.map_size */
	WEFT_EDECODE = -2005,    /* malformed encoding */
	WEFT_ETOOBIG = -2006,    /* exceeds a configured or protocol limit */
	WEFT_ECONFIG = -2007,    /* bad configuration */
	WEFT_ELOCKED = -2008,    /* resource in use by another process */
	WEFT_EPERM = -2009,      /* permission denied */
	WEFT_ECRYPTO = -2010,    /* bad signature, MAC or key */
	WEFT_ESTATE = -2011,     /* operation not valid in the current state */
	WEFT_EAGAIN = -2012,     /* need more input, or try later (backpressure) */
	WEFT_ECLOSED = -2013,    /* connection or object closed */
	WEFT_ETIMEDOUT = -2014,  /* timed out */
	WEFT_EPROTO = -2015,     /* protocol violation by a peer */
	WEFT_EUNSUPPORTED = -2016, /* unsupported version, type or option */
	WEFT_EEXIST = -2017,     /* already exists */
	WEFT_ECORRUPT = -2018,   /* stored data failed an integrity check */
	WEFT_ENOENT = -2019,     /* no such file or directory */
};

/* Returns a static, human-readable description of a weft code (or of a
 * negated errno value passed as -errno).  Never NULL. */
const char *weft_strerror(int code);

/* Maps an errno value to the nearest weft code; always negative (0 for 0). */
int weft_err_from_errno(int e);

#endif
