/* brb_matrix_amortized.c - the BRB scenario suite for amortized (see tests/lib/brb_matrix.c). */
#include "../lib/brb_matrix.h"

int main(void)
{
	return brb_matrix_run("amortized");
}
