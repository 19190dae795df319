/* brb_matrix_echo.c - the BRB scenario suite for echo (see tests/lib/brb_matrix.c). */
#include "../lib/brb_matrix.h"

int main(void)
{
	return brb_matrix_run("echo");
}
