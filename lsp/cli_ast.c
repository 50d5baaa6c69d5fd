/* cli_ast.c - placeholder until its owner lands it. */
#include <stdio.h>

#include "cli.h"

int cli_context(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: context is not implemented yet\n");
	return 1;
}

int cli_validate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: validate is not implemented yet\n");
	return 1;
}

