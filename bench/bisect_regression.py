"""A throughput regression bisected to its package, with real SGLang CPU servers.

Two environments over this repository's .venv (each a venv whose .pth adds .venv's
site-packages), differing in two packages, each installed as a wheel:

- glmstack-slowdown 1.0 -> 2.0: 2.0's .pth starts, in every SGLang server process, a helper that,
  once the server answers /health, stops its process tree for DUTY of every 100 ms (a real
  server made slower at serving by a package, as a kernel regression would);
- glmstack-bystander 1.0 -> 1.1: changes nothing.

Then `glmstack bisect --regression` runs the A/B matrix (tests/data/bisect/ab.yaml) in each
hybrid, as the B of --glmstack-ab beside the good stack's servers, and must name
glmstack-slowdown, both ways.

Run:  .venv/bin/python bench/bisect_regression.py [--duty 0.5]
Writes bench/results/bisect-regression.json (the report, the answer, the seconds).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import sysconfig
import tempfile
import time
import zipfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
VENV_PY = ROOT / ".venv" / "bin" / "python"
PY = f"python{sys.version_info.major}.{sys.version_info.minor}"

THROTTLE = r'''
import os, sys
def _start():
    try:
        cmd = open("/proc/self/cmdline", "rb").read().split(b"\0")
    except OSError:
        return
    if b"sglang.launch_server" not in cmd or os.environ.get("GLMSTACK_SLOWDOWN_CHILD"):
        return
    import subprocess
    env = dict(os.environ, GLMSTACK_SLOWDOWN_CHILD="1")
    subprocess.Popen([sys.executable, "-c", LOOP, str(os.getpid()), os.environ.get("GLMSTACK_SLOWDOWN_DUTY", "DUTY")],
                     env=env, start_new_session=True)
LOOP = """
import os, sys, time, urllib.request, psutil
root, duty = psutil.Process(int(sys.argv[1])), float(sys.argv[2])
cmd = root.cmdline()
port = cmd[cmd.index("--port") + 1] if "--port" in cmd else "30000"
# Serving slower, not starting slower: the throttle begins once the server answers /health.
while root.is_running():
    try:
        if urllib.request.urlopen(f"http://127.0.0.1:{port}/health", timeout=2).status == 200:
            break
    except Exception:
        pass
    time.sleep(0.5)
tree = []
def _resume_and_exit(*_):
    for p in tree:
        try: p.resume()
        except psutil.Error: pass
    sys.exit(0)
import signal
signal.signal(signal.SIGTERM, _resume_and_exit)  # never leave the server stopped
while root.is_running() and root.status() != psutil.STATUS_ZOMBIE:
    try:
        # not this helper: it is one of the server's children, and would stop itself for good
        tree = [p for p in (root, *root.children(recursive=True)) if p.pid != os.getpid()]
    except psutil.Error:
        break
    t = time.monotonic()
    while time.monotonic() - t < 1.0:
        for p in tree:
            try: p.suspend()
            except psutil.Error: pass
        time.sleep(duty * 0.1)
        for p in tree:
            try: p.resume()
            except psutil.Error: pass
        time.sleep((1 - duty) * 0.1)
"""
_start()
'''


def wheel(d: Path, name: str, version: str, files: dict) -> Path:
    mod = name.replace("-", "_")
    info = f"{mod}-{version}.dist-info"
    p = d / f"{mod}-{version}-py3-none-any.whl"
    with zipfile.ZipFile(p, "w") as z:
        for rel, text in files.items():
            z.writestr(rel, text)
        z.writestr(f"{info}/METADATA", f"Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n")
        z.writestr(f"{info}/WHEEL", "Wheel-Version: 1.0\nGenerator: bench\nRoot-Is-Purelib: true\nTag: py3-none-any\n")
        z.writestr(f"{info}/RECORD", "".join(f"{r},,\n" for r in [*files, f"{info}/METADATA", f"{info}/WHEEL",
                                                                   f"{info}/RECORD"]))
    return p


def stack(root: Path, wheels: list[Path]) -> Path:
    subprocess.run([sys.executable, "-m", "venv", "--without-pip", str(root)], check=True)
    site = root / "lib" / PY / "site-packages"
    (site / "zz-base.pth").write_text(sysconfig.get_path("purelib") + "\n")
    (root / "lib" / "nocuda").symlink_to(ROOT / ".venv" / "lib" / "nocuda")
    subprocess.run([sys.executable, "-m", "pip", "install", "--no-deps", "--no-index", "--quiet", "--no-compile",
                    "--disable-pip-version-check", "--target", str(site), *map(str, wheels)], check=True)
    return root / "bin" / "python"


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--duty", type=float, default=0.5)
    a = ap.parse_args()
    if Path(sys.executable).absolute() != VENV_PY.absolute():
        print(f"run with {VENV_PY}", file=sys.stderr)
        return 2
    tmp = Path(tempfile.mkdtemp(prefix="glmstack-bisect-regression-"))
    w = tmp / "wheels"
    w.mkdir()
    slow = THROTTLE.replace("DUTY", str(a.duty))
    good = stack(tmp / "good", [wheel(w, "glmstack-slowdown", "1.0", {"glmstack_slowdown.py": "ON = False\n"}),
                                wheel(w, "glmstack-bystander", "1.0", {"glmstack_bystander.py": "X = 1\n"})])
    bad = stack(tmp / "bad", [wheel(w, "glmstack-slowdown", "2.0", {"glmstack_slowdown.py": "ON = True\n",
                                                                    "glmstack_slowdown.pth": "import glmstack_slowdown_hook\n",
                                                                    "glmstack_slowdown_hook.py": slow}),
                              wheel(w, "glmstack-bystander", "1.1", {"glmstack_bystander.py": "X = 2\n"})])
    t0 = time.monotonic()
    cmd = [sys.executable, "-m", "pytest_glmstack", "bisect", "--regression", "--good", str(good), "--bad", str(bad),
           "--cache", str(tmp / "cache"), "--json", str(tmp / "report.json"), "--",
           "tests/test_matrix.py", "--glmstack-matrix", "tests/data/bisect/ab.yaml", "-k", "test_throughput",
           "--glmstack-compare-fail", "throughput:50%"]
    r = subprocess.run(cmd, cwd=ROOT, capture_output=True, text=True, timeout=3600)
    took = time.monotonic() - t0
    print(r.stdout[-6000:], r.stderr[-2000:], sep="\n")
    rep = json.loads((tmp / "report.json").read_text()) if (tmp / "report.json").is_file() else {}
    out = {"machine": platform.node(), "cpus": os.cpu_count(), "date": time.strftime("%Y-%m-%dT%H:%M:%S%z"),
           "duty": a.duty, "command": " ".join(["glmstack", *cmd[3:]]), "exit": r.returncode, "seconds": round(took, 1),
           "answer": rep.get("answer"), "runs": [{k: x.get(k) for k in ("label", "verdict", "outcome", "seconds", "reason")}
                                                for x in rep.get("runs", [])],
           "stdout_tail": r.stdout[-4000:]}
    dest = ROOT / "bench" / "results" / "bisect-regression.json"
    dest.write_text(json.dumps(out, indent=1) + "\n")
    print(f"wrote {dest}: {out['answer']} ({took:.0f} s)")
    return 0 if r.returncode == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
