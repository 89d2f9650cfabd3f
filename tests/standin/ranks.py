"""STAND-IN multi-node server, not SGLang (SGLang 0.5.23's CPU engine cannot run tp > 1: its
TP group builds a PyNccl communicator on the CPU device). It takes SGLang's multi-node flags and
behaves as a multi-node launch does, for the Slurm launcher's two-rank test:

    python3 ranks.py --host H --port P --nnodes N --dist-init-addr A:Q --node-rank R

Every rank writes the start-up phases SGLang writes; rank 0 listens on A:Q until the other
N-1 ranks have connected (a real rendezvous: a wrong --dist-init-addr or rank never gets
there), then serves /health and /model_info on H:P and prints SGLang's ready line; the other
ranks print their KV-cache line and wait, as SGLang's non-zero ranks do.
GLMSTACK_STANDIN_RANK_EXIT=R: rank R exits with an error before the rendezvous.
"""

import argparse
import http.server
import os
import socket
import sys
import time

ap = argparse.ArgumentParser()
ap.add_argument("--host", default="127.0.0.1")
ap.add_argument("--port", type=int, required=True)
ap.add_argument("--nnodes", type=int, default=1)
ap.add_argument("--node-rank", type=int, default=0)
ap.add_argument("--dist-init-addr", default="127.0.0.1:29500")
args, _ = ap.parse_known_args()
rank, n = args.node_rank, args.nnodes
host, port = args.dist_init_addr.rsplit(":", 1)
tag = f"[stand-in TP{rank}]"
print(f"{tag} node {os.environ.get('SLURMD_NODENAME', '?')} rank {rank}/{n} step {os.environ.get('SLURM_STEP_ID', '?')}",
      flush=True)
print(f"{tag} Load weight begin. avail mem=1.00 GB", flush=True)
print(f"{tag} Load weight end.", flush=True)
if os.environ.get("GLMSTACK_STANDIN_RANK_EXIT") == str(rank):  # before rank 0 can be ready
    sys.exit(f"{tag} exiting with code 3 on cue")

if rank == 0:
    srv = socket.create_server((host, int(port)), reuse_port=False)
    srv.settimeout(60)
    peers = []
    while len(peers) < n - 1:
        conn, _ = srv.accept()
        peers.append(int(conn.recv(16).decode().strip()))
        conn.sendall(b"go\n")
        conn.close()
    print(f"{tag} rendezvous at {args.dist_init_addr}: ranks {sorted(peers)} joined", flush=True)
else:
    deadline = time.monotonic() + 60
    while True:
        try:
            with socket.create_connection((host, int(port)), timeout=2) as c:
                c.sendall(f"{rank}\n".encode())
                c.recv(16)
            break
        except OSError:
            if time.monotonic() > deadline:
                sys.exit(f"{tag} could not reach rank 0 at {args.dist_init_addr}")
            time.sleep(0.1)
    print(f"{tag} joined rank 0 at {args.dist_init_addr}", flush=True)
print(f"{tag} KV Cache is allocated. #tokens: 16384", flush=True)

if rank != 0:
    while True:
        time.sleep(3600)


class Handler(http.server.BaseHTTPRequestHandler):
    def do_GET(self):
        body = b'{"model_path": "stand-in"}' if self.path == "/model_info" else b""
        self.send_response(200 if self.path in ("/health", "/model_info") else 404)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, *a):
        pass


httpd = http.server.ThreadingHTTPServer((args.host, args.port), Handler)
print("The server is fired up and ready to roll!", flush=True)
httpd.serve_forever()
