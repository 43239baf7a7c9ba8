"""The app's URL rules: matched as Werkzeug matches them, their URL builders compiled only when used."""

from flask import Flask
from werkzeug.routing import Rule


class LazyBuilderRule(Rule):
    """A URL rule whose two URL builders are compiled on first use.

    Werkzeug compiles two Python functions per rule as the rule is added; this app builds no URLs,
    and that compiling was two thirds of the time of making an app (every fast test makes one).
    """

    def _compile_builder(self, append_unknown: bool = True):
        """A builder that compiles Werkzeug's on its first call and hands every call to it."""
        compiled = None

        def build(rule, /, **values):  # positional only, as Werkzeug's: a URL variable may be named "rule"
            nonlocal compiled
            if compiled is None:
                compiled = Rule._compile_builder(rule, append_unknown)
            return compiled(rule, **values)

        return build


class ProfilePokeFlask(Flask):
    """Flask with the rule class above."""

    url_rule_class = LazyBuilderRule
