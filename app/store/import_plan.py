"""What an operator import writes for each record, decided against the profile as read (a new profile,
or the record's own fields over the stored one; a relink only when asked, a subject linked elsewhere
never), and what it did, counted; app.store.profile_import writes it."""

import dataclasses
from dataclasses import dataclass

from .profile_record import Profile


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
class Planned:
    """One record as the import will write it, and what it read to decide so."""

    index: int
    profile: Profile  # the record merged over the stored profile
    fields: list[str]  # what the write sets: the record's own fields (all of them for a new profile)
    read: dict  # the stored profile's raw hash as read ({} when there was none)
    replaced_sub: str | None  # the subject a relink takes the profile away from


def plan(index: int, record: ImportRecord, relink: bool, create: bool, raw: dict, linked: str | None) -> Planned:
    """What the import writes for record `index`, given the stored profile's hash `raw` and the profile its
    subject is `linked` to; ImportRefused when it may not be written (see ProfileImport.run)."""
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
    fields = [item for name, value in merged.to_hash().items() if not raw or name in given for item in (name, value)]
    read = {key.decode(): value.decode() for key, value in raw.items()}
    return Planned(index, merged, fields, read, replaced)


def counts(planned: list[Planned]) -> ImportCounts:
    """What an import of `planned` did: profiles created, changed, and found already as the file says."""
    found = ImportCounts()
    for step in planned:
        if not step.read:
            found.created += 1
        elif all(step.read.get(name) == value for name, value in zip(step.fields[::2], step.fields[1::2], strict=True)):
            found.unchanged += 1  # every field the record gives is already stored
        else:
            found.updated += 1
    return found
