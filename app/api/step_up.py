"""Step-up (RFC 9470): whether the caller's sign-in is strong enough (`acr`) and recent enough
(`auth_time`) for a sensitive action. Each such view declares it once (`@step_up_required`); the
guard checks it after every other check, and the OpenAPI document reads the same declaration."""

import time
from dataclasses import dataclass

from ..challenges import InsufficientUserAuthentication

STEP_UP = "step_up_required"  # the attribute a view that needs step-up carries


def step_up_required(view):
    """Mark `view` as a sensitive action: STEP_UP_ACR / STEP_UP_MAX_AGE apply to it."""
    setattr(view, STEP_UP, True)
    return view


def needs_step_up(view) -> bool:
    """Whether `view` was declared a sensitive action."""
    return getattr(view, STEP_UP, False)


@dataclass(frozen=True)
class StepUpPolicy:
    """The acceptable `acr` values (any one will do) and the oldest acceptable sign-in; empty and None: off."""

    acr_values: tuple[str, ...] = ()
    max_age: int | None = None

    @property
    def active(self) -> bool:
        return bool(self.acr_values) or self.max_age is not None

    def check(self, *, acr: str | None, auth_time: int | None, now: float | None = None) -> None:
        """Nothing when a sign-in with `acr` at `auth_time` meets the policy; else
        InsufficientUserAuthentication saying what is missing."""
        if self.acr_values and acr not in self.acr_values:
            self._refuse("acr", f"a stronger sign-in is required (acr {' or '.join(self.acr_values)})")
        if self.max_age is None:
            return
        now = time.time() if now is None else now
        if auth_time is None:
            self._refuse("no_auth_time", "a recent sign-in is required and the time of this one (auth_time) is unknown")
        if now - auth_time > self.max_age:
            self._refuse("max_age", f"a more recent sign-in is required (at most {self.max_age} s ago)")

    def _refuse(self, reason: str, message: str):
        raise InsufficientUserAuthentication(
            message, acr_values=" ".join(self.acr_values) or None, max_age=self.max_age, reason=reason
        )
