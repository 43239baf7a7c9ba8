"""Real headless Chromium (Debian's package) driven by Playwright for Python; no browser download."""

import shutil

import pytest
from playwright.sync_api import sync_playwright

from tests.helpers.real_services import (  # noqa: F401 - the real Redis, provider and gunicorn app
    idp,
    live_app,
    redis,
    redis_url,
    workdir,
)

CHROMIUM = shutil.which("chromium") or "/usr/bin/chromium"
# Without the background-networking flags Chromium keeps dialling hosts this closed network refuses.
CHROMIUM_ARGS = [
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
]


@pytest.fixture(scope="session")
def browser():
    if not shutil.which(CHROMIUM):
        pytest.fail("Debian's chromium is missing: run `make test`, which installs it", pytrace=False)
    with sync_playwright() as playwright:
        chromium = playwright.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROMIUM_ARGS)
        yield chromium
        chromium.close()


@pytest.fixture
def page(browser):
    context = browser.new_context()
    page = context.new_page()
    page.set_default_timeout(15_000)
    yield page
    context.close()
