"""PACED STAND-IN SERVER, not SGLang: answers SGLang's streaming /generate protocol with tokens at
a fixed pace and keeps a ledger of when each request started and ended, so a benchmark's tok/s
can be checked against a rate known by construction.

    python bench/paced_server.py PORT INTERVAL_S TTFT_S

GET /ledger returns [[start, end, tokens], ...] (server clock, time.monotonic) and clears it.
"""

from __future__ import annotations

import asyncio
import json
import sys
import time

from aiohttp import web

LEDGER: list[list[float]] = []


async def generate(request: web.Request) -> web.StreamResponse:
    body = await request.json()
    n = int(body.get("sampling_params", {}).get("max_new_tokens", 16))
    prompt = body.get("input_ids") or body.get("text") or []
    interval, ttft = request.app["interval"], request.app["ttft"]
    start = time.monotonic()
    resp = web.StreamResponse(headers={"Content-Type": "text/event-stream"})
    await resp.prepare(request)
    # Token k is due at start + ttft + k * interval: sleeping to deadlines keeps the pace exact
    # however late a single wake-up is.
    for k in range(n):
        due = start + ttft + k * interval
        await asyncio.sleep(max(0.0, due - time.monotonic()))
        chunk = {"text": "x" * (k + 1), "meta_info": {"completion_tokens": k + 1, "prompt_tokens": len(prompt),
                                                      "id": "paced"}}
        await resp.write(b"data: " + json.dumps(chunk).encode() + b"\n\n")
    await resp.write(b"data: [DONE]\n\n")
    LEDGER.append([start, time.monotonic(), n])
    return resp


async def ledger(request: web.Request) -> web.Response:
    out = list(LEDGER)
    LEDGER.clear()
    return web.json_response(out)


async def anything(request: web.Request) -> web.Response:
    return web.json_response({})


def main():
    port, interval, ttft = int(sys.argv[1]), float(sys.argv[2]), float(sys.argv[3])
    app = web.Application()
    app["interval"], app["ttft"] = interval, ttft
    app.router.add_post("/generate", generate)
    app.router.add_get("/ledger", ledger)
    app.router.add_route("*", "/{tail:.*}", anything)
    print(f"paced stand-in ready on {port}", flush=True)
    web.run_app(app, host="127.0.0.1", port=port, print=None, access_log=None)


if __name__ == "__main__":
    main()
