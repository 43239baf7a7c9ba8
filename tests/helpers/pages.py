"""Reading the app's HTML answers as a browser user would."""

import html
import re


def error_page_message(response) -> str:
    """The reason the app's sign-in error page gives, once sure it is that page and shows no trace."""
    page = response.get_data(as_text=True)
    assert "<h1>Sign-in problem</h1>" in page and "Traceback" not in page
    return html.unescape(re.search(r'<p id="message">(.*?)</p>', page, re.S).group(1))
