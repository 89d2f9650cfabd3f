"""The matrix checks, parametrized by the plugin with every entry of matrix/*.yaml."""

from pytest_glmstack.suite import *  # noqa: F401,F403
