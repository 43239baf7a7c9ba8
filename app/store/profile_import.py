"""Operator imports of profiles (`users import`, `users create`): each record is checked against the
profile as read, then its fields are written only if that profile is still as it was read (one script
on its key), and its subject linked only if the subject is still free (one script on the link's key).
So an import racing a first sign-in never gives one subject two profiles or one profile two subjects:
whichever loses changes nothing. A refused record undoes the records written before it."""

import dataclasses
from collections.abc import Callable
from dataclasses import dataclass

from .batches import BATCH, run_script_many
from .profiles import Profile, Profiles

# Write the fields (ARGV[3..]) only if the profile still exists as read (ARGV[1] '1' or '0') with the
# owner read (ARGV[2], '' for none). Returns 1 when written, else '-' (no profile) or '=' .. its owner.
_WRITE_IF_UNCHANGED = """
local exists = redis.call('EXISTS', KEYS[1])
local owner = redis.call('HGET', KEYS[1], 'sub') or ''
if tostring(exists) ~= ARGV[1] or owner ~= ARGV[2] then
  if exists == 0 then return '-' end
  return '=' .. owner
end
if #ARGV > 2 then redis.call('HSET', KEYS[1], unpack(ARGV, 3)) end
return 1
"""

# Put the profile back as it was (ARGV[2..]: its fields; none: it did not exist) if it still has the
# owner this import gave it (ARGV[1]).
_UNDO = """
if (redis.call('HGET', KEYS[1], 'sub') or '') ~= ARGV[1] then return 0 end
redis.call('DEL', KEYS[1])
if #ARGV > 1 then redis.call('HSET', KEYS[1], unpack(ARGV, 2)) end
return 1
"""


class ImportRefused(Exception):
    """A record that may not be written, and why; nothing of the import was written."""

    def __init__(self, index: int, field: str, reason: str):
        super().__init__(reason)
        self.index, self.field, self.reason = index, field, reason


@dataclass
class ImportRecord:
    """A validated record: its normalized username, the fields it gives, and its subject, if any."""

    username: str
    fields: dict
    sub: str | None = None


@dataclass
class ImportCounts:
    """What an import did: profiles created, changed, and found already as the file says."""

    created: int = 0
    updated: int = 0
    unchanged: int = 0


@dataclass
class _Planned:
    index: int
    profile: Profile  # the record merged over the stored profile
    fields: list[str]  # what the write sets: the record's own fields (all of them for a new profile)
    read: dict  # the stored profile's raw hash as read ({} when there was none)
    replaced_sub: str | None  # the subject a relink takes the profile away from


class ProfileImport:
    """Checks and writes imported profiles, all or nothing, safe against concurrent first sign-ins."""

    def __init__(self, redis, keys, profiles: Profiles):
        self._redis = redis
        self._keys = keys
        self._links = profiles.links
        self._write = redis.register_script(_WRITE_IF_UNCHANGED)
        self._undo = redis.register_script(_UNDO)

    def run(
        self,
        records: list[ImportRecord],
        *,
        relink: bool = False,
        create: bool = False,
        progress: Callable[[int], None] = lambda count: None,
    ) -> ImportCounts:
        """Write every record or none; ImportRefused naming the first record that may not be written.
        With `create`, a record whose profile exists is refused. `progress` hears how many more records
        were checked, then written (twice the records in all)."""
        planned = []
        for start in range(0, len(records), BATCH):
            batch = records[start : start + BATCH]
            for offset, (record, raw, linked) in enumerate(zip(batch, *self._read(batch), strict=True)):
                planned.append(self._plan(start + offset, record, relink, create, raw, linked))
            progress(len(batch))
        for start in range(0, len(planned), BATCH):
            self._write_batch(planned, start)
            progress(len(planned[start : start + BATCH]))
        return _counts(planned)

    def _write_batch(self, planned: list[_Planned], start: int) -> None:
        """Write planned[start:start + BATCH] (one round trip, then one per new link); a refused record
        undoes every record written before it and after it in the batch, and raises ImportRefused."""
        batch = planned[start : start + BATCH]
        results = self._write_all(batch)
        for done, (step, result) in enumerate(zip(batch, results, strict=True)):
            refused = self._apply(step, result)
            if refused:
                for later, ok in reversed(list(zip(batch[done + 1 :], results[done + 1 :], strict=True))):
                    if ok == 1:
                        self._revert(later, linked=False)
                for earlier in reversed(planned[: start + done]):
                    self._revert(earlier)
                raise ImportRefused(step.index, *refused)

    def _read(self, records: list[ImportRecord]) -> tuple[list[dict], list[str | None]]:
        """Each record's stored profile hash and the profile its subject is linked to, in one round trip."""
        pipe = self._redis.pipeline(transaction=False)
        for record in records:
            pipe.hgetall(self._keys.user(record.username))
        subs = [record.sub for record in records if record.sub]
        for sub in subs:
            pipe.get(self._keys.subject(sub))
        answers = pipe.execute()
        links = dict(zip(subs, answers[len(records) :], strict=True))
        linked = [links[record.sub].decode() if record.sub and links[record.sub] else None for record in records]
        return answers[: len(records)], linked

    def _write_all(self, steps: list[_Planned]) -> list:
        """Each step's conditional write (_WRITE_IF_UNCHANGED), in one round trip: its results."""
        calls = []
        for step in steps:
            expected = ["1" if step.read else "0", step.read.get("sub", "")]
            calls.append(([self._keys.user(step.profile.username)], expected + step.fields))
        return run_script_many(self._redis, self._write, calls)

    def _plan(
        self, index: int, record: ImportRecord, relink: bool, create: bool, raw: dict, linked: str | None
    ) -> _Planned:
        existing = Profile.from_hash(raw) if raw else None
        if existing and create:
            raise ImportRefused(index, "username", f"profile {record.username} already exists")
        owner = existing.sub if existing else None
        replaced = owner if owner and record.sub and record.sub != owner else None
        if replaced and not relink:
            why = f"profile {record.username} is linked to another subject; use --relink to change it"
            raise ImportRefused(index, "sub", why)
        if linked and linked != record.username:
            raise ImportRefused(index, "sub", f"subject is linked to profile {linked}")
        base = existing or Profile(record.username, record.username, record.username)
        # A field the record leaves out keeps its stored value, the link included: it is not written.
        merged = dataclasses.replace(base, **record.fields, sub=record.sub or owner)
        given = set(record.fields) | ({"sub"} if record.sub else set())
        fields = [
            item for name, value in merged.to_hash().items() if not raw or name in given for item in (name, value)
        ]
        read = {key.decode(): value.decode() for key, value in raw.items()}
        return _Planned(index, merged, fields, read, replaced)

    def _apply(self, step: _Planned, result) -> tuple[str, str] | None:
        """Finish one planned record its conditional write answered `result`; else the field and the reason
        it may not be, nothing of it written."""
        username, sub = step.profile.username, step.profile.sub
        if result != 1:
            return (
                "username",
                f"profile {username} {_change(step.read, result.decode())} while this import ran{NOTHING}",
            )
        # The profile is written before its link, so a link found always names a profile that names it back.
        if sub and sub != step.read.get("sub"):
            other = self._links.link(sub, username)
            if other is not None:
                self._revert(step, linked=False)
                return "sub", f"subject was linked to profile {other} while this import ran{NOTHING}"
        if step.replaced_sub:
            self._links.unlink(step.replaced_sub, username)
        return None

    def _revert(self, step: _Planned, *, linked: bool = True) -> None:
        """Put one written record's profile and subject links back as they were read."""
        username, sub = step.profile.username, step.profile.sub
        if linked and sub and sub != step.read.get("sub"):
            self._links.unlink(sub, username)  # the link goes before the profile it names
        old = [item for pair in step.read.items() for item in pair]
        self._undo(keys=[self._keys.user(username)], args=[sub or "", *old])
        if step.replaced_sub:
            self._links.link(step.replaced_sub, username)


NOTHING = "; nothing was imported, run it again"


def _counts(planned: list[_Planned]) -> ImportCounts:
    counts = ImportCounts()
    for step in planned:
        if not step.read:
            counts.created += 1
        elif all(step.read.get(name) == value for name, value in zip(step.fields[::2], step.fields[1::2], strict=True)):
            counts.unchanged += 1  # every field the record gives is already stored
        else:
            counts.updated += 1
    return counts


def _change(read: dict, found: str) -> str:
    """What happened to a profile since it was read, from what the write script found there."""
    if found == "-":
        return "was deleted"
    owner = found[1:]
    if not read:
        return "was created by a first sign-in" if owner else "was created by someone else"
    return "was linked to another account (a first sign-in)" if owner else "lost its link"
