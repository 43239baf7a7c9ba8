"""`make bench` (bench/run.py and the modules it uses; the peers in bench/peers/), run on demand and never
by `make test`, though tests/integration holds the peers to the service's answers and runs two checks of
bench/studies/ under the shipped server."""
