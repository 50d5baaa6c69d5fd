/* cli_model.c - placeholder until its owner lands it. */
#include <stdio.h>

#include "cli.h"

int cli_logits(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: logits is not implemented yet\n");
	return 1;
}

int cli_generate(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: generate is not implemented yet\n");
	return 1;
}

int cli_bench(int argc, char **argv)
{
	(void)argc;
	(void)argv;
	fprintf(stderr, "infill: bench is not implemented yet\n");
	return 1;
}

