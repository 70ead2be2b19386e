"""Records what Salt 3007.8 answers for each case of the requisite cases into recorded.json.

The cases (extract.py's output) are a third-party input, read from
../shared/third-party/salt-tests/requisites-cases.json beside the checkout.

Each case's files go into a fresh state tree; the call runs with
`salt-call --local --out json`. `{TMP}` in the files stands for a fresh scratch
directory, and is put back in place of that directory in what Salt answered.
Timings (`start_time`, `duration`) are dropped; everything else is kept.

Regenerate (about two minutes):

    /work/saltvenv/bin/python states/tests/data/requisites/gen.py
"""

import concurrent.futures
import json
import os
import pathlib
import subprocess
import sys
import tempfile

HERE = pathlib.Path(__file__).resolve().parent
CASES = HERE.parents[3].parent / "shared/third-party/salt-tests/requisites-cases.json"
if not CASES.is_file():
    raise SystemExit(f"the third-party requisite cases are missing: {CASES}")
SALT_CALL = "/work/saltvenv/bin/salt-call"


def config(d):
    (d / "conf").mkdir()
    (d / "srv").mkdir()
    (d / "tmp").mkdir()
    (d / "conf" / "minion").write_text(
        "\n".join(
            [
                "id: minion",
                "file_client: local",
                f"file_roots: {{base: [{d}/srv]}}",
                f"cachedir: {d}/cache",
                f"root_dir: {d}",
                f"pki_dir: {d}/pki",
                f"log_file: {d}/log",
                f"sock_dir: {d}/sock",
                "user: root",
                "",
            ]
        )
    )


def cli_args(call):
    out = [call["fun"], *[str(a) for a in call["args"]]]
    for k, v in call["kwargs"].items():
        out.append(f"{k}={json.dumps(v)}" if not isinstance(v, str) else f"{k}={v}")
    return out


def scrub(value, tmp):
    if isinstance(value, dict):
        return {
            scrub(k, tmp): scrub(v, tmp)
            for k, v in value.items()
            if k not in ("start_time", "duration")
        }
    if isinstance(value, list):
        return [scrub(v, tmp) for v in value]
    if isinstance(value, str):
        return value.replace(tmp, "{TMP}")
    return value


def record(case):
    with tempfile.TemporaryDirectory() as d:
        d = pathlib.Path(d)
        config(d)
        tmp = str(d / "tmp")
        for name, text in case["files"].items():
            (d / "srv" / name).write_text(text.replace("{TMP}", tmp))
        call = json.loads(json.dumps(case["call"]).replace("{TMP}", tmp))
        proc = subprocess.run(
            [SALT_CALL, "--local", "-c", str(d / "conf"), "--out", "json", "--retcode-passthrough"]
            + cli_args(call),
            capture_output=True,
            text=True,
            cwd=tmp,
            env={**os.environ, "LANG": "C.UTF-8"},
            timeout=300,
        )
        try:
            out = json.loads(proc.stdout)["local"]
        except (ValueError, KeyError):
            out = {"__unparsed__": proc.stdout, "__stderr__": proc.stderr[-2000:]}
        return case["name"], {"retcode": proc.returncode, "return": scrub(out, tmp)}


def main():
    cases = json.loads(CASES.read_text())
    only = set(sys.argv[1:])
    if only:
        cases = [c for c in cases if c["name"] in only]
    path = HERE / "recorded.json"
    recorded = json.loads(path.read_text()) if path.exists() else {}
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        for name, rec in pool.map(record, cases):
            recorded[name] = rec
            print(name, rec["retcode"], file=sys.stderr)
    order = [c["name"] for c in json.loads(CASES.read_text())]
    recorded = {k: recorded[k] for k in order if k in recorded}
    path.write_text(json.dumps(recorded, indent=1) + "\n")


if __name__ == "__main__":
    main()
