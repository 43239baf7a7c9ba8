"""`users import` in batches against the real Redis: a few round trips per batch of records instead of
several per record, and still all or nothing: a record refused in a later batch undoes every record
written before it, in earlier batches and in its own, and nothing after it is written."""

import json

import pytest

from app.extensions import services
from app.store import profile_import
from app.store.profile_import import ImportRecord, ImportRefused

pytestmark = pytest.mark.integration


def reply_writes(redis) -> int:
    """Replies the server has written so far: at least one per round trip (a long one takes several)."""
    return redis.info("stats")["total_writes_processed"]


@pytest.mark.single_redis  # INFO stats of one server
def test_two_thousand_records_take_a_few_round_trips_per_batch_not_per_record(app, redis, tmp_path):
    records = [{"username": f"batch{i}", "aggregate_scores": {"overall": i}} for i in range(2000)]
    path = tmp_path / "users.json"
    path.write_text(json.dumps(records))
    runner = app.test_cli_runner()
    for expected in ({"created": 2000, "updated": 0, "unchanged": 0}, {"created": 0, "updated": 0, "unchanged": 2000}):
        before = reply_writes(redis)
        result = runner.invoke(args=["users", "import", str(path)])
        spent = reply_writes(redis) - before - 1
        assert json.loads(result.stdout) == expected
        # 4 batches read and 4 written (about 50 replies written, long ones in parts): a round trip per
        # read and per write of each record was 4,000.
        assert spent <= 200, spent


def test_a_record_refused_in_a_later_batch_undoes_the_earlier_batches_and_its_own(app, redis, monkeypatch):
    monkeypatch.setattr(profile_import, "BATCH", 3)  # batches [0 1 2] [3 4 5] [6]
    prefix = app.config["REDIS_KEY_PREFIX"]
    records = [ImportRecord(f"batched{i}", {"display_name": f"B{i}"}, f"batched-sub-{i}") for i in range(7)]
    with app.app_context():
        store = services().store
        checked = []

        def sign_in_once_all_are_checked(count: int) -> None:
            checked.append(count)
            if sum(checked) == len(records):  # planned, not yet written: a first sign-in takes batched4
                store.profiles.link_subject("signed-in-sub", "batched4", "Signed In")

        with pytest.raises(ImportRefused) as refused:
            store.profile_import.run(records, progress=sign_in_once_all_are_checked)
    assert (refused.value.index, refused.value.field) == (4, "username")
    assert "profile batched4 was created by a first sign-in while this import ran" in refused.value.reason
    left = sorted(key.decode() for key in redis.scan_iter(match=f"{prefix}*batched*"))
    assert left == [f"{prefix}user:{{batched4}}"]
    assert redis.hget(f"{prefix}user:{{batched4}}", "sub") == b"signed-in-sub"
    assert [redis.get(f"{prefix}sub:batched-sub-{i}") for i in range(7)] == [None] * 7
