"""One-off studies, each answering one question on demand (`python -m bench.studies.<name>`); never run by
`make bench`. hang and keepalive also hold the checks that tests/integration runs under the shipped server."""
