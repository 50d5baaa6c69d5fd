/*
 * test_outline.c - ast_outline() and ast_names_near(): the definitions a
 * file offers to the others (signatures, not bodies) and the imports by
 * which they are found, for each language the workspace index reads.
 */
#include <string.h>

#include "ast.h"
#include "harness.h"

static const struct ast_def *def_named(const struct ast_outline *o, const char *name)
{
	for (size_t i = 0; i < o->n_defs; i++)
		if (!strcmp(o->defs[i].name, name)) return &o->defs[i];
	return NULL;
}

static bool has_import(const struct ast_outline *o, enum ast_import_kind kind, const char *spec)
{
	for (size_t i = 0; i < o->n_imports; i++)
		if (o->imports[i].kind == kind && !strcmp(o->imports[i].spec, spec)) return true;
	return false;
}

static int outline_of(const char *lang_id, const char *text, struct ast_outline *o)
{
	return ast_outline(ast_lang_from_id(lang_id), text, strlen(text), NULL, o);
}

TEST(python_defs_and_imports)
{
	const char *src = "import os.path\n"
	                  "import numpy as np\n"
	                  "from .models import Request, Response as R\n"
	                  "from . import utils\n"
	                  "from ..pkg.sub import thing\n"
	                  "\n"
	                  "def fetch(url, timeout=10):\n"
	                  "    secret_body = 1\n"
	                  "    return secret_body\n"
	                  "\n"
	                  "@decorator\n"
	                  "def wrapped(a):\n"
	                  "    pass\n"
	                  "\n"
	                  "class Session(Base):\n"
	                  "    def __init__(self, retries):\n"
	                  "        self.retries = retries\n"
	                  "    def send(self, request, **kw):\n"
	                  "        return request\n";
	struct ast_outline o;
	CHECK_INT_EQ(outline_of("python", src, &o), 0);
	const struct ast_def *d = def_named(&o, "fetch");
	CHECK(d != NULL);
	if (d) {
		CHECK_STR_EQ(d->sig, "def fetch(url, timeout=10): ...");
		CHECK(strstr(d->sig, "secret_body") == NULL); /* no body */
	}
	d = def_named(&o, "wrapped");
	CHECK(d && strstr(d->sig, "@decorator") && strstr(d->sig, "def wrapped(a)"));
	d = def_named(&o, "Session");
	CHECK(d && strstr(d->sig, "class Session(Base):") && strstr(d->sig, "def send(self"));
	/* methods are found by their own name too */
	d = def_named(&o, "send");
	CHECK(d && strstr(d->sig, "def send(self, request, **kw)"));
	CHECK(has_import(&o, AST_IMPORT_PYTHON, "os.path"));
	CHECK(has_import(&o, AST_IMPORT_PYTHON, "numpy"));
	CHECK(has_import(&o, AST_IMPORT_PYTHON, ".models"));
	CHECK(has_import(&o, AST_IMPORT_PYTHON, ".models.Request"));
	CHECK(has_import(&o, AST_IMPORT_PYTHON, ".utils"));
	CHECK(has_import(&o, AST_IMPORT_PYTHON, "..pkg.sub"));
	ast_outline_finish(&o);
}

TEST(c_header_guard_prototypes_macros)
{
	const char *src = "#ifndef LIST_H\n"
	                  "#define LIST_H\n"
	                  "#include \"node.h\"\n"
	                  "#include <stdio.h>\n"
	                  "#define LIST_MAX(a, b) ((a) > (b) ? (a) : (b))\n"
	                  "struct list { int n; struct node *head; };\n"
	                  "int list_push(struct list *l, int v);\n"
	                  "static inline int list_len(const struct list *l) { return l->n; }\n"
	                  "#endif\n";
	struct ast_outline o;
	CHECK_INT_EQ(outline_of("c", src, &o), 0);
	const struct ast_def *d = def_named(&o, "list_push");
	CHECK(d && !strcmp(d->sig, "int list_push(struct list *l, int v);"));
	d = def_named(&o, "list_len");
	CHECK(d && strstr(d->sig, "list_len(const struct list *l)") && !strstr(d->sig, "return"));
	CHECK(def_named(&o, "LIST_MAX") != NULL);
	d = def_named(&o, "list");
	CHECK(d && strstr(d->sig, "struct node *head"));
	CHECK(has_import(&o, AST_IMPORT_INCLUDE, "node.h"));
	CHECK(!has_import(&o, AST_IMPORT_INCLUDE, "stdio.h")); /* a system header */
	ast_outline_finish(&o);
}

TEST(js_ts_relative_imports_and_exports)
{
	const char *src = "import { a } from './util';\n"
	                  "import React from 'react';\n"
	                  "export { b } from '../lib/b.js';\n"
	                  "export function render(el, opts) { return el; }\n"
	                  "class View { paint(x) { return x; } }\n";
	struct ast_outline o;
	CHECK_INT_EQ(outline_of("typescript", src, &o), 0);
	CHECK(has_import(&o, AST_IMPORT_RELATIVE, "./util"));
	CHECK(has_import(&o, AST_IMPORT_RELATIVE, "../lib/b.js"));
	CHECK(!has_import(&o, AST_IMPORT_RELATIVE, "react"));
	const struct ast_def *d = def_named(&o, "render");
	CHECK(d && strstr(d->sig, "function render(el, opts)") && !strstr(d->sig, "return"));
	CHECK(def_named(&o, "View") && def_named(&o, "paint"));
	ast_outline_finish(&o);
}

TEST(go_imports_and_methods)
{
	const char *src = "package store\n"
	                  "import (\n\t\"fmt\"\n\t\"example.com/m/cache\"\n)\n"
	                  "import \"os\"\n"
	                  "type Store struct { n int }\n"
	                  "func (s *Store) Get(k string) (int, error) { return 0, nil }\n"
	                  "func New() *Store { return &Store{} }\n";
	struct ast_outline o;
	CHECK_INT_EQ(outline_of("go", src, &o), 0);
	CHECK(has_import(&o, AST_IMPORT_GO, "example.com/m/cache"));
	CHECK(has_import(&o, AST_IMPORT_GO, "fmt"));
	CHECK(has_import(&o, AST_IMPORT_GO, "os"));
	const struct ast_def *d = def_named(&o, "Get");
	CHECK(d && strstr(d->sig, "func (s *Store) Get(k string) (int, error)"));
	CHECK(def_named(&o, "Store") && def_named(&o, "New"));
	ast_outline_finish(&o);
}

TEST(rust_mod_use_impl)
{
	const char *src =
	        "mod parser;\n"
	        "mod inline { pub fn f() {} }\n"
	        "use crate::net::conn::{Conn, Addr};\n"
	        "use std::io;\n"
	        "pub struct Server { port: u16 }\n"
	        "impl Server {\n    pub fn bind(port: u16) -> Self { Server { port } }\n}\n";
	struct ast_outline o;
	CHECK_INT_EQ(outline_of("rust", src, &o), 0);
	CHECK(has_import(&o, AST_IMPORT_RUST_MOD, "parser"));
	CHECK(!has_import(&o, AST_IMPORT_RUST_MOD, "inline"));
	CHECK(has_import(&o, AST_IMPORT_RUST_USE, "net::conn"));
	CHECK_INT_EQ(o.n_imports, 2);
	const struct ast_def *d = def_named(&o, "bind");
	CHECK(d && strstr(d->sig, "pub fn bind(port: u16) -> Self") && !strstr(d->sig, "port }"));
	CHECK(def_named(&o, "Server") != NULL);
	ast_outline_finish(&o);
}

TEST(names_near_cursor_nearest_first)
{
	const char *src = "import far_module\n"
	                  "x = far_module.thing()\n"
	                  "\n"
	                  "def go(session):\n"
	                  "    resp = session.send(build_request())\n"
	                  "    ";
	struct ast_name names[32];
	int n = ast_names_near(ast_lang_from_id("python"), src, strlen(src), strlen(src), NULL,
	                       names, 32);
	CHECK(n >= 5);
	int i_send = -1, i_far = -1;
	for (int i = 0; i < n; i++) {
		if (!strcmp(names[i].name, "send")) i_send = i;
		if (!strcmp(names[i].name, "far_module")) i_far = i;
	}
	CHECK(i_send >= 0 && i_far >= 0 && i_send < i_far);
	/* a language without a grammar: nothing, no error */
	CHECK_INT_EQ(ast_names_near(NULL, src, strlen(src), 0, NULL, names, 32), 0);
}

TEST(no_language_empty_outline)
{
	struct ast_outline o;
	CHECK_INT_EQ(ast_outline(NULL, "x", 1, NULL, &o), 0);
	CHECK_INT_EQ(o.n_defs + o.n_imports, 0);
	ast_outline_finish(&o);
	ast_outline_finish(NULL);
}

TEST_MAIN()
