"""Runs one probe function in this fresh process and prints its verdict as one JSON line.

    python -m pytest_glmstack.probe_worker module:function
"""

import importlib
import json
import sys
import traceback

from pytest_glmstack.probes import RESULT_MARK, ProbeSkip


def main(target: str) -> int:
    module, _, func = target.partition(":")
    try:
        fn = getattr(importlib.import_module(module), func)
    except (ImportError, AttributeError) as e:
        print(RESULT_MARK + json.dumps({"verdict": "skipped", "detail": f"cannot load probe {target}: {e}"}), flush=True)
        return 0
    try:
        detail = fn()
    except ProbeSkip as e:
        print(RESULT_MARK + json.dumps({"verdict": "skipped", "detail": str(e)}), flush=True)
        return 0
    except BaseException as e:  # noqa: BLE001 - the verdict is the point
        traceback.print_exc()
        sys.stderr.flush()
        first = (str(e).strip().splitlines() or [""])[0]
        print(RESULT_MARK + json.dumps({"verdict": "dirty", "error": f"{type(e).__module__}.{type(e).__qualname__}: {first}"}), flush=True)
        return 1
    print(RESULT_MARK + json.dumps({"verdict": "clean", "detail": str(detail or "")}), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1]))
