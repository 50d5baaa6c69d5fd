/*
 * fuzz_replay.c - main() for a libFuzzer target built without libFuzzer:
 * replays files (or every file of directories) given as arguments through
 * LLVMFuzzerTestOneInput, so that each committed corpus is a regression test
 * in every build, sanitized or not. Exit 1 when a file cannot be read, 77
 * (skipped) when an argument is missing.
 */
#include <dirent.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <sys/stat.h>

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size);

static int replay_file(const char *path)
{
	FILE *f = fopen(path, "rb");
	if (!f) {
		fprintf(stderr, "cannot open %s\n", path);
		return 1;
	}
	fseek(f, 0, SEEK_END);
	long n = ftell(f);
	fseek(f, 0, SEEK_SET);
	uint8_t *buf = malloc(n > 0 ? (size_t)n : 1);
	size_t got = buf ? fread(buf, 1, (size_t)n, f) : 0;
	fclose(f);
	LLVMFuzzerTestOneInput(buf, got);
	free(buf);
	return 0;
}

int main(int argc, char **argv)
{
	int files = 0, bad = 0;
	for (int i = 1; i < argc; i++) {
		struct stat st;
		if (stat(argv[i], &st)) {
			printf("SKIP: %s is missing\n", argv[i]);
			return 77;
		}
		if (!S_ISDIR(st.st_mode)) {
			bad += replay_file(argv[i]);
			files++;
			continue;
		}
		DIR *d = opendir(argv[i]);
		struct dirent *e;
		while (d && (e = readdir(d))) {
			if (e->d_name[0] == '.') continue;
			char path[4096];
			snprintf(path, sizeof path, "%s/%s", argv[i], e->d_name);
			bad += replay_file(path);
			files++;
		}
		if (d) closedir(d);
	}
	printf("%d inputs replayed\n", files);
	return bad ? 1 : 0;
}
