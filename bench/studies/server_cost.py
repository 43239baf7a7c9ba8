"""Where the server's instructions go, function by function: `python -m bench.studies.server_cost
[gunicorn options]` runs one gunicorn worker under callgrind as `python -m bench.studies.instructions
--server` does, with the functions named in ZONES wrapped each in a C function of its own (a small
extension built here with gcc against callgrind's view), so that callgrind's inclusive count of that C
function is the function's own inclusive count: instructions per request by function, nested as the
calls nest, beside the worker's total. The wrapping itself costs a few hundred instructions a call,
counted in the zone around it.

gunicorn runs bench/studies/server_cost_conf.py: the shipped gunicorn.conf.py plus the wrapping, in
post_worker_init."""

import os
import re
import subprocess
import sys
import sysconfig
import tempfile
from pathlib import Path

from .instructions import REQUESTS, dump_total, served

CONFIG = Path(__file__).with_name("server_cost_conf.py")
ZONE_COUNT = 64
# (label, "module:Owner.attribute"), wrapped in this order where the attribute exists; a label starting
# with "app" counts toward the app, the rest toward the server.
ZONES = (
    ("poller: select and dispatch", "gunicorn.workers.gthread:ThreadWorker.wait_for_and_dispatch_events"),
    ("poller: read a request", "server.gthread_worker:Worker._readable"),
    ("poller: RequestBuffer.feed", "server.request_buffer:RequestBuffer.feed"),
    ("poller: hand to a thread", "gunicorn.workers.gthread:ThreadWorker.enqueue_req"),
    ("poller: hand to a thread", "server.gthread_worker:Worker.enqueue_req"),
    ("poller: run callbacks", "gunicorn.workers.gthread:PollableMethodQueue.run_callbacks"),
    ("poller: run callbacks", "server.request_threads:Wakeups.run_callbacks"),
    ("poller: finish_request", "server.gthread_worker:Worker.finish_request"),
    ("poller: murder_keepalived", "server.gthread_worker:Worker.murder_keepalived"),
    ("poller: heartbeat notify", "gunicorn.workers.base:Worker.notify"),
    ("poller: is_parent_alive", "gunicorn.workers.gthread:ThreadWorker.is_parent_alive"),
    ("thread: the whole job", "server.serving:Serving.run_request"),
    ("thread: handle", "gunicorn.workers.gthread:ThreadWorker.handle"),
    ("thread: handle", "server.serving:Serving.handle"),
    ("thread: conn.init", "server.request_threads:Connection.init"),
    ("thread: parse (gunicorn)", "gunicorn.http.parser:Parser.__next__"),
    ("thread: parse (lean)", "server.serving:Serving._parse"),
    ("thread: handle_request (gunicorn)", "server.gthread_worker:Worker.handle_request"),
    ("thread: serve (lean)", "server.serving:Serving._serve"),
    ("thread: wsgi.create", "gunicorn.http.wsgi:create"),
    ("thread: environ (lean)", "server.serving:environ"),
    ("thread: start_response", "gunicorn.http.wsgi:Response.start_response"),
    ("thread: start_response", "server.answer:Answer.start_response"),
    ("thread: write", "gunicorn.http.wsgi:Response.write"),
    ("thread: write", "server.answer:Answer.write"),
    ("thread: close", "gunicorn.http.wsgi:Response.close"),
    ("thread: close", "server.answer:Answer.close"),
    ("thread: should_close", "gunicorn.http.wsgi:Response.should_close"),
    ("thread: log.access", "gunicorn.glogging:Logger.access"),
    ("thread: _keepalive_after", "server.gthread_worker:Worker._keepalive_after"),
    ("thread: Future.set_result", "concurrent.futures._base:Future.set_result"),
    ("thread: Future.set_running", "concurrent.futures._base:Future.set_running_or_notify_cancel"),
    ("thread: defer to poller", "gunicorn.workers.gthread:PollableMethodQueue.defer"),
    ("thread: defer to poller", "server.request_threads:Wakeups.defer"),
    ("app: Flask.__call__", "flask.app:Flask.__call__"),
)
EXTENSION = """#include <Python.h>
#define ZONE(n) static PyObject *zone_##n(PyObject *self, PyObject *const *args, size_t nargsf, PyObject *names) \\
    { return PyObject_Vectorcall(args[0], args + 1, PyVectorcall_NARGS(nargsf) - 1, names); }
%(zones)s
static PyMethodDef methods[] = {
%(methods)s
    {NULL, NULL, 0, NULL}};
static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "zones", NULL, -1, methods};
PyMODINIT_FUNC PyInit_zones(void) { return PyModule_Create(&module); }
"""


def build(folder: Path) -> None:
    """Compile the zones extension into `folder`."""
    source = folder / "zones.c"
    source.write_text(
        EXTENSION
        % {
            "zones": "\n".join(f"ZONE({n})" for n in range(ZONE_COUNT)),
            "methods": "\n".join(
                f'    {{"zone_{n}", (PyCFunction)(void (*)(void))zone_{n}, METH_FASTCALL | METH_KEYWORDS, NULL}},'
                for n in range(ZONE_COUNT)
            ),
        }
    )
    include = sysconfig.get_paths()["include"]
    target = folder / f"zones{sysconfig.get_config_var('EXT_SUFFIX')}"
    subprocess.run(["gcc", "-O2", "-shared", "-fPIC", f"-I{include}", str(source), "-o", str(target)], check=True)


def inclusive(dump: Path) -> dict[int, int]:
    """Inclusive instructions of each zone function in a callgrind dump."""
    output = subprocess.run(
        ["callgrind_annotate", "--inclusive=yes", "--threshold=100", str(dump)],
        check=True,
        capture_output=True,
        text=True,
    ).stdout
    found = {}
    for line in output.splitlines():
        match = re.match(r"\s*([\d,]+) .*:zone_(\d+)\b", line)
        if match:
            zone = int(match.group(2))
            found[zone] = found.get(zone, 0) + int(match.group(1).replace(",", ""))
    return found


def main(options: list[str]) -> None:
    with tempfile.TemporaryDirectory() as scratch:
        folder = Path(os.environ.get("INSTRUCTIONS_KEEP") or scratch)
        folder.mkdir(parents=True, exist_ok=True)
        build(folder)
        env = {"ZONES_DIR": str(folder)}
        dumps = served(str(folder), ["--config", str(CONFIG), *options], env)
        labels = [label for label, _ in ZONES]
        print(f"instructions per request (k), {REQUESTS} requests per route, inclusive; wrapped where present")
        print("| zone | " + " | ".join(dumps) + " |")
        print("|---|" + "--:|" * len(dumps))
        columns = {name: (dump_total(dump) / count, inclusive(dump), count) for name, (dump, count) in dumps.items()}
        print("| worker total | " + " | ".join(f"{total / 1000:,.0f}" for total, _, _ in columns.values()) + " |")
        seen = []
        for label in labels:
            if label in seen:
                continue
            seen.append(label)
            zones = [n for n, (other, _) in enumerate(ZONES) if other == label]
            cells = [sum(found.get(n, 0) for n in zones) / count for _, found, count in columns.values()]
            if any(cells):
                print(f"| {label} | " + " | ".join(f"{cell / 1000:,.1f}" for cell in cells) + " |")
        app = [n for n, (label, _) in enumerate(ZONES) if label.startswith("app")]
        server = [total - sum(found.get(n, 0) for n in app) / count for total, found, count in columns.values()]
        print(
            "| server (total less the app's call, start_response included) | "
            + " | ".join(f"{cell / 1000:,.0f}" for cell in server)
            + " |"
        )


if __name__ == "__main__":
    main(sys.argv[1:])
