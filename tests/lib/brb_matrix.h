/* brb_matrix.h - the BRB scenario suite (brb_matrix.c), run by one test
 * program per protocol so that prove can run them in parallel. */
#ifndef WEFT_BRB_MATRIX_H
#define WEFT_BRB_MATRIX_H

/* Runs every (n, fault case) for protocol; returns done_testing()'s code. */
int brb_matrix_run(const char *protocol);

#endif
