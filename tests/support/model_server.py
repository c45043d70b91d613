"""A model server for tests and benchmarks, in a process of its own: the OpenAI-compatible
embeddings API (``POST /v1/embeddings``) and the rerank API (``POST /v1/rerank``, Jina/Cohere's
request and answer, or TEI's), over an ONNX model loaded the way remembrancer loads one.

No server of the kinds users run (Ollama, llama.cpp, vLLM, TEI) installs here without downloading
a model, so this one implements their documented API; the client is exercised over real HTTP against
a separate process. Faults are switched on at start or at run time (``POST /control``): a delay, the
next N requests failing with 503 (after K that succeed), vectors cut to another dimension, another
model's vectors, or a request holding some text kept waiting (``{"hold": TEXT}``: an embeddings
request with an input containing TEXT gets no answer until ``{"hold": ""}`` — a writer stuck in the
middle of a pass, for as long as a test needs it there). ``GET /inputs`` lists every text it was
sent, so a test can check what left the machine.

    python -m tests.support.model_server --model DIR|default [--rerank DIR] [--name NAME] [--port N]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


class State:
    def __init__(self, args):
        from remembrancer.indexer.models.embed import load_embedder, load_embedder_from_dir
        from remembrancer.indexer.models.rerank import OnnxReranker

        self.name = args.name
        self.embedder = load_embedder(None) if args.model == "default" else load_embedder_from_dir(args.model)
        self.other = load_embedder_from_dir(args.other) if args.other else None
        self.reranker = OnnxReranker(Path(args.rerank), 512) if args.rerank else None
        self.rerank_shape = args.rerank_shape
        self.key_env = args.key_env
        self.max_batch = args.max_batch
        self.delay = 0.0
        self.fail = 0          # the next N requests answer 503 …
        self.ok_first = 0      # … after this many more succeed
        self.dim = 0           # answer vectors cut to this many dimensions (0: as they are)
        self.swapped = False   # answer the `--other` model's vectors (a model changed behind the name)
        self.hold = ""         # an embeddings request with an input containing this waits until it is cleared
        self.held = 0          # requests kept waiting so far
        self.released = threading.Event()
        self.requests = self.texts = 0
        self.inputs: list[str] = []   # every text received, embeddings and rerank queries (GET /inputs)
        self.lock = threading.Lock()


def handler(state: State):
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *args):   # quiet: the tests read answers, not logs
            pass

        def _send(self, code: int, body) -> None:
            data = json.dumps(body).encode()
            self.send_response(code)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def do_GET(self):
            if self.path == "/stats":
                return self._send(200, {"requests": state.requests, "texts": state.texts, "held": state.held})
            if self.path == "/inputs":   # what a client sent: a test reads what left the machine
                with state.lock:
                    return self._send(200, {"inputs": list(state.inputs)})
            self._send(404, {"error": "not found"})

        def do_POST(self):
            body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)) or b"{}")
            if self.path == "/control":
                with state.lock:
                    for k in ("delay", "fail", "ok_first", "dim", "swapped", "hold"):
                        if k in body:
                            setattr(state, k, body[k])
                    if "hold" in body and not body["hold"]:
                        state.released.set()
                return self._send(200, {"ok": True})
            if state.key_env and self.headers.get("Authorization") != f"Bearer {os.environ[state.key_env]}":
                return self._send(401, {"error": "invalid api key"})
            with state.lock:
                state.requests += 1
                if state.ok_first:
                    state.ok_first -= 1
                    failing = False
                else:
                    failing = state.fail > 0
                    state.fail = max(0, state.fail - 1)
                delay = state.delay
            if delay:
                time.sleep(delay)
            if failing:
                return self._send(503, {"error": "model is loading"})
            if state.name and body.get("model") not in (None, state.name):
                return self._send(404, {"error": f"model {body.get('model')!r} not found"})
            if self.path.endswith("/embeddings"):
                return self._embeddings(body)
            if self.path.endswith("/rerank") and state.reranker is not None:
                return self._rerank(body)
            self._send(404, {"error": f"no route {self.path}"})

        def _embeddings(self, body):
            texts = body.get("input")
            if isinstance(texts, str):
                texts = [texts]
            if not isinstance(texts, list) or not all(isinstance(t, str) for t in texts):
                return self._send(400, {"error": "input must be a string or a list of strings"})
            with state.lock:
                state.inputs.extend(texts)
                hold = state.hold and any(state.hold in t for t in texts)
                if hold:
                    state.held += 1
                    state.released.clear()
            if hold:
                state.released.wait(600)
            if state.max_batch and len(texts) > state.max_batch:
                return self._send(422, {"error": f"batch size {len(texts)} > maximum allowed batch size "
                                                 f"{state.max_batch}", "error_type": "Validation"})
            model = state.other if state.swapped and state.other else state.embedder
            vecs = model.embed_passages(texts)
            if state.dim:
                vecs = vecs[:, : state.dim]
            with state.lock:
                state.texts += len(texts)
            self._send(200, {"object": "list", "model": state.name or "served",
                             "data": [{"object": "embedding", "index": i, "embedding": v.tolist()}
                                      for i, v in enumerate(vecs)]})

        def _rerank(self, body):
            key = "texts" if state.rerank_shape == "tei" else "documents"
            texts = body.get(key)
            if not isinstance(texts, list) or not isinstance(body.get("query"), str):
                return self._send(422, {"error": f"query and {key} are required"})
            with state.lock:
                state.inputs.extend([body["query"], *texts])
            scores = state.reranker.score(body["query"], texts)
            if state.rerank_shape == "tei":
                rows = sorted(({"index": i, "score": s} for i, s in enumerate(scores)), key=lambda r: -r["score"])
                return self._send(200, rows)
            rows = sorted(({"index": i, "relevance_score": s} for i, s in enumerate(scores)),
                          key=lambda r: -r["relevance_score"])
            self._send(200, {"model": state.name, "results": rows[: body.get("top_n") or len(rows)]})

    return Handler


def main(argv=None) -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("--model", required=True, help="an ONNX model folder, or `default` (the packaged model)")
    ap.add_argument("--other", help="a second model folder, answered after POST /control {swapped: true}")
    ap.add_argument("--rerank", help="a cross-encoder folder for /rerank")
    ap.add_argument("--rerank-shape", choices=("cohere", "tei"), default="cohere")
    ap.add_argument("--name", default="", help="the served model's name (requests naming another get 404)")
    ap.add_argument("--key-env", default="", help="require `Authorization: Bearer $VAR`")
    ap.add_argument("--max-batch", type=int, default=0, help="refuse more inputs than this, as TEI does (422)")
    ap.add_argument("--port", type=int, default=0)
    args = ap.parse_args(argv)
    state = State(args)
    server = ThreadingHTTPServer(("127.0.0.1", args.port), handler(state))
    server.daemon_threads = True
    print(f"PORT {server.server_address[1]}", flush=True)
    server.serve_forever()


class ModelServer:
    """The server above as a child process: `url` is its OpenAI-style base (…/v1)."""

    def __init__(self, *args: str, port: int = 0, env: dict | None = None):
        self.args, self.port, self.env = list(args), port, env
        self.proc: subprocess.Popen | None = None

    def start(self) -> "ModelServer":
        self.proc = subprocess.Popen(
            [sys.executable, "-m", "tests.support.model_server", *self.args, "--port", str(self.port)],
            cwd=ROOT, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True,
            env={**os.environ, **(self.env or {})})
        line = self.proc.stdout.readline()
        if not line.startswith("PORT "):
            self.proc.kill()
            raise RuntimeError(f"model server did not start: {line!r} {self.proc.stderr.read()[-2000:]}")
        self.port = int(line.split()[1])
        return self

    @property
    def base(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def url(self) -> str:
        return self.base + "/v1"

    def control(self, **settings) -> None:
        req = urllib.request.Request(self.base + "/control", data=json.dumps(settings).encode(),
                                     headers={"Content-Type": "application/json"}, method="POST")
        urllib.request.urlopen(req, timeout=10).read()

    def stats(self) -> dict:
        return json.loads(urllib.request.urlopen(self.base + "/stats", timeout=10).read())

    def inputs(self) -> list[str]:
        """Every text the server was sent so far (embedding inputs, rerank queries and documents)."""
        return json.loads(urllib.request.urlopen(self.base + "/inputs", timeout=10).read())["inputs"]

    def stop(self) -> None:
        if self.proc is not None and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()
        self.proc = None

    def __enter__(self) -> "ModelServer":
        return self.start()

    def __exit__(self, *exc) -> None:
        self.stop()


if __name__ == "__main__":
    main()
