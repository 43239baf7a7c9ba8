"""Operator commands: `flask --app wsgi users import|create|show|disable|enable|signout`, each an audit event.

A command's output (JSON for `show`, a JSON summary for `import`, a line for the others) is all that goes
to stdout; its audit and log lines go to stderr, and so does an import's progress when stderr is a
terminal. Exit codes: 0 done; 1 refused (a bad file, a refused record, an unknown user), nothing
written, or Redis failed; 2 a usage or configuration error.
"""

import dataclasses
import json
import sys

import click
import redis
from flask.cli import AppGroup
from marshmallow import RAISE, Schema, ValidationError, fields, validates
from tqdm import tqdm

from .api.schemas import JsonNumber
from .audit import audit
from .extensions import services
from .logs import logs_on_stderr
from .store.profile_import import ImportRecord, ImportRefused
from .store.profiles import normalize_username


class ConfigProblem(click.ClickException):
    """A configuration error met by a `flask` command: one line on stderr naming the setting, exit 2."""

    exit_code = 2

    def show(self, file=None) -> None:
        click.echo(f"ConfigError: {self.message}", err=True)


class UsersGroup(AppGroup):
    """The `users` commands: their log and audit lines on stderr, and a Redis failure ending any of them with
    one line (exit 1), not a traceback."""

    def invoke(self, ctx):
        try:
            with logs_on_stderr():
                return super().invoke(ctx)
        except redis.RedisError as error:
            raise click.ClickException(f"Redis: {type(error).__name__}: {error}") from None


users_cli = UsersGroup("users", help="Manage user profiles.")


class ProfileRecordSchema(Schema):
    class Meta:
        unknown = RAISE

    username = fields.String(required=True)
    handle = fields.String()
    display_name = fields.String()
    sub = fields.String(allow_none=True, validate=lambda value: bool(value))
    # No defaults: a field a record leaves out keeps its stored value.
    stats = fields.Dict(keys=fields.String(), values=fields.Dict(keys=fields.String()))
    aggregate_scores = fields.Dict(keys=fields.String(), values=JsonNumber())
    disabled = fields.Boolean()

    @validates("username")
    def _username(self, value, **_):
        if normalize_username(value) is None:
            raise ValidationError("must be 1-64 letters, digits, '_', '.' or '-'")


def _profiles():
    return services().store.profiles


def _progress(total: int, what: str) -> tqdm:
    """A progress bar for `total` records on stderr, drawn only when stderr is a terminal."""
    return tqdm(total=total, desc=what, unit=" records", file=sys.stderr, disable=not sys.stderr.isatty())


def _load_records(path: str) -> list[ImportRecord]:
    """Every record of the file, validated; nothing is written until every record is known to be good."""
    try:
        with open(path, encoding="utf-8") as handle:
            records = json.load(handle)
    except (OSError, ValueError) as error:
        raise click.ClickException(f"{path}: {error}") from None
    if not isinstance(records, list):
        raise click.ClickException(f"{path}: expected a JSON list of profile objects")
    loaded, seen_users, seen_subs = [], set(), set()
    schema = ProfileRecordSchema()  # one for all: making one took 0.3 ms, 20 s of a 100,000-record file
    with _progress(len(records), "validating") as bar:
        for index, record in enumerate(records):
            loaded.append(_loaded(schema, index, record, seen_users, seen_subs))
            bar.update()
    return loaded


def _loaded(schema: Schema, index: int, record, seen_users: set, seen_subs: set) -> ImportRecord:
    """Record `index` validated, its username and subject not seen before in the file."""
    try:
        data = schema.load(record if isinstance(record, dict) else {"_": record})
    except ValidationError as error:
        field, problems = next(iter(sorted(error.messages.items())))
        raise click.ClickException(f"record {index}: field {field!r}: {problems}") from None
    username = normalize_username(data.pop("username"))
    sub = data.pop("sub", None)
    if username in seen_users or (sub and sub in seen_subs):
        raise click.ClickException(f"record {index}: field 'username' or 'sub': appears twice in the file")
    seen_users.add(username)
    seen_subs.add(sub)
    return ImportRecord(username, data, sub)


@users_cli.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
@click.option("--relink", is_flag=True, help="Allow a record to change the subject a profile is linked to.")
def import_users(path: str, relink: bool):
    """Create or update profiles from a JSON file; writes every record or, saying why, none. Prints what it
    did as JSON: {"created": n, "updated": n, "unchanged": n}."""
    records = _load_records(path)
    try:
        with _progress(2 * len(records), "importing") as bar:
            counts = services().store.profile_import.run(records, relink=relink, progress=bar.update)
    except ImportRefused as refused:
        raise click.ClickException(f"record {refused.index}: field {refused.field!r}: {refused.reason}") from None
    done = dataclasses.asdict(counts)
    audit("admin.users.import", file=path, count=len(records), relink=relink, **done)
    click.echo(json.dumps(done))


@users_cli.command("create")
@click.argument("username")
@click.option("--handle")
@click.option("--display-name")
@click.option("--sub")
def create_user(username: str, handle: str | None, display_name: str | None, sub: str | None):
    """Create a new profile."""
    normalized = normalize_username(username)
    if normalized is None:
        raise click.ClickException("username must be 1-64 letters, digits, '_', '.' or '-'")
    given = {"handle": handle, "display_name": display_name}
    record = ImportRecord(normalized, {name: value for name, value in given.items() if value}, sub)
    try:
        services().store.profile_import.run([record], create=True)
    except ImportRefused as refused:
        raise click.ClickException(refused.reason) from None
    audit("admin.users.create", user=normalized, sub=sub)
    click.echo(f"created {normalized}")


@users_cli.command("show")
@click.argument("username")
def show_user(username: str):
    """Print a stored profile as JSON."""
    profile = _stored_profile(username)
    audit("admin.users.show", user=profile.username, sub=profile.sub)
    click.echo(json.dumps(dataclasses.asdict(profile), indent=2, sort_keys=True))


def _set_disabled(username: str, disabled: bool) -> None:
    normalized = normalize_username(username) or ""
    if not _profiles().set_disabled(normalized, disabled):
        raise click.ClickException(f"no profile {username}")
    audit("admin.users.disable" if disabled else "admin.users.enable", user=normalized)
    click.echo(f"{'disabled' if disabled else 'enabled'} {username.lower()}")


@users_cli.command("disable")
@click.argument("username")
def disable_user(username: str):
    """Disable a profile: its tokens get 403 and it cannot be poked."""
    _set_disabled(username, True)


@users_cli.command("enable")
@click.argument("username")
def enable_user(username: str):
    """Enable a disabled profile."""
    _set_disabled(username, False)


@users_cli.command("signout")
@click.argument("username")
def sign_out_user(username: str):
    """End every browser session of a profile's user and revoke their refresh tokens."""
    profile = _stored_profile(username)
    ended = services().browser_sessions.end_all(profile.sub) if profile.sub else []
    audit("session.ended", reason="admin", user=profile.username, sub=profile.sub, ended=ended)
    click.echo(f"ended {len(ended)} sessions of {profile.username}")


def _stored_profile(username: str):
    """The stored profile of `username`; a ClickException (exit 1) naming it when there is none."""
    profile = _profiles().get(normalize_username(username) or "")
    if profile is None:
        raise click.ClickException(f"no profile {username}")
    return profile
