/*
 * main.c - the infill binary: picks a subcommand, or runs the language server.
 *
 * Editors start `infill` with no arguments (or with only server flags such as
 * --log-file), so anything that is not a known subcommand name is handed to
 * the server, which parses its own flags.
 */
#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "infill_config.h"

#define CLI_COMMANDS(X)                                                          \
	X(serve, "run the language server on stdio (the default)")               \
	X(complete, "complete FILE:LINE:COL once through the whole pipeline")    \
	X(context, "print the AST context slice for FILE:LINE:COL as JSON")      \
	X(validate, "validate a candidate inserted at FILE:LINE:COL")            \
	X(tokenize, "tokenize stdin with a model's vocabulary")                  \
	X(logits, "print the last position's top logits of a prompt as JSON")    \
	X(generate, "greedy-decode N tokens after a prompt")                     \
	X(bench, "measure prompt and decode speed against the memory bound")     \
	X(mkmodel, "write a random-weight Llama model, or grow a trained one")   \
	X(replay, "replay a typing session over LSP and report latency")         \
	X(eval, "measure completion quality on FIM cases cut from source files") \
	X(pull, "download a model by name or URL (resumable, checked)")          \
	X(models, "list the models `pull` knows, what fits here, what is downloaded")

struct cli_command {
	const char *name;
	int (*run)(int argc, char **argv);
	const char *help;
};

static const struct cli_command commands[] = {
#define X(name, help) { #name, cli_##name, help },
	CLI_COMMANDS(X)
#undef X
};

static void print_help(void)
{
	printf("infill %s - code completions from a model running inside an LSP daemon\n\n"
	       "usage: infill [SUBCOMMAND] [OPTIONS]\n\nsubcommands:\n",
	       INFILL_VERSION);
	for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
		printf("  %-10s %s\n", commands[i].name, commands[i].help);
	printf("\nRun `infill SUBCOMMAND --help` for its options. With no subcommand, infill\n"
	       "serves LSP on stdio; `infill serve --help` lists the server's flags.\n");
}

int main(int argc, char **argv)
{
	if (argc >= 2 && (!strcmp(argv[1], "--help") || !strcmp(argv[1], "-h"))) {
		print_help();
		return 0;
	}
	if (argc >= 2 && (!strcmp(argv[1], "--version") || !strcmp(argv[1], "-V"))) {
		printf("infill %s\n", INFILL_VERSION);
		return 0;
	}
	if (argc >= 2) {
		for (size_t i = 0; i < sizeof commands / sizeof commands[0]; i++)
			if (!strcmp(argv[1], commands[i].name))
				return commands[i].run(argc - 1, argv + 1);
	}
	/* No subcommand: the server, with argv[0] standing in for "serve". */
	return cli_serve(argc, argv);
}
