"""Next edits over LSP: the real infill binary, a scripted client over pipes.

usage: nextedit_test.py INFILL CASE   (or --list)
infill/nextEdit and textDocument/copilotInlineEdit answer in
copilot-language-server's shape; the client applies an edit, reports it, and
the next request offers the rest; infill/stats counts what happened.
No model is needed: the places are computed from the syntax tree.
"""
import sys
import time

from lspclient import Client

URI = "file:///tmp/infill-nextedit/a.py"

PY = ("def area(w, h):\n"
      "    size = w * h\n"
      "    print('size', size)\n"
      "    return size\n")


def check(cond, what, *context):
    if not cond:
        raise AssertionError(what + "".join("\n  " + str(c) for c in context))


def open_doc(c, text, uri=URI, lang="python", version=1):
    c.notify("textDocument/didOpen", {"textDocument": {
        "uri": uri, "languageId": lang, "version": version, "text": text}})


def pos(line, ch):
    return {"line": line, "character": ch}


def change(c, version, l1, c1, l2, c2, text, uri=URI):
    c.notify("textDocument/didChange", {
        "textDocument": {"uri": uri, "version": version},
        "contentChanges": [{"range": {"start": pos(l1, c1), "end": pos(l2, c2)}, "text": text}]})


def next_edit(c, method="infill/nextEdit", version=None, uri=URI):
    td = {"uri": uri}
    if version is not None:
        td["version"] = version
    r = c.request(method, {"textDocument": td, "position": pos(1, 4)})
    check("result" in r, method + " answered", r)
    return r["result"]["edits"]


def doc_text(c, uri=URI):
    return c.request("infill/document", {"textDocument": {"uri": uri}})["result"]["text"]


def apply(c, version, e, uri=URI):
    r = e["range"]
    change(c, version, r["start"]["line"], r["start"]["character"],
           r["end"]["line"], r["end"]["character"], e["text"], uri=uri)


def stats(c):
    return c.request("infill/stats")["result"]


def rename_size(c):
    """Types over `size` on line 1 (as keystrokes): `size` -> `area`."""
    change(c, 2, 1, 4, 1, 8, "")
    for i, ch in enumerate("area"):
        change(c, 3 + i, 1, 4 + i, 1, 4 + i, ch)
    return 6


# ---- cases -----------------------------------------------------------------

def case_capability(c):
    r = c.initialize()
    caps = r["result"]["capabilities"]
    ne = caps.get("experimental", {}).get("nextEditProvider", {})
    check(ne.get("methods") == ["infill/nextEdit", "textDocument/copilotInlineEdit"],
          "nextEditProvider advertised", caps)
    check("infill.didAcceptNextEdit" in caps["executeCommandProvider"]["commands"],
          "accept command advertised", caps)


def case_rename_shape(c):
    c.initialize()
    open_doc(c, PY)
    version = rename_size(c)
    edits = next_edit(c, version=version)
    check(len(edits) == 2, "two places (the string stays)", edits)
    e = edits[0]
    check(e["textDocument"] == {"uri": URI, "version": version}, "versioned document", e)
    check(e["range"] == {"start": pos(2, 18), "end": pos(2, 22)}, "the next use first", e)
    check(e["text"] == "area", "the new name", e)
    cmd = e["command"]
    check(cmd["command"] == "infill.didAcceptNextEdit" and isinstance(cmd["arguments"][0], str)
          and cmd["title"], "Copilot's command shape", cmd)
    check(edits[1]["range"]["start"] == pos(3, 11), "then the one after", edits)
    # the Copilot name answers the same
    same = next_edit(c, "textDocument/copilotInlineEdit", version=version)
    check([x["range"] for x in same] == [x["range"] for x in edits], "same under both names", same)


def case_accept_then_rest(c):
    c.initialize()
    open_doc(c, PY)
    version = rename_size(c)
    edits = next_edit(c, version=version)
    c.notify("textDocument/didShowInlineEdit", {"item": {"command": edits[0]["command"]}})
    version += 1
    apply(c, version, edits[0])
    r = c.request("workspace/executeCommand", edits[0]["command"])
    check("result" in r, "accept command answered", r)
    rest = next_edit(c, version=version)
    check(len(rest) == 1 and rest[0]["range"]["start"] == pos(3, 11), "the rest offered", rest)
    c.notify("infill/didRejectNextEdit", {"item": {"command": rest[0]["command"]}})
    st = stats(c)
    check(st["nextEditRequests"] == 2 and st["nextEditOffered"] == 3, "requests, offered", st)
    check(st["nextEditShown"] == 2 and st["nextEditAccepted"] == 1 and
          st["nextEditRejected"] == 1, "shown, accepted, rejected", st)
    check(st["nextEditLatencyMs"]["samples"] == 2, "latency sampled", st)
    version += 1
    apply(c, version, rest[0])
    check(doc_text(c) == PY.replace("size =", "area =").replace(", size)", ", area)")
          .replace("return size", "return area"), "file right", doc_text(c))
    check(next_edit(c, version=version) == [], "nothing left")


def case_stale_version(c):
    c.initialize()
    open_doc(c, PY)
    version = rename_size(c)
    check(next_edit(c, version=version - 1) == [], "another version: no edits")
    check(next_edit(c, uri="file:///nowhere.py") == [], "a document not open: no edits")
    r = c.request("infill/nextEdit", {"position": pos(0, 0)})
    check(r.get("error", {}).get("code") == -32602, "no textDocument: invalid params", r)


def case_signature_call_sites(c):
    c.initialize()
    text = ("def scale(p, k, verbose):\n"
            "    return p * k\n"
            "a = scale(1, 2, True)\n"
            "b = scale(3, 4, verbose=False)\n")
    open_doc(c, text)
    change(c, 2, 0, 14, 0, 23, "")  # drop ", verbose"
    edits = next_edit(c, version=2)
    check(len(edits) == 2, "both calls", edits)
    # applying one leaves the other offered (not a new "repeated change")
    apply(c, 3, edits[0])
    rest = next_edit(c, version=3)
    check(len(rest) == 1 and rest[0]["range"] != edits[0]["range"], "the other call", rest)
    apply(c, 4, rest[0])
    check(doc_text(c) == "def scale(p, k):\n    return p * k\na = scale(1, 2)\nb = scale(3, 4)\n",
          "call sites fixed", edits, doc_text(c))


def case_no_broken_syntax(c):
    """A repeated change that would break a line is not offered."""
    c.initialize()
    open_doc(c, "x = obj.bar\ny = obj.bar\ng = lambda bar: 0\n")
    change(c, 2, 0, 11, 0, 11, "()")
    edits = next_edit(c, version=2)
    check(len(edits) == 1 and edits[0]["range"]["start"] == pos(1, 11), "only the call", edits)
    check(stats(c)["nextEditInvalid"] == 1, "one counted invalid", stats(c))


def case_cancel_answered(c):
    """$/cancelRequest after the answer: nothing breaks, the server answers on."""
    c.initialize()
    open_doc(c, PY)
    version = rename_size(c)
    rid = c.request_async("infill/nextEdit", {"textDocument": {"uri": URI, "version": version},
                                              "position": pos(1, 4)})
    c.notify("$/cancelRequest", {"id": rid})
    r = c.response(rid)
    check("result" in r or r.get("error", {}).get("code") == -32800, "answered or cancelled", r)
    check(len(next_edit(c, version=version)) == 2, "still answers")


def case_closed_forgets(c):
    c.initialize()
    open_doc(c, PY)
    version = rename_size(c)
    c.notify("textDocument/didClose", {"textDocument": {"uri": URI}})
    open_doc(c, doc_text_after_rename(), version=version + 1)
    check(next_edit(c) == [], "a reopened document has no settled edit")


def case_deadline_off(c):
    """completion.deadlineMs 0 is no deadline: every place checked, none cut
    (the VS Code UI test runs so on a loaded machine)."""
    c.initialize(init_options={"completion": {"deadlineMs": 0}})
    open_doc(c, PY)
    version = rename_size(c)
    edits = next_edit(c, version=version)
    check(len(edits) == 2, "both places with the deadline off", edits)


def case_enum_arm(c):
    """A variant added to an enum: the arm in its neighbours' shape."""
    c.initialize()
    uri = "file:///tmp/infill-nextedit/k.c"
    text = ("enum kind { K_RED, K_GREEN };\n"
            "const char *name(enum kind k)\n{\n"
            "\tswitch (k) {\n"
            "\tcase K_RED:\n\t\treturn \"red\";\n"
            "\tcase K_GREEN:\n\t\treturn \"green\";\n"
            "\t}\n\treturn \"?\";\n}\n")
    open_doc(c, text, uri=uri, lang="c")
    change(c, 2, 0, 26, 0, 26, ", K_BLUE", uri=uri)
    edits = next_edit(c, version=2, uri=uri)
    check(len(edits) == 1 and edits[0]["range"]["start"] == pos(8, 0), "the arm's place", edits)
    apply(c, 3, edits[0], uri=uri)
    check("\tcase K_BLUE:\n\t\treturn \"blue\";\n\t}\n" in doc_text(c, uri), "the arm written",
          edits, doc_text(c, uri))


def case_import_from_project(c):
    """A name the project defines in one other file: its import is added."""
    import tempfile
    import os
    root = tempfile.mkdtemp(prefix="infill-nextedit-")
    with open(os.path.join(root, "stats.py"), "w") as f:
        f.write("def median(xs):\n    return sorted(xs)[len(xs) // 2]\n")
    text = "import os\n\n\ndef f(xs):\n    return len(xs)\n"
    with open(os.path.join(root, "a.py"), "w") as f:
        f.write(text)
    uri = "file://" + os.path.join(root, "a.py")
    c.initialize(root_uri="file://" + root)
    deadline = time.time() + 20
    while stats(c).get("indexFiles", 0) < 2 and time.time() < deadline:
        time.sleep(0.1)
    check(stats(c).get("indexFiles", 0) >= 2, "the index scanned", stats(c))
    open_doc(c, text, uri=uri)
    change(c, 2, 4, 18, 4, 18, " + median(xs)", uri=uri)
    edits = next_edit(c, version=2, uri=uri)
    check(len(edits) == 1 and edits[0]["text"] == "from stats import median\n", "the import", edits)
    apply(c, 3, edits[0], uri=uri)
    check(doc_text(c, uri) == "import os\nfrom stats import median\n\n\ndef f(xs):\n"
          "    return len(xs) + median(xs)\n", "imported", doc_text(c, uri))


# ---- edits the model writes (backend remote: a fake server on the loopback
# answers what the model would, through the pipeline's engine path) ----------

SIG = ("def scale(p, k):\n"
       "    return p * k\n"
       "a = scale(1, 2)\n")


def with_model_answer(answer, settings=None):
    """A fake inference server answering `answer`, and the options that
    point infill at it."""
    import os
    sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "remote"))
    import fakeserver
    fakeserver.ANSWER = answer
    srv = fakeserver.FakeServer("ok")
    opts = {"backend": "remote", "remote.api": "openai", "remote.url": srv.url,
            "fim.template": "qwen", "completion.candidates": 1, "completion.deadlineMs": 0,
            "remote.timeoutMs": 10000}
    opts.update(settings or {})
    return srv, opts


def start_remote(c, opts):
    c.initialize(init_options=opts)
    deadline = time.time() + 30
    while stats(c)["backend"] != "remote":
        check(time.time() < deadline, "the remote backend came up", stats(c))
        time.sleep(0.02)


def add_param(c):
    """`def scale(p, k):` -> `def scale(p, k, m):`: the call's argument is
    not mechanical."""
    open_doc(c, SIG)
    change(c, 2, 0, 14, 0, 14, ", m")
    return 2


def case_model_writes_argument(c):
    """The call site's new argument, written by the model: the reply waits
    for it, carries it at the place, and applying it gives the file."""
    srv, opts = with_model_answer(", 3")
    try:
        start_remote(c, opts)
        version = add_param(c)
        edits = next_edit(c, version=version)
        check(len(edits) == 1 and edits[0]["text"] == ", 3"
              and edits[0]["range"]["start"] == pos(2, 14)
              and edits[0]["range"]["end"] == pos(2, 14), "the model's argument", edits)
        prompt = srv.requests[0][1]["prompt"]
        check("# Recent edits (- before, + after):\n# @@ line 1\n# -def scale(p, k):\n"
              "# +def scale(p, k, m):\n" in prompt, "the recent edits in the prompt", prompt)
        check(prompt.endswith("<|fim_middle|>") and "a = scale(1, 2<|fim_suffix|>" in prompt,
              "a FIM prompt at the place", prompt)
        check(stats(c)["nextEditOffered"] == 1, "offered counted", stats(c))
        apply(c, version + 1, edits[0])
        check(doc_text(c) == SIG.replace("k):", "k, m):").replace("2)", "2, 3)"),
              "applied", doc_text(c))
        check(next_edit(c, version=version + 1) == [], "nothing left")
    finally:
        srv.stop()


def case_model_zeta_format(c):
    """nextEdit.format zeta: Zeta's prompt, the line rewritten, the part
    that changed offered."""
    # (a server cuts its text at the stop string, the region's end marker)
    srv, opts = with_model_answer("a = scale(1, 2, 5)\n", {"nextEdit.format": "zeta"})
    try:
        start_remote(c, opts)
        version = add_param(c)
        edits = next_edit(c, version=version)
        check(len(edits) == 1 and edits[0]["text"] == ", 5"
              and edits[0]["range"]["start"] == pos(2, 14), "the rewritten line's change", edits)
        prompt = srv.requests[0][1]["prompt"]
        check(prompt.startswith("### Instruction:\n") and "### User Edits:\n\nUser edited \"/tmp/"
              "infill-nextedit/a.py\":\n```diff\n@@ -1,1 +1,1 @@\n-def scale(p, k):\n"
              "+def scale(p, k, m):\n```" in prompt
              and "<|editable_region_start|>\na = scale(1, 2<|user_cursor_is_here|>)\n"
              "<|editable_region_end|>" in prompt
              and prompt.endswith("<|editable_region_start|>\n"), "Zeta's prompt", prompt)
        check("<|editable_region_end|>" in srv.requests[0][1].get("stop", []), "its stop",
              srv.requests[0][1])
    finally:
        srv.stop()


def case_model_breaking_not_offered(c):
    """A model answer that would break the file's syntax is never offered
    (the mechanical edits still are)."""
    srv, opts = with_model_answer(", (3")
    try:
        start_remote(c, opts)
        version = add_param(c)
        edits = next_edit(c, version=version)
        check(edits == [], "nothing offered", edits)
        check(len(srv.requests) >= 1, "the model was asked", srv.requests)
        check(doc_text(c) == SIG.replace("k):", "k, m):"), "the file as it was", doc_text(c))
    finally:
        srv.stop()


def case_model_cancel(c):
    """$/cancelRequest while the model writes: answered at once (with the
    mechanical edits: none here), the server answers on."""
    srv, opts = with_model_answer(", 3")
    srv.mode = "slow"
    try:
        start_remote(c, opts)
        version = add_param(c)
        rid = c.request_async("infill/nextEdit", {"textDocument": {"uri": URI,
                                                                   "version": version},
                                                  "position": pos(1, 4)})
        time.sleep(0.2)
        c.notify("$/cancelRequest", {"id": rid})
        r = c.response(rid, timeout=5)
        check(r.get("result", {}).get("edits") == [], "answered at once, empty", r)
        check(stats(c)["requests"] >= 0, "the server answers on")
    finally:
        srv.stop()


def case_model_exit_while_waiting(c):
    """shutdown and exit while a reply waits for the model: a clean exit
    (the closed pipeline's jobs are not touched again)."""
    srv, opts = with_model_answer(", 3")
    srv.mode = "slow"
    try:
        start_remote(c, opts)
        version = add_param(c)
        c.request_async("infill/nextEdit", {"textDocument": {"uri": URI, "version": version},
                                            "position": pos(1, 4)})
        time.sleep(0.2)  # the rewrite is with the server now; main() shuts down
    finally:
        srv.stop()
def case_rename_across_files(c):
    """A top-level function renamed where it is defined: the files that
    import it follow, open (b.py) or only on disk (c.py, through the project
    index), after the defining file's own places; a file with a function of
    that name of its own (d.py, open) does not. Applying them leaves each
    file right, and the list shrinks as they are applied."""
    import tempfile
    import os
    root = tempfile.mkdtemp(prefix="infill-nextedit-")
    files = {
        "shapes.py": "def area(w, h):\n    return w * h\n\n\ndef twice(x):\n"
                     "    return area(x, x) * 2\n",
        "b.py": "from shapes import area, twice\n\nprint(area(1, 2), twice(3))\n",
        "c.py": "import shapes\n\n\ndef f():\n    return shapes.area(3, 4)\n",
        "d.py": "def area():\n    return 0\n",
    }
    for name, text in files.items():
        with open(os.path.join(root, name), "w") as f:
            f.write(text)
    uri = {name: "file://" + os.path.join(root, name) for name in files}
    c.initialize(root_uri="file://" + root)
    deadline = time.time() + 20
    while stats(c).get("indexFiles", 0) < 4 and time.time() < deadline:
        time.sleep(0.1)
    check(stats(c).get("indexFiles", 0) >= 4, "the index scanned", stats(c))
    for name in ("shapes.py", "b.py", "d.py"):
        open_doc(c, files[name], uri=uri[name])
    # `area` -> `surface` at its definition, as keystrokes
    change(c, 2, 0, 4, 0, 8, "", uri=uri["shapes.py"])
    for i, ch in enumerate("surface"):
        change(c, 3 + i, 0, 4 + i, 0, 4 + i, ch, uri=uri["shapes.py"])
    version = 9
    edits = next_edit(c, version=version, uri=uri["shapes.py"])
    where = [(e["textDocument"]["uri"], e["range"]["start"]["line"],
              e["range"]["start"]["character"]) for e in edits]
    check(where == [(uri["shapes.py"], 5, 11), (uri["b.py"], 0, 19), (uri["b.py"], 2, 6),
                    (uri["c.py"], 4, 18)], "own place, then the open importer, then the "
          "one on disk", edits)
    check(all(e["text"] == "surface" for e in edits), "the new name", edits)
    check(edits[1]["textDocument"]["version"] == 1, "the open file's version", edits[1])
    check(edits[3]["textDocument"]["version"] is None, "a file not open has none", edits[3])
    check(edits[3]["range"]["end"] == pos(4, 22), "its range from the index's text", edits[3])
    # asked from b.py (the user went there), its own two are the answer
    in_b = next_edit(c, version=1, uri=uri["b.py"])
    check([(e["textDocument"]["uri"], e["range"]["start"]["line"]) for e in in_b] ==
          [(uri["b.py"], 0), (uri["b.py"], 2)], "b.py's edits asked from b.py", in_b)
    # the client applies b.py's second place: it leaves the list
    apply(c, 2, edits[2], uri=uri["b.py"])
    rest = next_edit(c, version=version, uri=uri["shapes.py"])
    check([(e["textDocument"]["uri"], e["range"]["start"]["line"]) for e in rest] ==
          [(uri["shapes.py"], 5), (uri["b.py"], 0), (uri["c.py"], 4)], "the rest", rest)
    apply(c, 3, rest[1], uri=uri["b.py"])
    # c.py opened as on disk, then its edit applied
    open_doc(c, files["c.py"], uri=uri["c.py"])
    apply(c, 2, rest[2], uri=uri["c.py"])
    version += 1
    apply(c, version, rest[0], uri=uri["shapes.py"])
    check(doc_text(c, uri["b.py"]) == files["b.py"].replace("area", "surface"), "b.py right",
          doc_text(c, uri["b.py"]))
    check(doc_text(c, uri["c.py"]) == files["c.py"].replace("area", "surface"), "c.py right",
          doc_text(c, uri["c.py"]))
    check(doc_text(c, uri["shapes.py"]) == files["shapes.py"].replace("area", "surface"),
          "shapes.py right", doc_text(c, uri["shapes.py"]))
    check(doc_text(c, uri["d.py"]) == files["d.py"], "d.py untouched")
    check(next_edit(c, version=version, uri=uri["shapes.py"]) == [], "nothing left")
    # a local renamed reaches no other file
    change(c, version + 1, 1, 11, 1, 12, "q", uri=uri["shapes.py"])
    local = next_edit(c, version=version + 1, uri=uri["shapes.py"])
    check(all(e["textDocument"]["uri"] == uri["shapes.py"] for e in local), "local: this file",
          local)


def doc_text_after_rename():
    return PY.replace("size =", "area =")


CASES = {name[5:]: fn for name, fn in sorted(globals().items()) if name.startswith("case_")}


def main():
    if sys.argv[1:2] == ["--list"]:
        print("\n".join(CASES))
        return 0
    binary, name = sys.argv[1], sys.argv[2]
    c = Client(binary, [])
    try:
        CASES[name](c)
        check(c.shutdown_exit() == 0, "exit 0 after shutdown")
    except BaseException:
        sys.stderr.write("---- server log ----\n" + c.log())
        raise
    finally:
        c.kill()
    return 0


if __name__ == "__main__":
    sys.exit(main())
