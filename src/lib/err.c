/* err.c - names for weft's error codes (see include/weft/err.h). */
#include <errno.h>
#include <string.h>

#include "weft/err.h"

const char *weft_strerror(int code)
{
	switch ((enum weft_err)code) {
	case WEFT_OK: return "success";
	case WEFT_NOTFOUND: return "not found";
	case WEFT_EINVAL: return "invalid argument";
	case WEFT_EIO: return "I/O error";
	case WEFT_ENOSPC: return "no space left: disk full or file size limit reached";
	case WEFT_EMAPFULL: return "database map is full: raise db.map_size in the config";
	case WEFT_EDECODE: return "malformed encoding";
	case WEFT_ETOOBIG: return "exceeds the size limit";
	case WEFT_ECONFIG: return "bad configuration";
	case WEFT_ELOCKED: return "in use by another process";
	case WEFT_EPERM: return "permission denied";
	case WEFT_ECRYPTO: return "cryptographic check failed";
	case WEFT_ESTATE: return "not valid in the current state";
	case WEFT_EAGAIN: return "try again: more input needed or queue full";
	case WEFT_ECLOSED: return "closed";
	case WEFT_ETIMEDOUT: return "timed out";
	case WEFT_EPROTO: return "protocol violation";
	case WEFT_EUNSUPPORTED: return "unsupported";
	case WEFT_EEXIST: return "already exists";
	case WEFT_ECORRUPT: return "stored data is corrupt";
	case WEFT_ENOENT: return "no such file or directory";
	}
	if (code < 0 && code > -4096)
		return strerror(-code);
	return "unknown error";
}

int weft_err_from_errno(int e)
{
	switch (e) {
	case 0: return WEFT_OK;
	case ENOENT: return WEFT_ENOENT;
	case EINVAL: return WEFT_EINVAL;
	case ENOSPC:
	case EFBIG:
	case EDQUOT: return WEFT_ENOSPC;
	case EACCES:
	case EPERM:
	case EROFS: return WEFT_EPERM;
	case EAGAIN: return WEFT_EAGAIN;
	case ETIMEDOUT: return WEFT_ETIMEDOUT;
	case EEXIST: return WEFT_EEXIST;
	case ENOMEM: return WEFT_EIO;
	default: return WEFT_EIO;
	}
}
