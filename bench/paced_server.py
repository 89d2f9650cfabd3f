"""PACED STAND-IN SERVER, not SGLang: answers SGLang's streaming /generate protocol with tokens at
a fixed pace and keeps a ledger of when each request started and ended, so a benchmark's tok/s
can be checked against a rate known by construction.

    python bench/paced_server.py PORT INTERVAL_S TTFT_S [--jitter SIGMA [--period P] [--seed S]] [--miscount N]

GET /ledger returns [[start, end, tokens], ...] (server clock, time.monotonic) and clears it.
With --jitter, the pace of every request at once is scaled by a factor f that is drawn anew
every P seconds (0.25): f = exp(SIGMA * Z + SIGMA^2 / 2), Z standard normal, so that E[1/f] = 1:
over a long run the rate is exactly the configured one, over a short window it wanders as a
real server's does (a shared batch, a busy host). The noise model is the same in
bench/gate.py's in-process simulation.
GET /metrics reports the tokens it streamed as SGLang does (sglang:generation_tokens_total);
with --miscount N it reports N tokens fewer per request than it streamed, as a server whose
count disagrees with what the client received (the token accounting check must catch it).
"""

from __future__ import annotations

import asyncio
import json
import math
import random
import sys
import time

from aiohttp import web

LEDGER: list[list[float]] = []
COUNT = {"tokens": 0}


async def generate(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    n = int(body.get("sampling_params", {}).get("max_new_tokens", 16))
    prompt = body.get("input_ids") or body.get("text") or []
    app = request.app
    interval, ttft = app["interval"], app["ttft"]
    start = time.monotonic()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    # Token k is due at start + ttft + k * interval (each step scaled by the current jitter
    # factor): sleeping to deadlines keeps the pace exact however late a single wake-up is.
    state = app["state"]
    due = start + ttft * state["factor"]
    for k in range(n):
        if k:
            due += interval * state["factor"]
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        chunk = {"text": "x" * (k + 1), "meta_info": {"completion_tokens": k + 1, "prompt_tokens": len(prompt),
                                                      "id": "paced"}}
        await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    LEDGER.append([start, time.monotonic(), n])
    COUNT["tokens"] += n - request.app["miscount"]
    return resp


async def metrics(request: web.Request) -> web.Response:
    return web.Response(text="# TYPE sglang:generation_tokens_total counter\n"
                             f'sglang:generation_tokens_total{{model_name="paced"}} {float(COUNT["tokens"])}\n')


async def ledger(request: web.Request) -> web.Response:
    out = list(LEDGER)
    LEDGER.clear()
    return web.json_response(out)


async def anything(request: web.Request) -> web.Response:
    return web.json_response({})


async def jitter(app: web.Application):
    rng = random.Random(app["seed"])
    sigma = app["jitter"]

    async def vary():
        while True:
            app["state"]["factor"] = math.exp(sigma * rng.gauss(0, 1) + sigma * sigma / 2)
            await asyncio.sleep(app["period"])

    task = asyncio.create_task(vary()) if sigma > 0 else None
    yield
    if task:
        task.cancel()


def _opt(name: str, default: float) -> float:
    return float(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main():
    port, interval, ttft = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    app = web.Application()
    app["interval"], app["ttft"], app["miscount"] = interval, ttft, int(_opt("--miscount", 0))
    app["state"], app["jitter"], app["period"], app["seed"] = {"factor": 1.0}, _opt("--jitter", 0.0), _opt("--period", 0.25), _opt("--seed", 0)
    app.cleanup_ctx.append(jitter)
    app.router.add_post("/generate", generate)
    app.router.add_get("/ledger", ledger)
    app.router.add_get("/metrics", metrics)
    app.router.add_route("*", "/{tail:.*}", anything)
    print(f"paced stand-in ready on {port}", flush=True)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main()
