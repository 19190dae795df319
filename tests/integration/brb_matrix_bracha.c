/* brb_matrix_bracha.c - the BRB scenario suite for bracha (see tests/lib/brb_matrix.c). */
#include "../lib/brb_matrix.h"

int main(void)
{
	return brb_matrix_run("bracha");
}
