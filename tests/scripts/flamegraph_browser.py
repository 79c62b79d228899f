#!/usr/bin/python3
# Opens a flame graph SVG (argv[1]) in headless Chromium through chromedriver
# (Debian's chromium, chromium-driver and python3-selenium: nothing from the
# network), uses it as a person would, and prints what it saw as "key<TAB>value"
# lines for tests/e2e/test_flamegraph_browser.c to judge:
#   hooked, errors, error      the error collector ran; script errors (count, each)
#   frames                     boxes the page's script picked up
#   hover_details              the details line while the pointer is on ZOOM_FRAME
#   zoom_x, zoom_width         ZOOM_FRAME's box after a click on it
#   zoom_unzoom_display        "Reset Zoom"'s display after the click
#   zoom_outside_display       OUTSIDE_FRAME's display after the click
#   zoom_parent_opacity        PARENT_FRAME's opacity after the click
#   overlaps, overlap          what the legend overlaps on screen (count, each)
#   reset_width                ZOOM_FRAME's width after "Reset Zoom"
#   search_hits, search_fill   boxes in the highlight colour after searching SEARCH
#   search_other_fill          ZOOM_FRAME's fill after the search (SEARCH must miss it)
#   matched                    the "matched" text
#   driver_error               the browser or its driver failed (then exit status 1)
# Usage: flamegraph_browser.py SVG ZOOM_FRAME PARENT_FRAME OUTSIDE_FRAME SEARCH
import os
import shutil
import sys
import tempfile

from selenium import webdriver
from selenium.common.exceptions import WebDriverException
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.action_chains import ActionChains
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

# Installed before any of the page's script runs: uncaught errors and
# console.error calls land in window.__errors, whatever the driver's logs keep.
ERROR_HOOK = """
window.__errors = [];
window.addEventListener('error', function (e) { window.__errors.push('error: ' + e.message); });
window.addEventListener('unhandledrejection', function (e) {
    window.__errors.push('rejection: ' + e.reason); });
(function () {
    var original = console.error;
    console.error = function () {
        window.__errors.push('console: ' + Array.prototype.join.call(arguments, ' '));
        return original.apply(console, arguments);
    };
})();
"""

# The boxes on screen of the legend and of every text it must not meet.
OVERLAPS = """
function box(e) { var r = e.getBoundingClientRect(); return r.width && r.height ? r : null; }
function meet(a, b) {
    return a.left < b.right && b.left < a.right && a.top < b.bottom && b.top < a.bottom; }
var legend = box(document.getElementById('legend'));
if (!legend) return ['no legend'];
var found = [];
['title', 'sub', 'unzoom', 'search', 'details', 'matched'].forEach(function (id) {
    var other = box(document.getElementById(id));
    if (other && meet(legend, other)) found.push(id); });
document.querySelectorAll('g.f').forEach(function (g) {
    var other = box(g.querySelector('rect'));
    if (g.style.display != 'none' && other && meet(legend, other))
        found.push('frame ' + g.getAttribute('data-n')); });
return found;
"""


def first_line(error):
    return ((error.msg or "").splitlines() or [""])[0]


def say(key, value):
    print("%s\t%s" % (key, value), flush=True)


def frame(driver, name):
    for g in driver.find_elements(By.CSS_SELECTOR, "g.f"):
        if g.get_attribute("data-n") == name:
            return g
    raise SystemExit("no frame %r in the page" % name)


def start_browser(profile_dir):
    options = webdriver.ChromeOptions()
    options.binary_location = "/usr/lib/chromium/chromium"
    # Tests run as root, and Chromium will not start as root with its sandbox
    # on (it refuses: the sandbox is built to confine an unprivileged user).
    # The page is our own local file and the browser gets no network, so the
    # sandbox has nothing to guard here.
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu",
                     "--disable-dev-shm-usage", "--no-first-run",
                     "--disable-background-networking", "--disable-extensions",
                     "--disable-component-update", "--window-size=1300,900",
                     "--user-data-dir=" + profile_dir):
        options.add_argument(argument)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    service = Service("/usr/bin/chromedriver", log_path=os.devnull)
    return webdriver.Chrome(service=service, options=options)


def check_zoom(driver, zoom_name, parent_name, outside_name):
    target = frame(driver, zoom_name)
    ActionChains(driver).move_to_element(target).perform()
    say("hover_details", driver.find_element(By.ID, "details").text)
    target.click()
    rect = target.find_element(By.TAG_NAME, "rect")
    say("zoom_x", rect.get_attribute("x"))
    say("zoom_width", rect.get_attribute("width"))
    say("zoom_unzoom_display",
        driver.execute_script("return getComputedStyle(document.getElementById('unzoom')).display"))
    say("zoom_outside_display",
        driver.execute_script("return getComputedStyle(arguments[0]).display",
                              frame(driver, outside_name)))
    say("zoom_parent_opacity",
        driver.execute_script("return getComputedStyle(arguments[0]).opacity",
                              frame(driver, parent_name)))


def check_legend(driver):
    overlaps = driver.execute_script(OVERLAPS)
    say("overlaps", len(overlaps))
    for what in overlaps:
        say("overlap", what)


def check_reset(driver, zoom_name):
    driver.find_element(By.ID, "unzoom").click()
    say("reset_width",
        frame(driver, zoom_name).find_element(By.TAG_NAME, "rect").get_attribute("width"))


def check_search(driver, pattern, other_name):
    # The page asks with prompt(), as a person would see it: answer the dialog.
    driver.find_element(By.ID, "search").click()
    dialog = WebDriverWait(driver, 10).until(lambda d: d.switch_to.alert)
    dialog.send_keys(pattern)
    dialog.accept()
    highlight = "rgb(230,0,230)"
    fills = [g.find_element(By.TAG_NAME, "rect").get_attribute("fill")
             for g in driver.find_elements(By.CSS_SELECTOR, "g.f")]
    say("search_hits", sum(1 for fill in fills if fill == highlight))
    say("search_fill", highlight)
    say("search_other_fill",
        frame(driver, other_name).find_element(By.TAG_NAME, "rect").get_attribute("fill"))
    say("matched", driver.find_element(By.ID, "matched").text)


def report_errors(driver):
    errors = driver.execute_script("return window.__errors || null")
    say("hooked", "yes" if errors is not None else "no")
    errors = list(errors or [])
    for entry in driver.get_log("browser"):
        if entry.get("level") == "SEVERE":
            errors.append("log: " + entry.get("message", ""))
    say("errors", len(errors))
    for error in errors:
        say("error", error.replace("\n", " "))


def main():
    svg, zoom_name, parent_name, outside_name, pattern = sys.argv[1:6]
    profile_dir = tempfile.mkdtemp(prefix="pybpfprof-chromium.")
    steps = (("zoom", lambda d: check_zoom(d, zoom_name, parent_name, outside_name)),
             ("legend", check_legend),
             ("reset", lambda d: check_reset(d, zoom_name)),
             ("search", lambda d: check_search(d, pattern, zoom_name)),
             ("errors", report_errors))
    driver = None
    status = 0
    try:
        driver = start_browser(profile_dir)
        driver.execute_cdp_cmd("Page.addScriptToEvaluateOnNewDocument", {"source": ERROR_HOOK})
        driver.get("file://" + os.path.abspath(svg))
        say("frames", driver.execute_script("return fs.length"))
        # A step that fails leaves the page as it is: the next ones still report,
        # the script errors above all.
        for name, step in steps:
            try:
                step(driver)
            except WebDriverException as e:
                say("driver_error", "%s: %s" % (name, first_line(e)))
                status = 1
    except WebDriverException as e:
        say("driver_error", "start: %s" % first_line(e))
        status = 1
    finally:
        if driver:
            driver.quit()
        shutil.rmtree(profile_dir, ignore_errors=True)
    return status


sys.exit(main())
