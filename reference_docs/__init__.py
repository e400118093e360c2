"""The documentation site's reference pages, generated from the code that defines what they describe: the
settings model, the command-line parser, the service's OpenAPI document, the metrics' declarations and the
PySpark client's docstrings. `mkdocs_hook.py` adds them to the site at build time (they are never written by
hand, so they cannot drift); tests/docs checks that everything they list has a description."""
