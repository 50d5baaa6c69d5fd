/*
 * test_context.c - context/: .gitignore rules, the workspace index (the
 * root boundary, links, ignored, big and generated files, the bounds,
 * imports resolved for each language, updates on save and on disk), the
 * recent ring, and the selection of chunks for a prompt.
 *
 * Each case builds a small project in a fresh temporary folder.
 */
#include <errno.h>
#include <ftw.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "context.h"
#include "harness.h"

/* ---- a project on disk ---- */

static int rm_entry(const char *p, const struct stat *sb, int flag, struct FTW *ftw)
{
	(void)sb, (void)flag, (void)ftw;
	return remove(p);
}

struct proj {
	char root[256];
};

static void proj_new(struct proj *p)
{
	const char *tmp = getenv("TMPDIR") ? getenv("TMPDIR") : "/tmp";
	if (snprintf(p->root, sizeof p->root, "%s/infill-ctx-XXXXXX", tmp) >= 200 ||
	    !mkdtemp(p->root))
		abort(); /* the tests need a short writable folder */
}

static void proj_free(struct proj *p)
{
	nftw(p->root, rm_entry, 16, FTW_DEPTH | FTW_PHYS);
}

/* Writes rel (folders made as needed). */
static void put(const struct proj *p, const char *rel, const char *text)
{
	char path[1024];
	if (snprintf(path, sizeof path, "%s/%s", p->root, rel) >= (int)sizeof path) abort();
	for (char *s = strchr(path + strlen(p->root) + 1, '/'); s; s = strchr(s + 1, '/')) {
		*s = 0;
		mkdir(path, 0755);
		*s = '/';
	}
	FILE *f = fopen(path, "w");
	if (!f) abort();
	fputs(text, f);
	fclose(f);
}

static char *abs_of(const struct proj *p, const char *rel, char *buf, size_t cap)
{
	snprintf(buf, cap, "%s/%s", p->root, rel);
	return buf;
}

static struct ctx_index *index_of(const struct proj *p, int max_files, int max_mb)
{
	struct ctx_index_params ip = { .root = p->root, .max_files = max_files, .max_mb = max_mb };
	struct ctx_index *ix = ctx_index_new(&ip);
	if (ix && ctx_index_scan(ix)) {
		ctx_index_free(ix);
		return NULL;
	}
	return ix;
}

/* What ctx_index_imported gives for the file rel, as relative paths joined
 * by spaces, sorted. */
static void imported(struct ctx_index *ix, const struct proj *p, const char *rel, char *out,
                     size_t cap)
{
	char abs[512], text[8192] = "";
	abs_of(p, rel, abs, sizeof abs);
	FILE *f = fopen(abs, "r");
	size_t len = f ? fread(text, 1, sizeof text - 1, f) : 0;
	if (f) fclose(f);
	text[len] = 0;
	const struct ast_lang *lang = ast_lang_from_path(rel);
	struct ast_outline o;
	out[0] = 0;
	if (ast_outline(lang, text, len, NULL, &o)) return;
	char **paths;
	int n = ctx_index_imported(ix, abs, lang, o.imports, o.n_imports, &paths, 16);
	ast_outline_finish(&o);
	/* sort by name for a stable answer */
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && strcmp(paths[k - 1], paths[k]) > 0; k--) {
			char *t = paths[k];
			paths[k] = paths[k - 1];
			paths[k - 1] = t;
		}
	const char *root = ctx_index_root(ix);
	for (int i = 0; i < n; i++) {
		const char *r = paths[i] + strlen(root) + 1;
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? " " : "", r);
		free(paths[i]);
	}
	free(paths);
}

/* ---- .gitignore ---- */

TEST(gitignore_subset)
{
	struct ctx_ignore *ig = ctx_ignore_new();
	const char *rules = "# comment\n"
	                    "*.log\n"
	                    "build/\n"
	                    "/only_root.py\n"
	                    "docs/**/gen_*.py\n"
	                    "secret[0-9].c\n"
	                    "!keep.log\n";
	CHECK_INT_EQ(ctx_ignore_add(ig, "", rules, strlen(rules)), 0);
	CHECK_INT_EQ(ctx_ignore_add(ig, "sub", "local.py\n", 9), 0);
	CHECK(ctx_ignore_match(ig, "a.log", false));
	CHECK(ctx_ignore_match(ig, "deep/x/a.log", false));
	CHECK(!ctx_ignore_match(ig, "keep.log", false)); /* negation wins, last rule */
	CHECK(ctx_ignore_match(ig, "build", true));
	CHECK(ctx_ignore_match(ig, "src/build", true));
	CHECK(!ctx_ignore_match(ig, "build", false)); /* a file named build: dir/ only */
	CHECK(ctx_ignore_match(ig, "only_root.py", false));
	CHECK(!ctx_ignore_match(ig, "sub/only_root.py", false)); /* anchored */
	CHECK(ctx_ignore_match(ig, "docs/gen_a.py", false));
	CHECK(ctx_ignore_match(ig, "docs/x/y/gen_a.py", false));
	CHECK(!ctx_ignore_match(ig, "docs/x/y/gen_a.c", false));
	CHECK(ctx_ignore_match(ig, "secret3.c", false));
	CHECK(!ctx_ignore_match(ig, "secretx.c", false));
	CHECK(ctx_ignore_match(ig, "sub/local.py", false)); /* a nested .gitignore */
	CHECK(ctx_ignore_match(ig, "sub/z/local.py", false));
	CHECK(!ctx_ignore_match(ig, "local.py", false)); /* not outside its folder */
	ctx_ignore_free(ig);
	ctx_ignore_free(NULL);
}

/* ---- the index ---- */

TEST(index_root_links_ignored_big_generated)
{
	struct proj p, outside;
	proj_new(&p);
	proj_new(&outside);
	put(&outside, "far.py", "def far_away(): pass\n");
	put(&p, ".gitignore", "ignored/\n*.tmp.py\n");
	put(&p, "a.py", "def alpha(x): return x\n");
	put(&p, "ignored/b.py", "def beta(): pass\n");
	put(&p, "c.tmp.py", "def gamma(): pass\n");
	put(&p, "node_modules/m.js", "function mod() {}\n");
	put(&p, "gen.py", "# Code generated by a tool. DO NOT EDIT.\ndef gen(): pass\n");
	put(&p, "notes.txt", "not source\n");
	char big[4096 * 2];
	memset(big, '#', sizeof big - 2);
	big[sizeof big - 2] = '\n';
	big[sizeof big - 1] = 0;
	put(&p, "big.py", big);
	char link[512], target[512];
	symlink(abs_of(&outside, "far.py", target, sizeof target),
	        abs_of(&p, "link.py", link, sizeof link));
	symlink(outside.root, abs_of(&p, "linkdir", link, sizeof link));

	struct ctx_index_params ip = {
		.root = p.root, .max_files = 100, .max_mb = 4, .max_file_bytes = 4096
	};
	struct ctx_index *ix = ctx_index_new(&ip);
	CHECK(ix != NULL);
	if (!ix) return;
	CHECK_INT_EQ(ctx_index_scan(ix), 0);
	struct ctx_index_stats st;
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.files, 1); /* a.py only */
	CHECK_INT_EQ(st.defs, 1);
	CHECK_INT_EQ(st.skipped_links, 2);
	CHECK_INT_EQ(st.skipped_big, 1);
	CHECK_INT_EQ(st.skipped_generated, 1);
	CHECK(st.skipped_ignored >= 2);
	CHECK(!st.truncated);
	/* a file outside the root cannot be added by an update */
	char far[512];
	CHECK_INT_EQ(ctx_index_update(ix, abs_of(&outside, "far.py", far, sizeof far)), -EPERM);
	/* nor through the link folder that leads out */
	char via[512];
	CHECK_INT_EQ(ctx_index_update(ix, abs_of(&p, "linkdir/far.py", via, sizeof via)), -EPERM);
	CHECK_INT_EQ(ctx_index_update(ix, "relative.py"), -EPERM);
	/* an ignored file saved stays out */
	char ig[512];
	CHECK_INT_EQ(ctx_index_update(ix, abs_of(&p, "ignored/b.py", ig, sizeof ig)), 0);
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.files, 1);
	ctx_index_free(ix);
	proj_free(&p);
	proj_free(&outside);
}

TEST(index_bounds_files_and_bytes)
{
	struct proj p;
	proj_new(&p);
	for (int i = 0; i < 12; i++) {
		char name[32], text[64];
		snprintf(name, sizeof name, "m%02d.py", i);
		snprintf(text, sizeof text, "def fn%02d(a, b):\n    return a\n", i);
		put(&p, name, text);
	}
	struct ctx_index *ix = index_of(&p, 5, 4);
	struct ctx_index_stats st;
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.files, 5);
	CHECK(st.truncated);
	ctx_index_free(ix);
	ix = index_of(&p, 100, 4);
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.files, 12);
	CHECK(!st.truncated);
	CHECK(st.bytes > 0 && st.bytes < 12 * 1024);
	CHECK_INT_EQ(st.texts, 12);
	ctx_index_free(ix);
	/* a file too big for its text to be kept is still indexed */
	size_t big_len = 300u << 10;
	char *big = malloc(big_len + 1);
	for (size_t i = 0; i < big_len; i++) big[i] = i % 40 == 39 ? '\n' : 'x';
	memcpy(big, "def big_fn(a):\n", 15);
	big[big_len] = 0;
	put(&p, "zbig.py", big);
	free(big);
	ix = index_of(&p, 100, 4);
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.files, 13);
	CHECK_INT_EQ(st.texts, 12);
	char abs[512], *text;
	size_t len;
	CHECK_INT_EQ(ctx_index_text(ix, abs_of(&p, "zbig.py", abs, sizeof abs), &text, &len), 0);
	CHECK(text == NULL);
	CHECK_INT_EQ(ctx_index_text(ix, abs_of(&p, "m03.py", abs, sizeof abs), &text, &len), 1);
	CHECK(text && !strcmp(text, "def fn03(a, b):\n    return a\n") && len == strlen(text));
	free(text);
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(index_follows_saves_and_disk_changes)
{
	struct proj p;
	proj_new(&p);
	put(&p, "pkg/__init__.py", "");
	put(&p, "pkg/util.py", "def old_name(x): pass\n");
	put(&p, "main.py", "from pkg.util import new_name\nnew_name(1)\n");
	struct ctx_index *ix = index_of(&p, 100, 4);
	char out[512];
	imported(ix, &p, "main.py", out, sizeof out);
	CHECK_STR_EQ(out, "pkg/util.py");
	struct ctx_index_stats st;
	ctx_index_stats(ix, &st);
	size_t defs0 = st.defs;
	/* saved with a new definition */
	put(&p, "pkg/util.py", "def new_name(x, y): pass\ndef other(): pass\n");
	char abs[512];
	CHECK_INT_EQ(ctx_index_update(ix, abs_of(&p, "pkg/util.py", abs, sizeof abs)), 0);
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.defs, defs0 + 1);
	CHECK_INT_EQ(st.updates, 1);
	/* a new file appears on disk (didChangeWatchedFiles: created) */
	put(&p, "pkg/extra.py", "def extra(): pass\n");
	CHECK_INT_EQ(ctx_index_update(ix, abs_of(&p, "pkg/extra.py", abs, sizeof abs)), 0);
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.files, 4);
	/* deleted */
	remove(abs_of(&p, "pkg/util.py", abs, sizeof abs));
	CHECK_INT_EQ(ctx_index_update(ix, abs), 0);
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.files, 3);
	imported(ix, &p, "main.py", out, sizeof out);
	CHECK_STR_EQ(out, "");
	/* a .gitignore saved: the rules are read again */
	put(&p, ".gitignore", "pkg/extra.py\n");
	CHECK_INT_EQ(ctx_index_update(ix, abs_of(&p, ".gitignore", abs, sizeof abs)), 0);
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.files, 2);
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(imports_python)
{
	struct proj p;
	proj_new(&p);
	put(&p, "app/__init__.py", "");
	put(&p, "app/models.py", "class Model: pass\n");
	put(&p, "app/sub/__init__.py", "");
	put(&p, "app/sub/helpers.py", "def h(): pass\n");
	put(&p, "app/views.py",
	    "from .models import Model\n"
	    "from . import sub\n"
	    "from app.sub.helpers import h\n"
	    "import os\n");
	put(&p, "app/sub/deep.py", "from ..models import Model\n");
	struct ctx_index *ix = index_of(&p, 100, 4);
	char out[512];
	imported(ix, &p, "app/views.py", out, sizeof out);
	/* `from . import sub`: the package itself, and sub if a module */
	CHECK_STR_EQ(out, "app/__init__.py app/models.py app/sub/__init__.py app/sub/helpers.py");
	imported(ix, &p, "app/sub/deep.py", out, sizeof out);
	CHECK_STR_EQ(out, "app/models.py");
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(imports_python_root_is_the_package)
{
	/* the workspace is the package folder itself (dist-packages/requests) */
	struct proj p;
	proj_new(&p);
	put(&p, "mypkg/models.py", "class Request: pass\n");
	put(&p, "mypkg/api.py", "from mypkg.models import Request\n");
	struct proj pkg = p;
	strcat(pkg.root, "/mypkg"); /* mkdtemp's name is short: it fits */
	struct ctx_index *ix = index_of(&pkg, 100, 4);
	char out[512];
	imported(ix, &pkg, "api.py", out, sizeof out);
	CHECK_STR_EQ(out, "models.py");
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(imports_c_cpp)
{
	struct proj p;
	proj_new(&p);
	put(&p, "include/lib/api.h", "int api_call(int);\n");
	put(&p, "src/list.h", "struct list;\n");
	put(&p, "src/list.c", "#include \"list.h\"\n#include <stdio.h>\n");
	put(&p, "src/main.c", "#include \"lib/api.h\"\n#include \"list.h\"\n");
	put(&p, "src/w.cpp", "#include \"../src/list.h\"\n");
	struct ctx_index *ix = index_of(&p, 100, 4);
	char out[512];
	imported(ix, &p, "src/main.c", out, sizeof out);
	CHECK_STR_EQ(out, "include/lib/api.h src/list.h");
	imported(ix, &p, "src/list.c", out, sizeof out);
	CHECK_STR_EQ(out, "src/list.h"); /* by include and by name: once */
	imported(ix, &p, "src/w.cpp", out, sizeof out);
	CHECK_STR_EQ(out, "src/list.h");
	ctx_index_free(ix);
	proj_free(&p);
}

/* What ctx_index_importers gives for rel, relative paths sorted, joined. */
static void importers(struct ctx_index *ix, const struct proj *p, const char *rel, char *out,
                      size_t cap)
{
	char abs[512];
	char **paths;
	out[0] = 0;
	int n = ctx_index_importers(ix, abs_of(p, rel, abs, sizeof abs), &paths, 16);
	for (int i = 1; i < n; i++)
		for (int k = i; k > 0 && strcmp(paths[k - 1], paths[k]) > 0; k--) {
			char *t = paths[k];
			paths[k] = paths[k - 1];
			paths[k - 1] = t;
		}
	const char *root = ctx_index_root(ix);
	for (int i = 0; i < n; i++) {
		snprintf(out + strlen(out), cap - strlen(out), "%s%s", i ? " " : "",
		         paths[i] + strlen(root) + 1);
		free(paths[i]);
	}
	free(paths);
}

TEST(importers_of_a_file)
{
	struct proj p;
	proj_new(&p);
	put(&p, "app/__init__.py", "");
	put(&p, "app/models.py", "class Model: pass\n");
	put(&p, "app/views.py", "from .models import Model\n");
	put(&p, "app/admin.py", "import app.models\n");
	put(&p, "app/other.py", "from .views import x\nimport models_extra\n");
	put(&p, "web/ui.js", "import { Model } from '../app/models';\n"); /* not kin */
	put(&p, "src/list.h", "int list_len(void);\n");
	put(&p, "src/list.c", "#include \"list.h\"\nint list_len(void) { return 0; }\n");
	put(&p, "src/main.c", "#include \"list.h\"\n");
	put(&p, "src/w.cpp", "#include \"../src/list.h\"\n");
	put(&p, "src/x.c", "#include \"other.h\"\n");
	struct ctx_index *ix = index_of(&p, 100, 4);
	char out[512];
	importers(ix, &p, "app/models.py", out, sizeof out);
	CHECK_STR_EQ(out, "app/admin.py app/views.py");
	importers(ix, &p, "src/list.h", out, sizeof out);
	CHECK_STR_EQ(out, "src/list.c src/main.c src/w.cpp");
	/* a .c file's names are declared in its header: it, and its includers */
	importers(ix, &p, "src/list.c", out, sizeof out);
	CHECK_STR_EQ(out, "src/list.h src/main.c src/w.cpp");
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(related_by_imports)
{
	struct proj p;
	proj_new(&p);
	put(&p, "ops/ctx.h", "struct ops_ctx { int n; };\n");
	put(&p, "ops/util.h", "int util_clamp(int);\n");
	put(&p, "ops/add.c", "#include \"ctx.h\"\n#include \"util.h\"\n#include <stdio.h>\n");
	put(&p, "ops/mul.c", "#include \"ctx.h\"\n#include \"util.h\"\n");
	put(&p, "ops/div.c", "#include \"../ops/ctx.h\"\n#include \"util.h\"\n#include \"x.h\"\n");
	put(&p, "ops/lone.c", "#include \"ctx.h\"\n"); /* one import in common */
	put(&p, "ops/other.c", "#include \"net.h\"\n#include \"io.h\"\n");  /* none */
	put(&p, "ops/both.h", "#include \"ctx.h\"\n#include \"util.h\"\n"); /* a header */
	put(&p, "ops/bare.c", "int main(void) { return 0; }\n");
	struct ctx_index *ix = index_of(&p, 100, 4);
	char abs[512], text[256];
	const char *add_c = "#include \"ctx.h\"\n#include \"util.h\"\n#include <stdio.h>\n";
	snprintf(text, sizeof text, "%s", add_c);
	const struct ast_lang *c = ast_lang_from_path("add.c");
	struct ast_outline o;
	CHECK_INT_EQ(ast_outline(c, text, strlen(text), NULL, &o), 0);
	char **paths = NULL;
	int n = ctx_index_related(ix, abs_of(&p, "ops/add.c", abs, sizeof abs), c, o.imports,
	                          o.n_imports, &paths, 8);
	/* mul.c shares both (Jaccard 1), div.c two of three (the same header
	 * under another path counts); lone.c one, other.c none, both.h is a
	 * header, bare.c imports nothing */
	CHECK_INT_EQ(n, 2);
	if (n == 2) {
		CHECK(strstr(paths[0], "/ops/mul.c") != NULL);
		CHECK(strstr(paths[1], "/ops/div.c") != NULL);
	}
	for (int i = 0; i < n; i++) free(paths[i]);
	free(paths);
	/* cap */
	n = ctx_index_related(ix, abs, c, o.imports, o.n_imports, &paths, 1);
	CHECK_INT_EQ(n, 1);
	for (int i = 0; i < n; i++) free(paths[i]);
	free(paths);
	ast_outline_finish(&o);
	/* a file with no imports has no relations */
	n = ctx_index_related(ix, abs_of(&p, "ops/bare.c", abs, sizeof abs), c, NULL, 0, &paths, 8);
	CHECK_INT_EQ(n, 0);
	free(paths);
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(imports_js_ts)
{
	struct proj p;
	proj_new(&p);
	put(&p, "src/util.ts", "export function clamp(x: number) { return x; }\n");
	put(&p, "src/lib/index.js", "export const lib = 1;\n");
	put(&p, "src/app.ts",
	    "import { clamp } from './util';\nimport { lib } from './lib';\n"
	    "import React from 'react';\n");
	struct ctx_index *ix = index_of(&p, 100, 4);
	char out[512];
	imported(ix, &p, "src/app.ts", out, sizeof out);
	CHECK_STR_EQ(out, "src/lib/index.js src/util.ts");
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(imports_go)
{
	struct proj p;
	proj_new(&p);
	put(&p, "go.mod", "module example.com/m\n");
	put(&p, "store/store.go", "package store\nfunc Get() int { return 1 }\n");
	put(&p, "cmd/main.go", "package main\nimport \"example.com/m/store\"\nfunc main() {}\n");
	put(&p, "cmd/flags.go", "package main\nfunc flags() {}\n");
	struct ctx_index *ix = index_of(&p, 100, 4);
	char out[512];
	imported(ix, &p, "cmd/main.go", out, sizeof out);
	CHECK_STR_EQ(out, "cmd/flags.go store/store.go"); /* the package, and its own */
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(imports_rust)
{
	struct proj p;
	proj_new(&p);
	put(&p, "src/lib.rs", "mod parser;\nmod net;\nuse crate::net::conn::Conn;\n");
	put(&p, "src/parser.rs", "pub fn parse() {}\n");
	put(&p, "src/net/mod.rs", "pub mod conn;\n");
	put(&p, "src/net/conn.rs", "pub struct Conn;\n");
	struct ctx_index *ix = index_of(&p, 100, 4);
	char out[512];
	imported(ix, &p, "src/lib.rs", out, sizeof out);
	CHECK_STR_EQ(out, "src/net/conn.rs src/net/mod.rs src/parser.rs");
	ctx_index_free(ix);
	proj_free(&p);
}

/* ---- the ring ---- */

TEST(ring_replaces_overlap_and_drops_oldest)
{
	struct ctx_ring *r = ctx_ring_new(2);
	const char *t = "l0\nl1\nl2\nl3\nl4\nl5\nl6\nl7\nl8\nl9\nl10\nl11\nl12\nl13\nl14\nl15\n"
	                "l16\nl17\nl18\nl19\nl20\nl21\nl22\nl23\nl24\nl25\nl26\nl27\nl28\nl29\n";
	size_t len = strlen(t);
	CHECK_INT_EQ(ctx_ring_add(r, "/a.py", t, len, 0), 0);
	CHECK_INT_EQ(ctx_ring_add(r, "/a.py", t, len, 6), 0); /* line 2: overlaps, replaces */
	CHECK_INT_EQ(ctx_ring_add(r, "/b.py", t, len, 0), 0);
	CHECK_INT_EQ(ctx_ring_add(r, "/c.py", t, len, 0), 0); /* full: a.py goes */
	struct ctx_query q = { .path = "/x.py",
		               .language_id = "python",
		               .text = "x = 1\n",
		               .len = 6,
		               .cursor = 6,
		               .ring = r,
		               .budget = 1000 };
	struct ctx_chunks ch;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK_INT_EQ(ch.n, 2);
	/* prompt order: the newest (c.py) nearest the prefix, last */
	if (ch.n == 2) {
		CHECK_STR_EQ(ch.v[0].path, "/b.py");
		CHECK_STR_EQ(ch.v[1].path, "/c.py");
		CHECK(ch.v[1].source == CTX_SOURCE_RECENT);
		CHECK(!strncmp(ch.v[1].text, "l0\n", 3) && strstr(ch.v[1].text, "l8\n") &&
		      !strstr(ch.v[1].text, "l9\n"));
	}
	ctx_chunks_finish(&ch);
	ctx_ring_forget(r, "/c.py");
	q.path = "/b.py"; /* the current document's own chunks are not offered */
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK_INT_EQ(ch.n, 0);
	ctx_chunks_finish(&ch);
	ctx_ring_free(r);
}

/* ---- selection ---- */

TEST(select_definitions_through_imports)
{
	struct proj p;
	proj_new(&p);
	put(&p, "shop/__init__.py", "");
	put(&p, "shop/cart.py",
	    "class Cart:\n"
	    "    def __init__(self, owner):\n"
	    "        self.items = []\n"
	    "    def add_item(self, sku, qty=1):\n"
	    "        self.items.append((sku, qty))\n"
	    "\n"
	    "def total_price(cart, discount=0.0):\n"
	    "    return sum(q for _, q in cart.items) * (1 - discount)\n");
	put(&p, "shop/unrelated.py", "def total_price(x): pass\n");
	const char *main_py = "from shop.cart import Cart, total_price\n"
	                      "\n"
	                      "def checkout(user):\n"
	                      "    cart = Cart(user)\n"
	                      "    cart.add_item('x')\n"
	                      "    return total_price(";
	put(&p, "main.py", main_py);
	struct ctx_index *ix = index_of(&p, 100, 4);
	char abs[512];
	struct ctx_query q = { .path = abs_of(&p, "main.py", abs, sizeof abs),
		               .language_id = "python",
		               .text = main_py,
		               .len = strlen(main_py),
		               .cursor = strlen(main_py),
		               .index = ix,
		               .budget = 400 };
	struct ctx_chunks ch;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	bool total = false, cart = false, wrong = false;
	size_t defs = 0;
	for (size_t i = 0; i < ch.n; i++) {
		CHECK(ch.v[i].tokens > 0);
		/* the imported file, as the index kept it, stands for an open tab */
		if (ch.v[i].source == CTX_SOURCE_SIMILAR) {
			CHECK_STR_EQ(ch.v[i].path, "shop/cart.py");
			continue;
		}
		CHECK(ch.v[i].source == CTX_SOURCE_DEFINITION);
		defs++;
		if (strstr(ch.v[i].text, "def total_price(cart, discount=0.0): ...")) {
			total = true;
			CHECK_STR_EQ(ch.v[i].path, "shop/cart.py");
			CHECK(strstr(ch.v[i].why, "imported") != NULL);
		}
		if (strstr(ch.v[i].text, "class Cart:") && strstr(ch.v[i].text, "def add_item"))
			cart = true;
		if (strstr(ch.v[i].text, "def total_price(x)")) wrong = true;
		CHECK(!strstr(ch.v[i].text, "append")); /* no bodies */
	}
	CHECK(total && cart && !wrong);
	CHECK(ch.tokens[CTX_SOURCE_DEFINITION] > 0);
	CHECK_INT_EQ(defs, 1); /* one file's signatures: one chunk under its path */
	size_t all = 0;
	for (size_t i = 0; i < ch.n; i++)
		if (ch.v[i].source == CTX_SOURCE_DEFINITION) all = ch.v[i].len;
	ctx_chunks_finish(&ch);
	/* a small budget keeps fewer, whole */
	q.budget = 20;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK(ch.n <= 1 && (ch.n == 0 || ch.v[0].len < all));
	size_t used = 0;
	for (size_t i = 0; i < ch.n; i++) used += ch.v[i].tokens;
	CHECK(used <= 20);
	ctx_chunks_finish(&ch);
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(select_similar_chunk_of_open_document)
{
	const char *other = "import numpy as np\n\n"
	                    "def unrelated():\n    return 42\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n\n"
	                    "def load_frames(reader, frame_count, stride):\n"
	                    "    frames = []\n"
	                    "    for index in range(0, frame_count, stride):\n"
	                    "        frames.append(reader.read_frame(index))\n"
	                    "    return frames\n";
	const char *cur = "def load_all(reader, frame_count):\n"
	                  "    frames = []\n"
	                  "    for index in range(frame_count):\n"
	                  "        ";
	struct ctx_doc open[2] = { { "/p/video.py", other, strlen(other) },
		                   { "/p/cur.py", cur, strlen(cur) } };
	struct ctx_query q = { .path = "/p/cur.py",
		               .language_id = "python",
		               .text = cur,
		               .len = strlen(cur),
		               .cursor = strlen(cur),
		               .open = open,
		               .n_open = 2,
		               .budget = 500 };
	struct ctx_chunks ch;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK_INT_EQ(ch.n, 1);
	if (ch.n) {
		CHECK(ch.v[0].source == CTX_SOURCE_SIMILAR);
		CHECK(strstr(ch.v[0].text, "reader.read_frame(index)") != NULL);
		CHECK(ch.v[0].score >= 0.1);
		CHECK(strstr(ch.v[0].why, "Jaccard") != NULL);
	}
	/* the other document's lines are offered for the candidates */
	CHECK(ch.lines && strstr(ch.lines, "frames.append(reader.read_frame(index))"));
	size_t whole = ch.n ? ch.v[0].len : 0;
	ctx_chunks_finish(&ch);
	/* a budget short of the chunk: cut to the lines that fit, 3 at least */
	q.budget = 40;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK_INT_EQ(ch.n, 1);
	if (ch.n) {
		size_t lines = 0;
		for (size_t i = 0; i < ch.v[0].len; i++) lines += ch.v[0].text[i] == '\n';
		CHECK(ch.v[0].len < whole && lines >= 3 && ch.v[0].tokens <= 40);
		CHECK(ch.v[0].text[ch.v[0].len - 1] == '\n'); /* whole lines */
	}
	ctx_chunks_finish(&ch);
	q.budget = 5; /* not even 3 lines: none */
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK_INT_EQ(ch.n, 0);
	ctx_chunks_finish(&ch);
}

TEST(select_lines_of_related_files)
{
	struct proj p;
	proj_new(&p);
	put(&p, "ops/ctx.h", "struct ops_ctx { int n; unsigned flags; };\n#define OPS_SKIP 1\n");
	put(&p, "ops/util.h", "int util_clamp(int);\n");
	put(&p, "ops/mul.c",
	    "#include \"ctx.h\"\n#include \"util.h\"\n\n"
	    "int ops_mul(struct ops_ctx *octx) {\n"
	    "    if (octx->flags & OPS_SKIP) {\n"
	    "        return 0;\n"
	    "    }\n"
	    "    return util_clamp(octx->n * 2);\n"
	    "}\n");
	put(&p, "ops/unrelated.c", "#include \"net.h\"\nint net_only_line_here(void);\n");
	const char *add_c = "#include \"ctx.h\"\n#include \"util.h\"\n\n"
	                    "int ops_add(struct ops_ctx *octx) {\n"
	                    "    if (";
	put(&p, "ops/add.c", add_c);
	struct ctx_index *ix = index_of(&p, 100, 4);
	char abs[512];
	struct ctx_query q = { .path = abs_of(&p, "ops/add.c", abs, sizeof abs),
		               .language_id = "c",
		               .text = add_c,
		               .len = strlen(add_c),
		               .cursor = strlen(add_c),
		               .index = ix,
		               .budget = 400,
		               .read_imported = true };
	struct ctx_chunks ch;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	/* the sibling's lines are offered as candidates; the unrelated file's not */
	CHECK(ch.lines && strstr(ch.lines, "if (octx->flags & OPS_SKIP) {"));
	CHECK(!ch.lines || !strstr(ch.lines, "net_only_line_here"));
	ctx_chunks_finish(&ch);
	/* the server's query reads nothing from disk: the index's copy of
	 * the sibling, as the scan read it, stands in (a change on disk that
	 * no update announced is not seen) */
	struct ctx_index_stats st;
	ctx_index_stats(ix, &st);
	CHECK_INT_EQ(st.texts, st.files);
	CHECK(st.text_bytes > 0 && st.text_bytes < st.bytes);
	put(&p, "ops/mul.c", "#include \"ctx.h\"\n#include \"util.h\"\nint changed_on_disk;\n");
	q.read_imported = false;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK(ch.lines && strstr(ch.lines, "if (octx->flags & OPS_SKIP) {"));
	CHECK(!strstr(ch.lines, "changed_on_disk"));
	ctx_chunks_finish(&ch);
	/* an open sibling is its editor's text, not also the index's copy */
	char mul[512];
	const char *mul_open = "#include \"ctx.h\"\n#include \"util.h\"\nint edited_in_editor;\n";
	struct ctx_doc od = { abs_of(&p, "ops/mul.c", mul, sizeof mul), mul_open,
		              strlen(mul_open) };
	q.open = &od;
	q.n_open = 1;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK(ch.lines && strstr(ch.lines, "edited_in_editor"));
	CHECK(!strstr(ch.lines, "OPS_SKIP) {"));
	ctx_chunks_finish(&ch);
	/* an update reads it again */
	q.open = NULL;
	q.n_open = 0;
	CHECK_INT_EQ(ctx_index_update(ix, mul), 0);
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK(ch.lines && strstr(ch.lines, "changed_on_disk"));
	ctx_chunks_finish(&ch);
	ctx_index_free(ix);
	proj_free(&p);
}

TEST(select_related_files_most_like_the_cursor)
{
	/* five siblings tie on their imports; the three looked into are the
	 * ones most like the lines around the cursor, not the first three by
	 * name */
	struct proj p;
	proj_new(&p);
	put(&p, "ops/ctx.h", "struct ops_ctx { int n; unsigned flags; };\n");
	put(&p, "ops/util.h", "int util_clamp(int);\n");
	const char *head = "#include \"ctx.h\"\n#include \"util.h\"\n\n";
	for (int i = 0; i < 4; i++) {
		char name[32], text[512];
		snprintf(name, sizeof name, "ops/%c.c", 'a' + i);
		snprintf(
		        text, sizeof text,
		        "%sstatic float table_%c[4];\nvoid fill_%c(void) { table_%c[0] = 1.0f; }\n",
		        head, 'a' + i, 'a' + i, 'a' + i);
		put(&p, name, text);
	}
	char z[512];
	snprintf(z, sizeof z,
	         "%sint ops_scale(struct ops_ctx *octx, int factor) {\n"
	         "    int scaled = util_clamp(octx->n * factor);\n"
	         "    octx->flags |= OPS_SCALED_FLAG;\n"
	         "    return scaled;\n}\n",
	         head);
	put(&p, "ops/z.c", z);
	char cur[512];
	snprintf(cur, sizeof cur,
	         "%sint ops_shift(struct ops_ctx *octx, int factor) {\n"
	         "    int scaled = util_clamp(octx->n << factor);\n"
	         "    octx->",
	         head);
	put(&p, "ops/shift.c", cur);
	struct ctx_index *ix = index_of(&p, 100, 4);
	char abs[512];
	struct ctx_query q = { .path = abs_of(&p, "ops/shift.c", abs, sizeof abs),
		               .language_id = "c",
		               .text = cur,
		               .len = strlen(cur),
		               .cursor = strlen(cur),
		               .index = ix,
		               .budget = 400 };
	struct ctx_chunks ch;
	for (int disk = 0; disk < 2; disk++) { /* the server's way, then eval's */
		q.read_imported = disk;
		CHECK_INT_EQ(ctx_select(&q, &ch), 0);
		CHECK(ch.lines && strstr(ch.lines, "octx->flags |= OPS_SCALED_FLAG;"));
		int others = 0;
		for (int i = 0; i < 4; i++) {
			char fn[32];
			snprintf(fn, sizeof fn, "void fill_%c", 'a' + i);
			others += ch.lines && strstr(ch.lines, fn) != NULL;
		}
		CHECK_INT_EQ(others, 2);
		ctx_chunks_finish(&ch);
	}
	ctx_index_free(ix);
	proj_free(&p);
}

/* Lines of another language are no answer: with a .py, a .c, a .h and a
 * .ts open, a .js document is offered the TypeScript lines only, a .c one
 * the header's and the C file's; a language without a grammar its own
 * extension's. */
TEST(select_lines_of_the_same_language_only)
{
	const char *py =
	        "class Item:\n    def total(self):\n        return self.price * self.quantity\n";
	const char *js = "function total(cart) {\n  return cart.items.length;\n}\n";
	const char *ts = "export function count(c: Cart): number {\n  return c.items.length;\n}\n";
	const char *c = "int ring_len(struct ring *r)\n{\n    return r->head - r->tail;\n}\n";
	const char *h = "static inline int ring_empty(struct ring *r)\n{\n    return !r->n;\n}\n";
	const char *txt = "return the books by friday\n";
	struct ctx_doc open[6] = {
		{ "/p/inventory.py", py, strlen(py) }, { "/p/ring.c", c, strlen(c) },
		{ "/p/ring.h", h, strlen(h) },         { "/p/count.ts", ts, strlen(ts) },
		{ "/p/cart.js", js, strlen(js) },      { "/p/notes.txt", txt, strlen(txt) },
	};
	const char *cur = "function price(cart) {\n  ret";
	struct ctx_query q = { .path = "/p/price.js",
		               .language_id = "javascript",
		               .text = cur,
		               .len = strlen(cur),
		               .cursor = strlen(cur),
		               .open = open,
		               .n_open = 6,
		               .budget = 500 };
	struct ctx_chunks ch;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK(ch.lines && strstr(ch.lines, "return cart.items.length;"));
	CHECK(ch.lines && strstr(ch.lines, "return c.items.length;")); /* TypeScript: kin */
	CHECK(!ch.lines || !strstr(ch.lines, "self.price"));
	CHECK(!ch.lines || !strstr(ch.lines, "r->head"));
	CHECK(!ch.lines || !strstr(ch.lines, "books"));
	ctx_chunks_finish(&ch);

	q.path = "/p/main.c";
	q.language_id = "c";
	q.text = cur = "int main(void)\n{\n    ret";
	q.len = q.cursor = strlen(cur);
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK(ch.lines && strstr(ch.lines, "r->head") && strstr(ch.lines, "!r->n"));
	CHECK(!ch.lines || (!strstr(ch.lines, "self.price") && !strstr(ch.lines, "cart.items")));
	ctx_chunks_finish(&ch);

	q.path = "/p/todo.txt";
	q.language_id = "plaintext";
	q.text = cur = "ret";
	q.len = q.cursor = strlen(cur);
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK(ch.lines && strstr(ch.lines, "books"));
	CHECK(!ch.lines || !strstr(ch.lines, "self.price"));
	ctx_chunks_finish(&ch);
}

TEST(select_nothing_without_project_context)
{
	const char *cur = "def f(x):\n    return g(x)\n";
	struct ctx_query q = { .language_id = "python",
		               .text = cur,
		               .len = strlen(cur),
		               .cursor = 10,
		               .budget = 500 };
	struct ctx_chunks ch;
	CHECK_INT_EQ(ctx_select(&q, &ch), 0);
	CHECK_INT_EQ(ch.n, 0);
	CHECK(ch.lines == NULL);
	ctx_chunks_finish(&ch);
}

TEST_MAIN()
