"""Every view of the app says in a one-line docstring what it promises."""


def test_every_view_says_in_one_line_what_it_promises(unit_app):
    views = {endpoint: view for endpoint, view in unit_app.view_functions.items() if endpoint != "static"}
    unsaid = sorted(endpoint for endpoint, view in views.items() if len((view.__doc__ or "").strip().splitlines()) != 1)
    assert unsaid == [], f"views without a one-line docstring: {unsaid}"
    assert len(views) == 16
