/* version.h - weft's release version and the RPC protocol revision. */
#ifndef WEFT_VERSION_H
#define WEFT_VERSION_H

#define WEFT_VERSION "0.1.0"
/* Bumped when an RPC method changes incompatibly. */
#define WEFT_RPC_PROTOCOL 1

#endif
