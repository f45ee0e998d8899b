"""The trajectory app's tests share the urban app's headless chromium (module scope)."""

from tests.urban.app.test_browser import browser  # noqa: F401  (a fixture)
