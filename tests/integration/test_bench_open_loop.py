"""make bench's open-loop windows (bench/wrk_paced.lua through bench.load.drive_paced) against a small
keep-alive server on this machine: they send at the rate asked whatever the server does, and count a
request's latency from when it was meant to be sent, so a server that falls behind shows the wait its
clients had before they could even send (the coordinated omission a closed-loop client hides)."""

import os
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import pytest

from bench.load import Window, drive_paced, percentile

SERVICE_S = 0.02  # the slow path serves one request at a time, 20 ms each: 50 req/s at most


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    one_at_a_time = threading.Lock()

    def do_GET(self):
        if self.path == "/slow":
            with self.one_at_a_time:
                time.sleep(SERVICE_S)
        self.send_response(200)
        self.send_header("Content-Length", "2")
        self.end_headers()
        self.wfile.write(b"ok")

    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def server():
    httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    httpd.daemon_threads = True
    thread = threading.Thread(target=httpd.serve_forever, daemon=True)
    thread.start()
    yield f"http://127.0.0.1:{httpd.server_address[1]}"
    httpd.shutdown()
    httpd.server_close()


def paced(url: str, rate: float) -> dict:
    return drive_paced("test", Window(url, {}), os.getpid(), os.getpid(), seconds=3, rate=rate)


def test_a_server_that_keeps_up_is_sent_the_rate_asked(server):
    figures = paced(f"{server}/", 160)
    # Closed-loop, 16 connections to this server would send thousands a second; a busy machine starting
    # wrk's 16 threads late in a 3 s window has cost up to a fifth of the requests (126 of 160 a second).
    assert 0.7 * 160 <= figures["rps"] <= 1.2 * 160, figures["rps"]
    assert figures["late"] <= 0.05 * figures["requests"], figures["late"]  # a loaded machine's hiccups
    # Nothing queued: from the intended send and from the actual send the middle request agrees.
    assert figures["p50_us"] < 3 * figures["p50_sent_us"] + 2000, (figures["p50_us"], figures["p50_sent_us"])


def test_a_server_that_falls_behind_shows_the_wait_before_the_send(server):
    figures = paced(f"{server}/slow", 160)  # three times what the slow path serves
    assert figures["rps"] < 0.6 * 160, figures["rps"]
    assert figures["late"] > 0
    # From the actual send a request waits behind the 15 others (about 0.3 s); from when it was meant
    # to go it also waited for its connection to be free, longer with each request the window sent.
    assert figures["p50_us"] > 1.5 * figures["p50_sent_us"], (figures["p50_us"], figures["p50_sent_us"])
    assert figures["p99_us"] > 1_000_000, figures["p99_us"]


def test_percentiles_come_from_the_histogram_buckets():
    histogram = {100: 50, 200: 49, 300: 1}  # bucket b holds latencies around 1.01 ** b µs
    assert percentile(histogram, 0.50) == pytest.approx(1.01**100.5)
    assert percentile(histogram, 0.99) == pytest.approx(1.01**200.5)
    assert percentile(histogram, 0.999) == pytest.approx(1.01**300.5)
