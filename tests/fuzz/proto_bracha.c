/* tests/fuzz/proto_bracha.c - libFuzzer target for Bracha's broadcast
 * (protocols/brb/bracha.c) and the BRB core under it (protocols/brb/core.c):
 * every peer message type (SEND, ECHO, READY, and the core's STATUS and
 * DELIVERED) reaches on_message of node 0 of 4, interleaved with timers,
 * requests and restarts, through the script driver of
 * tests/fuzz/lib/protofuzz.h (input format there).  Two parameter sets:
 * small windows (beyond-window input, delivery GC, retention) and the
 * defaults without retention. */
#include "lib/protofuzz.h"

PF_BRB_FUZZ_TARGET(weft_proto_bracha)
