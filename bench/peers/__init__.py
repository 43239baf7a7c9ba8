"""The same three routes written plainly, for `make bench` to measure the service against."""
