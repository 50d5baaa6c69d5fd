#!/usr/bin/env python3
"""tools/refgen/kvq8_ref.py SERVER MODEL PROMPTS_JSON OUT_JSON [KV_TYPE]

Writes the reference of tests/infer/test_reference_kvq8.c: llama-server (a
separate program, tools/llamacpp) run on 127.0.0.1 with `-ctk KV -ctv KV`
(default q8_0; flash attention 'auto', which a quantized V needs and the CPU
has), each prompt of PROMPTS_JSON's first run (the token ids of
tiny-kq-reference.json) continued greedily for 16 tokens, with the top 8
log-probabilities of the logits at every step (n_probs, before sampling).

Made with (llama.cpp from node-llama-cpp 3.21.1, tools/llamacpp):
  tools/refgen/kvq8_ref.py "$(tools/llamacpp llama-server)/llama-server" \
    ../shared/testdata/models/tiny-kq-q6_k.gguf \
    ../shared/testdata/models/tiny-kq-reference.json \
    tests/infer/model_data/tiny-kq-q6_k-kvq8-reference.json
  tools/refgen/kvq8_ref.py "$(tools/llamacpp llama-server)/llama-server" \
    tests/infer/model_data/tiny-gemma-f32.gguf \
    tests/infer/model_data/tiny-gemma-reference.json \
    tests/infer/model_data/tiny-gemma-f32-kvq8-reference.json
(2026-12-05; `tools/llamacpp llama-server` prints the binaries' folder.)
"""
import json
import socket
import subprocess
import sys
import time
import urllib.request


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def post(port, path, body):
    req = urllib.request.Request(f"http://127.0.0.1:{port}{path}", json.dumps(body).encode(),
                                 {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=120) as r:
        return json.load(r)


def main():
    server, model, prompts_json, out = sys.argv[1:5]
    kv = sys.argv[5] if len(sys.argv) > 5 else "q8_0"
    prompts = json.load(open(prompts_json))["runs"][0]["prompts"]
    port = free_port()
    cmd = [server, "-m", model, "--host", "127.0.0.1", "--port", str(port), "-c", "1024",
           "-t", "2", "-ctk", kv, "-ctv", kv, "-np", "1", "--no-warmup"]
    proc = subprocess.Popen(cmd, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    try:
        for _ in range(600):
            try:
                with urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2) as r:
                    if r.status == 200:
                        break
            except Exception:
                if proc.poll() is not None:
                    sys.exit("llama-server exited: " + proc.stderr.read()[-2000:])
                time.sleep(0.2)
        runs = []
        for p in prompts:
            res = post(port, "/completion", {
                "prompt": p["token_ids"], "n_predict": 16, "temperature": 0, "top_k": 1,
                "n_probs": 8, "post_sampling_probs": False, "cache_prompt": False,
                "return_tokens": True, "ignore_eos": True, "samplers": ["top_k"]})
            steps = []
            for st in res["completion_probabilities"]:
                steps.append({"id": st["id"],
                              "top": [[t["id"], round(t["logprob"], 7)] for t in st["top_logprobs"]]})
            runs.append({"name": p["name"], "token_ids": p["token_ids"], "steps": steps})
    finally:
        proc.terminate()
        proc.wait(timeout=30)
    json.dump({"generator": "tools/refgen/kvq8_ref.py, llama-server of node-llama-cpp 3.21.1, "
               f"-ctk {kv} -ctv {kv}, flash attention auto, 2 threads, greedy",
               "model_file": model.split("/")[-1], "kv_cache_type": kv, "prompts": runs},
              open(out, "w"), indent=1)
    open(out, "a").write("\n")


main()
