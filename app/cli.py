"""Operator commands: `flask --app wsgi users import|create|show|disable|enable`."""

import dataclasses
import json

import click
from flask.cli import AppGroup
from marshmallow import RAISE, Schema, ValidationError, fields, validates

from .extensions import services
from .store.profiles import Profile, normalize_username

users_cli = AppGroup("users", help="Manage user profiles.")


class ProfileRecordSchema(Schema):
    class Meta:
        unknown = RAISE

    username = fields.String(required=True)
    handle = fields.String()
    display_name = fields.String()
    sub = fields.String(allow_none=True, validate=lambda value: bool(value))
    stats = fields.Dict(keys=fields.String(), values=fields.Dict(keys=fields.String()), load_default=dict)
    aggregate_scores = fields.Dict(keys=fields.String(), values=fields.Float(allow_nan=False), load_default=dict)
    disabled = fields.Boolean(load_default=False)

    @validates("username")
    def _username(self, value, **_):
        if normalize_username(value) is None:
            raise ValidationError("must be 1-64 letters, digits, '_', '.' or '-'")


def _profiles():
    return services().store.profiles


def _load_records(path: str) -> list[Profile]:
    try:
        with open(path, encoding="utf-8") as handle:
            records = json.load(handle)
    except (OSError, ValueError) as error:
        raise click.ClickException(f"{path}: {error}") from None
    if not isinstance(records, list):
        raise click.ClickException(f"{path}: expected a JSON list of profile objects")
    profiles, seen_users, seen_subs = [], set(), set()
    for index, record in enumerate(records):
        try:
            data = ProfileRecordSchema().load(record if isinstance(record, dict) else {"_": record})
        except ValidationError as error:
            field, problems = next(iter(sorted(error.messages.items())))
            raise click.ClickException(f"record {index}: field {field!r}: {problems}") from None
        username = normalize_username(data["username"])
        sub = data.get("sub")
        if username in seen_users or (sub and sub in seen_subs):
            raise click.ClickException(f"record {index}: field 'username' or 'sub': appears twice in the file")
        seen_users.add(username)
        seen_subs.add(sub)
        _check_links(index, username, sub)
        profiles.append(
            Profile(
                username=username,
                handle=data.get("handle") or username,
                display_name=data.get("display_name") or username,
                sub=sub,
                stats=data["stats"],
                aggregate_scores=data["aggregate_scores"],
                disabled=data["disabled"],
            )
        )
    return profiles


def _check_links(index: int, username: str, sub: str | None) -> None:
    existing = _profiles().get(username)
    if sub and existing and existing.sub and existing.sub != sub:
        raise click.ClickException(f"record {index}: field 'sub': profile {username} belongs to another subject")
    linked = _profiles().username_for_subject(sub) if sub else None
    if linked and linked != username:
        raise click.ClickException(f"record {index}: field 'sub': subject is linked to profile {linked}")


@users_cli.command("import")
@click.argument("path", type=click.Path(dir_okay=False))
def import_users(path: str):
    """Create or update profiles from a JSON file; validates every record before writing any."""
    profiles = _load_records(path)
    for profile in profiles:
        _profiles().put(profile)
    click.echo(f"imported {len(profiles)} profiles")


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
    if _profiles().get(normalized):
        raise click.ClickException(f"profile {normalized} already exists")
    _check_links(0, normalized, sub)
    _profiles().put(Profile(normalized, handle or normalized, display_name or normalized, sub=sub))
    click.echo(f"created {normalized}")


@users_cli.command("show")
@click.argument("username")
def show_user(username: str):
    """Print a stored profile as JSON."""
    profile = _profiles().get(normalize_username(username) or "")
    if profile is None:
        raise click.ClickException(f"no profile {username}")
    click.echo(json.dumps(dataclasses.asdict(profile), indent=2, sort_keys=True))


def _set_disabled(username: str, disabled: bool) -> None:
    if not _profiles().set_disabled(normalize_username(username) or "", disabled):
        raise click.ClickException(f"no profile {username}")
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
