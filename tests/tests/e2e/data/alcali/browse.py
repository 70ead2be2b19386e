#!/usr/bin/env python3
"""Drives Alcali's web UI in headless Chromium as a user would, for tests/tests/e2e/alcali.rs.

Chromium is spoken to over its DevTools protocol on a pipe (--remote-debugging-pipe: JSON
messages separated by NUL bytes, on the browser's file descriptors 3 and 4), so no port, no
websocket library and nothing outside Python's standard library is needed. Input is real:
mouse clicks at an element's place and key events per character, so Vue sees the same events
as from a person.

    browse.py CHROMIUM ALCALI_URL USER PASSWORD MINION ARTIFACT_DIR SCHEDULE

Steps: log in through the login page, open the run page, run `test.ping` on MINION, wait for
its result, then open the jobs page and wait for the job's row with USER as its user (Alcali
reads it from Salt's `salt_returns` and `jids` tables). Then refresh Alcali's key list on its
keys page (its settings page offers the accepted minions it holds), refresh its schedules page
and wait for MINION's job SCHEDULE in its table (Alcali asks `schedule.list` through salt-api),
and on the settings page
pick MINION under "Parse modules from" and submit (Alcali's "initialize database"), waiting for
Alcali's answer. A screenshot is saved after each of the four; the last line printed is JSON:
{"run": text of the results card, "jobs": [text of each such row], "schedules": [text of each
schedule row of MINION's SCHEDULE], "initdb": Alcali's answer,
"screenshots": [paths], "steps": [when each step ended]}. Any failure exits non-zero with what was being waited for, the page's
text and its console messages, and a screenshot of the moment.
"""

import base64
import fcntl
import json
import os
import subprocess
import sys
import tempfile
import time

# Longest any one step may take, in seconds.
STEP_TIMEOUT = 60


class Failure(Exception):
    """A step of the walk through the UI failed."""


class Browser:
    """A headless Chromium and one page of it, over the DevTools pipe."""

    def __init__(self, chromium, profile):
        to_chrome_r, self._to_chrome = os.pipe()
        self._from_chrome, from_chrome_w = os.pipe()
        # The browser's ends are moved to 10 and above, clear of the 3 and 4 they go to.
        for_chrome = []
        for fd in (to_chrome_r, from_chrome_w):
            for_chrome.append(fcntl.fcntl(fd, fcntl.F_DUPFD, 10))
            os.close(fd)
        to_chrome_r, from_chrome_w = for_chrome

        # The browser reads commands on fd 3 and writes answers on fd 4; a shell's
        # redirections put the pipe ends there.
        place = f'exec "$@" 3<&{to_chrome_r} 4>&{from_chrome_w} {to_chrome_r}<&- {from_chrome_w}>&-'
        self.proc = subprocess.Popen(
            [
                "/bin/bash",  # dash takes only one-digit descriptors
                "-c",
                place,
                "sh",
                chromium,
                "--headless",
                "--remote-debugging-pipe",
                "--no-sandbox",  # CI runs as root, where Chromium's sandbox refuses to start
                "--disable-gpu",
                "--disable-dev-shm-usage",
                "--no-first-run",
                "--no-default-browser-check",
                "--disable-extensions",
                "--window-size=1600,1000",
                f"--user-data-dir={profile}",
                "about:blank",
            ],
            pass_fds=(to_chrome_r, from_chrome_w),
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
        )
        os.close(to_chrome_r)
        os.close(from_chrome_w)
        self._buf = b""
        self._next_id = 0
        self.session = None
        self.console = []
        targets = self.call("Target.getTargets")["targetInfos"]
        page = next(t for t in targets if t["type"] == "page")
        self.session = self.call(
            "Target.attachToTarget", targetId=page["targetId"], flatten=True
        )["sessionId"]
        self.call("Page.enable")
        self.call("Runtime.enable")

    def _read_message(self, deadline):
        while b"\0" not in self._buf:
            if time.monotonic() > deadline:
                raise Failure("Chromium did not answer over the DevTools pipe")
            chunk = os.read(self._from_chrome, 1 << 16)
            if not chunk:
                raise Failure(f"Chromium exited (status {self.proc.poll()})")
            self._buf += chunk
        raw, self._buf = self._buf.split(b"\0", 1)
        return json.loads(raw)

    def call(self, method, **params):
        """Sends one DevTools command and returns its result, keeping events it sees."""
        self._next_id += 1
        msg = {"id": self._next_id, "method": method, "params": params}
        if self.session:
            msg["sessionId"] = self.session
        os.write(self._to_chrome, json.dumps(msg).encode() + b"\0")
        deadline = time.monotonic() + STEP_TIMEOUT
        while True:
            m = self._read_message(deadline)
            if m.get("method") == "Runtime.consoleAPICalled":
                args = m["params"].get("args", [])
                self.console.append(
                    " ".join(str(a.get("value", a.get("description", ""))) for a in args)
                )
            elif m.get("method") == "Runtime.exceptionThrown":
                self.console.append(
                    m["params"]["exceptionDetails"].get("exception", {}).get("description", "")
                )
            if m.get("id") == self._next_id:
                if "error" in m:
                    raise Failure(f"{method}: {m['error']}")
                return m.get("result", {})

    def js(self, expression):
        """The value of a JavaScript expression in the page (promises awaited)."""
        r = self.call(
            "Runtime.evaluate",
            expression=expression,
            returnByValue=True,
            awaitPromise=True,
        )
        if "exceptionDetails" in r:
            raise Failure(f"page script failed: {r['exceptionDetails']}")
        return r["result"].get("value")

    def until(self, what, expression, timeout=STEP_TIMEOUT, why=None):
        """Polls a JavaScript expression until it is truthy; returns its value. `why`, an
        expression read on timeout, says what stood in the way."""
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            v = self.js(expression)
            if v:
                return v
            time.sleep(0.2)
        reason = self.js(why) if why else None
        raise Failure(
            f"timed out after {timeout} s waiting for {what}" + (f" ({reason})" if reason else "")
        )

    def click(self, what, expression, timeout=STEP_TIMEOUT):
        """Clicks, with the mouse, the middle of the element `expression` finds, once it has
        stopped moving (the same box in two polls: Vuetify's menus and speed dials slide their
        buttons in, slower on a loaded machine) and nothing covers it there."""
        rect = self.until(
            what,
            f"""(() => {{ const e = {expression};
                if (!e) return null;
                e.scrollIntoView({{block: 'center'}});
                const r = e.getBoundingClientRect();
                if (!(r.width > 0)) return null;
                const box = [r.x, r.y, r.width, r.height].join(',');
                const still = window.__saltqClickBox === box;
                window.__saltqClickBox = box;
                const x = r.x + r.width / 2, y = r.y + r.height / 2;
                const hit = document.elementFromPoint(x, y);
                const clear = hit && (hit === e || e.contains(hit));
                window.__saltqCover = clear || !hit ? null
                    : `${{hit.tagName.toLowerCase()}}.${{hit.className}} "${{(hit.innerText || '').slice(0, 60)}}"`;
                return still && clear ? {{x, y}} : null;
            }})()""",
            timeout,
            why="window.__saltqCover ? 'covered by ' + window.__saltqCover : null",
        )
        self.js("window.__saltqClickBox = null")
        for kind in ("mousePressed", "mouseReleased"):
            self.call(
                "Input.dispatchMouseEvent",
                type=kind,
                x=rect["x"],
                y=rect["y"],
                button="left",
                clickCount=1,
            )

    def type(self, text):
        """Types text into the focused element, one key press per character."""
        for ch in text:
            self.call("Input.dispatchKeyEvent", type="keyDown", key=ch, text=ch)
            self.call("Input.dispatchKeyEvent", type="keyUp", key=ch)

    def value(self, label):
        return self.js(f"({field(label)})?.value")

    def fill(self, *fields):
        """Types each (label, text) into its field, and again if a view redrawn meanwhile
        (Alcali's redraw once their data arrives) lost any: done when every field has held
        its text for a second."""
        for _ in range(5):
            for label, text in fields:
                if self.value(label) != text:
                    self.click(f"the {label} field", field(label))
                    self.type(text)
            held_since = time.monotonic()
            while all(self.value(label) == text for label, text in fields):
                if time.monotonic() - held_since > 1:
                    return
                time.sleep(0.1)
        raise Failure(f"the fields do not keep their text: {fields}")

    def goto(self, url):
        self.call("Page.navigate", url=url)

    def screenshot(self, path):
        data = self.call("Page.captureScreenshot", format="png")["data"]
        with open(path, "wb") as f:
            f.write(base64.b64decode(data))
        return path

    def close(self):
        try:
            self.call("Browser.close")
        except Failure:
            pass
        try:
            self.proc.wait(timeout=10)
        except subprocess.TimeoutExpired:
            self.proc.kill()
            self.proc.wait()


def field(label):
    """JavaScript finding the input of the Vuetify field labelled `label`."""
    return f"""[...document.querySelectorAll('.v-input')]
        .filter(e => e.offsetParent !== null)
        .filter(e => (e.querySelector('label')?.textContent || '').trim() === {json.dumps(label)})
        .map(e => e.querySelector('input'))[0]"""


def slot(label):
    """JavaScript finding the clickable box of the Vuetify field (a select) labelled `label`."""
    return f"""[...document.querySelectorAll('.v-input')]
        .filter(e => e.offsetParent !== null)
        .filter(e => (e.querySelector('label')?.textContent || '').trim() === {json.dumps(label)})
        .map(e => e.querySelector('.v-input__slot'))[0]"""


def button(text):
    """JavaScript finding the visible button reading `text`."""
    return f"""[...document.querySelectorAll('button')]
        .filter(e => e.offsetParent !== null && !e.disabled)
        .filter(e => e.textContent.trim().toLowerCase() === {json.dumps(text.lower())})[0]"""


def main():
    chromium, url, user, password, minion, artifacts, schedule = sys.argv[1:8]
    url = url.rstrip("/")
    os.makedirs(artifacts, exist_ok=True)
    shots = []
    steps = []
    started = time.monotonic()

    def step(name):
        steps.append(f"{name} at {time.monotonic() - started:.1f} s")

    with tempfile.TemporaryDirectory(prefix="alcali-chromium-") as profile:
        b = Browser(chromium, profile)
        try:
            # The login page.
            b.goto(f"{url}/#/login")
            b.fill(("Login", user), ("Password", password))
            b.click("the sign-in button", button("Sign in"))
            b.until(
                "the dashboard after logging in",
                "location.hash === '#/' && !!localStorage.getItem('access')",
            )
            # The user's settings arrive after the token; views drawn before them break.
            b.until(
                "the user's settings",
                "!!(JSON.parse(localStorage.getItem('vuex') || '{}').settings || {}).Layout",
            )

            step("logged in")
            # The run page: test.ping on the minion.
            b.goto(f"{url}/#/run")
            b.fill(("Target", minion), ("Function", "test.ping"))
            b.click("the run button", button("Run"))
            run = b.until(
                f"the result of test.ping on {minion}",
                f"""(() => {{ const e = document.querySelector('.ansiStyle');
                    const t = e ? e.innerText : '';
                    return t.includes({json.dumps(minion)}) && t.includes('True') ? t : null;
                }})()""",
            )
            shots.append(b.screenshot(os.path.join(artifacts, "run-test-ping.png")))

            step("test.ping ran")
            # The jobs page, read from Salt's tables: the job's row, with the user who ran
            # it. The page does not refresh itself, so it is reloaded until the row is there.
            b.goto(f"{url}/#/jobs")
            rows_js = """[...document.querySelectorAll('table tbody tr')]
                .map(r => r.innerText).filter(t => /\\d{20}/.test(t))"""
            jobs = None
            for _ in range(10):
                rows = b.until(
                    "the jobs table",
                    f"(() => {{ const r = {rows_js}; return r.length ? r : null; }})()",
                )
                jobs = [
                    r for r in rows if "test.ping" in r and minion in r and user in r.split()
                ]
                if jobs:
                    break
                b.call("Page.reload")
            if not jobs:
                raise Failure(f"no test.ping job of {user} on {minion} in the jobs table: {rows}")
            shots.append(b.screenshot(os.path.join(artifacts, "jobs.png")))

            step("jobs listed")
            # The keys page: its floating menu's refresh button reads the keys from salt-api
            # (wheel key.list_all and key.finger) into Alcali's table.
            b.goto(f"{url}/#/keys")
            b.click("the keys page's floating menu", "document.querySelector('.v-speed-dial button')")
            b.click(
                "the refresh-keys button",
                """[...document.querySelectorAll('.v-speed-dial__list button')]
                    .filter(e => e.textContent.trim() === 'refresh')[0]""",
            )
            b.until(
                f"Alcali's 'Keys refreshed' and {minion} in the keys table",
                f"""document.body.innerText.includes('Keys refreshed')
                    && [...document.querySelectorAll('table tbody tr')]
                        .some(r => r.innerText.includes({json.dumps(minion)}))""",
            )

            step("keys refreshed")
            # Alcali's toasts sit over the floating menus' corner: the next page's menu is
            # clicked once the keys page's toast is gone.
            b.until(
                "the 'Keys refreshed' toast to close",
                "![...document.querySelectorAll('.v-snack__content')].some(e => e.offsetParent !== null)",
            )
            # The schedules page: its floating menu's refresh asks every minion's
            # `schedule.list` (return_yaml=False) through salt-api into Alcali's table, which
            # is drawn again with a row per minion and job.
            b.goto(f"{url}/#/schedules")
            b.until(
                "the schedules page's table",
                "location.hash === '#/schedules' && !!document.querySelector('.v-data-table')",
            )
            # The floating menu opens on a click once drawn (a second click would close it):
            # clicked only while closed, its refresh button given 10 s to settle each time.
            refresh = """[...document.querySelectorAll('.v-speed-dial__list button')]
                .filter(e => e.offsetParent !== null && e.textContent.trim() === 'refresh')[0]"""
            for attempt in range(4):
                if not b.js("!!document.querySelector('.v-speed-dial--is-active')"):
                    b.click(
                        "the schedules page's floating menu",
                        "document.querySelector('.v-speed-dial button')",
                    )
                try:
                    b.click("the refresh-schedules button", refresh, timeout=10)
                    break
                except Failure:
                    if attempt == 3:
                        raise
            b.until(
                "Alcali's 'Schedules refreshed' (its answer to the refresh)",
                "document.body.innerText.includes('Schedules refreshed')",
            )
            schedules = b.until(
                f"{schedule} of {minion} in the schedules table",
                f"""(() => {{
                    const r = [...document.querySelectorAll('table tbody tr')]
                        .map(r => r.innerText)
                        .filter(t => t.includes({json.dumps(minion)}) && t.includes({json.dumps(schedule)}));
                    return r.length ? r : null;
                }})()""",
            )
            shots.append(b.screenshot(os.path.join(artifacts, "schedules.png")))
            step("schedules listed")
            # The settings page: "Parse modules from" the minion, submitted. Alcali answers
            # "refreshed modules using MINION", or an error, in a toast.
            b.goto(f"{url}/#/settings")
            # The page redraws as its data arrives, which can drop a choice: chosen again
            # until the select shows it.
            selected = f"""[...document.querySelectorAll('.v-input')]
                .filter(e => (e.querySelector('label')?.textContent || '').trim() === 'Target')
                .some(e => (e.querySelector('.v-select__selection')?.innerText || '').trim()
                           === {json.dumps(minion)})"""
            item = f"""[...document.querySelectorAll('.menuable__content__active .v-list-item')]
                .filter(e => e.innerText.trim() === {json.dumps(minion)})[0]"""
            for _ in range(10):
                if b.js(selected):
                    break
                if not b.js(f"!!({item})"):
                    b.click("the Target select", slot("Target"))
                try:
                    b.click(f"{minion} in the Target list", item, timeout=5)
                except Failure:
                    pass
                time.sleep(0.5)
            b.until(f"{minion} chosen as the Target", selected)
            # The row's own Submit (the first on the page; the user settings have another).
            b.click(
                "the Parse modules Submit button",
                """(() => { const e = [...document.querySelectorAll('button')]
                    .filter(e => e.offsetParent !== null
                                 && e.textContent.trim().toLowerCase() === 'submit')[0];
                    return e && !e.disabled ? e : null; })()""",
            )
            step("submitted")
            answer = f"refreshed modules using {minion}"
            initdb = b.until(
                "Alcali's answer to Parse modules",
                f"""(() => {{ const t = document.body.innerText;
                    if (t.includes({json.dumps(answer)})) return {json.dumps(answer)};
                    const e = [...document.querySelectorAll('.v-snack__content, [role=alert]')]
                        .map(e => e.innerText.trim())
                        .filter(t => t && !/Parse module started|Keys refreshed|Refreshing keys/.test(t));
                    return e.length ? 'error: ' + e.join(' | ') : null;
                }})()""",
                timeout=300,
            )
            step("answered")
            shots.append(b.screenshot(os.path.join(artifacts, "initialize-database.png")))
            if initdb != answer:
                raise Failure(f"Parse modules failed: {initdb}")
        except Failure as e:
            try:
                shots.append(b.screenshot(os.path.join(artifacts, "failure.png")))
                text = b.js("document.body ? document.body.innerText : ''")
            except Failure:
                text = "(page unreadable)"
            print(f"browse.py: {e}", file=sys.stderr)
            print(f"page text:\n{text}", file=sys.stderr)
            print("console:\n" + "\n".join(b.console), file=sys.stderr)
            print(f"screenshots: {shots}", file=sys.stderr)
            print(f"steps: {steps}", file=sys.stderr)
            b.close()
            sys.exit(1)
        b.close()
    print(
        json.dumps(
            {
                "run": run,
                "jobs": jobs,
                "schedules": schedules,
                "initdb": initdb,
                "screenshots": shots,
                "steps": steps,
            }
        )
    )


if __name__ == "__main__":
    main()
