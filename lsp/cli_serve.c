/* cli_serve.c - placeholder until its owner lands it. */
#include <stdio.h>

#include "cli.h"

int cli_serve(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: serve is not implemented yet\n");
	return 1;
}

