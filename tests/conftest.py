import sys
from pathlib import Path

# In-process pytester runs restore sys.modules afterwards, while the package object keeps its
# lazily imported submodules as attributes; import them here so both stay consistent.
import psutil  # noqa: F401
import httpx  # noqa: F401
import pytest_glmstack.diagnose  # noqa: F401
import pytest_glmstack.fingerprint  # noqa: F401
import pytest_glmstack.hardware  # noqa: F401
import pytest_glmstack.launcher  # noqa: F401
import pytest_glmstack.leases  # noqa: F401
import pytest_glmstack.server  # noqa: F401
import pytest_glmstack.sweep  # noqa: F401

sys.path.insert(0, str(Path(__file__).parent))


def pytest_configure(config):
    config.addinivalue_line("markers", "machine_wide: signals or kills glmstack processes machine-wide; "
                                       "runs alone (the -n 2 pass of make test leaves it out)")
    config.addinivalue_line("markers", "self_contained: starts servers, pytest sessions or environments of its own "
                                       "(not the matrix's), so the outer run's workers change nothing in it; the "
                                       "-n 2 pass of make test leaves it out rather than start them a second time")
    config.addinivalue_line("markers", "slurm: runs servers through a real Slurm (skipped, with the reason, where "
                                       "none answers; scripts/slurm-localhost.sh start sets one up)")
