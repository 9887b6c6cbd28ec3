"""Open `viz.html`'s pages in the installed headless Chromium (for the browser tests and
the screenshots of docs/images/make_pictures.py).

selenium drives Debian's `chromium` with its `chromedriver`; the driver's path is given,
so selenium never downloads one. Nothing here is needed to *view* a page: any browser
opens the file.
"""

from __future__ import annotations

import shutil
import tempfile
from contextlib import contextmanager
from pathlib import Path

INSTALL_HINT = (
    "headless Chromium not found: install it with `sudo apt-get install chromium "
    "chromium-driver` (Debian/Ubuntu) and `pip install selenium` (in the test extra)"
)
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",  # containers often give /dev/shm 64 MB, too little for it
)


def _find(*names):
    return next((path for path in map(shutil.which, names) if path), None)


def chromium_available() -> bool:
    """Whether selenium, `chromium` and `chromedriver` are all installed."""
    try:
        import selenium.webdriver  # noqa: F401 (only asking whether it imports)
    except ImportError:
        return False
    return _find("chromium", "chromium-browser") is not None and _find("chromedriver") is not None


@contextmanager
def chromium(width=1400, height=900):
    """A selenium driver of a fresh headless Chromium (its own throw-away profile);
    raises RuntimeError with the install command when it is not installed."""
    if not chromium_available():
        raise RuntimeError(INSTALL_HINT)
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    options = webdriver.ChromeOptions()
    options.binary_location = _find("chromium", "chromium-browser")
    for flag in CHROMIUM_FLAGS + (f"--window-size={width},{height}",):
        options.add_argument(flag)
    profile = tempfile.mkdtemp(prefix="tg-chromium-")
    options.add_argument(f"--user-data-dir={profile}")
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    driver = webdriver.Chrome(service=Service(_find("chromedriver")), options=options)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)


def screenshot(page_path, png_path, steps=0, width=1400, height=900) -> Path:
    """Open the page at `page_path`, press "next" `steps` times, and save a PNG."""
    png_path = Path(png_path)
    with chromium(width, height) as driver:
        driver.get(Path(page_path).resolve().as_uri())
        for _ in range(steps):
            driver.find_element("id", "next").click()
        driver.save_screenshot(str(png_path))
    return png_path
