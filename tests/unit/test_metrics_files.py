"""/metrics under gunicorn sums every worker's metrics file; a worker's file caught while it is being
created (it exists empty for a moment) is skipped instead of failing the whole scrape."""

from prometheus_client import generate_latest
from prometheus_client.mmap_dict import MmapedDict, mmap_key

from app.metrics_endpoint import _registry


def test_a_metrics_file_still_being_created_does_not_fail_the_scrape(tmp_path, monkeypatch):
    monkeypatch.setenv("PROMETHEUS_MULTIPROC_DIR", str(tmp_path))
    written = MmapedDict(str(tmp_path / "counter_101.db"))
    written.write_value(mmap_key("pp_pokes", "pp_pokes_total", ["outcome"], ["poked"], "Pokes."), 3.0, 0)
    written.close()
    (tmp_path / "counter_102.db").write_bytes(b"")  # another worker's, created but not yet sized
    body = generate_latest(_registry()).decode()
    assert 'pp_pokes_total{outcome="poked"} 3.0' in body
