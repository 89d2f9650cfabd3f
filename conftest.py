# The plugin is loaded through its pytest11 entry point ("glmstack"); pytester is for the
# plugin's own tests.
pytest_plugins = ["pytester"]
