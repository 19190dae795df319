/* brb_matrix_coded.c - the BRB scenario suite for coded (see tests/lib/brb_matrix.c). */
#include "../lib/brb_matrix.h"

int main(void)
{
	return brb_matrix_run("coded");
}
