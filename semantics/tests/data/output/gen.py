#!/usr/bin/env python3
"""Generate the golden files for saltq's outputters from real Salt 3007.8.

What it writes (paths relative to this file):
  cases/<name>.json   one golden case per corpus entry:
                      {"input": <the data passed to the outputter>,
                       "expected": {"<variant>": "<exact stdout>", ...}}
  ../../../src/python/printable.rs
                      the table of code points that Python's str.isprintable()
                      rejects, used by saltq's python_repr (Python escapes them)

A variant is "<outputter>[.color][.retcode<N>][.indent<N>]": the outputter name,
whether colour was on, the retcode the CLI passed as `_retcode` (colours the
nested outputter red), and the value of `--out-indent`. "Exact stdout" is what
`salt.output.display_output` prints: the outputter's text, right-stripped, plus
one newline, or nothing at all when that text is empty.

How to run it (Salt is the oracle; nothing of it is copied into saltq):
  python3 -m venv /tmp/saltvenv-out
  /tmp/saltvenv-out/bin/pip install salt==3007.8 pyyaml jinja2 markupsafe \
      msgpack looseversion packaging distro psutil jmespath tornado
  /tmp/saltvenv-out/bin/python semantics/tests/data/output/gen.py

The corpus is the hand-written CORPUS below (what minions return, plus the
corners of each outputter) and a few seeded random cases (random_*), which
stay the same from run to run. It is written as JSON text and decoded with
json.loads, so Salt sees exactly the value that saltq's test decodes with
serde_json. PyYAML must be built with libyaml (the PyPI wheels are): Salt then
dumps YAML with CSafeDumper, and saltq follows libyaml's emitter.
"""

import contextlib
import copy
import io
import json
import os
import random
import sys
import unicodedata

import salt.config
import salt.output
import salt.version
import yaml

HERE = os.path.dirname(os.path.abspath(__file__))
CASES_DIR = os.path.join(HERE, "cases")
PRINTABLE_RS = os.path.join(HERE, "..", "..", "..", "src", "python", "printable.rs")

LONG_WORDS = " ".join(f"word{i}" for i in range(40))
NO_RESPONSE = (
    "Minion did not return. [No response]\n"
    "The minions may not have all finished running and any remaining minions "
    "will return upon completion. To look up the return data for this job "
    "later, run the following command:\n\n"
    "salt-run jobs.lookup_jid 20261120235749409904"
)

# (name, JSON text). Names become file names: keep them [a-z0-9_].
CORPUS = [
    ("ping_true", '{"minion0": true}'),
    ("ping_false", '{"minion0": false}'),
    ("null", '{"minion0": null}'),
    (
        "several_minions",
        '{"web2": true, "web10": true, "db1": false, "alpha": null, "Zeta": "up"}',
    ),
    ("string_one_line", '{"minion0": "hello world"}'),
    (
        "string_multi_line",
        json.dumps({"minion0": "line one\nline two\n  indented line\n"}),
    ),
    ("string_empty", '{"minion0": ""}'),
    ("string_only_newline", json.dumps({"minion0": "\n"})),
    ("string_blank_lines", json.dumps({"minion0": "\n\nx\n\n"})),
    ("string_trailing_spaces", json.dumps({"minion0": "trailing   "})),
    ("string_only_spaces", json.dumps({"minion0": "   "})),
    (
        "string_line_breaks",
        json.dumps(
            {"minion0": "a\r\nb\rc\x0bd\x0ce\x1cf\x1dg\x1eh\x85i\u2028j\u2029k"}
        ),
    ),
    ("int", '{"minion0": 42}'),
    (
        "ints",
        '{"minion0": [0, -1, 7, 9007199254740993, 18446744073709551615,'
        " -9223372036854775808]}",
    ),
    ("float", '{"minion0": 1.5}'),
    (
        "floats",
        '{"minion0": [1.0, 0.5, -0.0, 0.0, 1e20, 1e16, 1e15, 123456789012345678.0,'
        " 1e-5, 0.0001, 3.141592653589793, 1.5e300, 5e-324, 2.5e-7, 100.0,"
        " 1e2, -2.5, 0.1, 1.7976931348623157e308, 9999999999999998.0]}",
    ),
    ("empty_dict", '{"minion0": {}}'),
    ("empty_list", '{"minion0": []}'),
    ("top_empty_dict", "{}"),
    (
        "nested_dicts",
        '{"minion0": {"outer": {"inner": {"leaf": "value", "n": 1},'
        ' "list": ["Hello", "World"], "dictionary": {"abc": 123, "def": 456}},'
        ' "bar": "baz"}}',
    ),
    (
        "list_of_dicts",
        '{"minion0": [{"name": "a", "size": 1}, {"name": "b", "tags": ["x", "y"]},'
        " {}]}",
    ),
    ("list_of_lists", '{"minion0": [[1, [2, []]], [{}], [], "tail"]}'),
    (
        "list_mixed_multi_line",
        json.dumps({"minion0": ["one\ntwo", "x", None, True, 2.0, {"k": "v\nw"}]}),
    ),
    (
        "unicode",
        json.dumps(
            {
                "minion0": "h\u00e9llo w\u00f6rld \u2713 \u65e5\u672c\u8a9e \U0001F600",
                "\u043a\u043b\u044e\u0447": "\u0437\u043d\u0430\u0447\u0435\u043d\u0438\u0435",
            },
            ensure_ascii=False,
        ),
    ),
    (
        "cmd_run_all",
        '{"minion0": {"pid": 12457, "retcode": 3, "stdout": "hi", "stderr": "err"}}',
    ),
    (
        "multi_function",
        '{"minion0": {"test.ping": true, "test.echo": "hi"}}',
    ),
    ("error_not_available", '{"minion0": "\'test.foo\' is not available."}'),
    (
        "error_invalid_args",
        json.dumps(
            {
                "minion0": "Passed invalid arguments to test.echo: echo() missing 1 "
                "required positional argument: 'text'\n\n    Return a string - "
                "used for testing the connection\n\n    CLI Example:\n\n    "
                ".. code-block:: bash\n\n        salt '*' test.echo 'foo bar baz "
                "quo qux'\n    "
            }
        ),
    ),
    ("no_response", json.dumps({"ghost": NO_RESPONSE})),
    ("not_connected", json.dumps({"ghost": "Minion did not return. [Not connected]"})),
    (
        "yaml_keys_need_quoting",
        json.dumps(
            {
                "minion0": {
                    "yes": "no",
                    "on": "off",
                    "true": "false",
                    "Yes": "NO",
                    "y": "n",
                    "null": "~",
                    "Null": "NULL",
                    "~": "TRUE",
                    "1": "1.0",
                    "0x1F": "0o17",
                    "012": "1_000",
                    "0b101": "+12",
                    "1:20": "2001-12-14",
                    "2001-12-14t21:59:43.10-05:00": "2001-12-14 21:59:43.10 -5",
                    "-": "- a",
                    "-a": "a-",
                    "a: b": "#c",
                    "key #x": "x #y",
                    "a#b": "c:d",
                    "a:": ":a",
                    "@at": "`bt",
                    "%p": "!t",
                    "&a": "*b",
                    "|l": ">f",
                    "?": "? q",
                    "?x": "x?",
                    "[x]": "{y}",
                    "a,b": "c,d",
                    " lead": "trail ",
                    "---": "...",
                    "--x": "..y",
                    "<<": "=",
                    "": "",
                    ".inf": ".nan",
                    "-.inf": ".5",
                    "1e3": "1.0e+3",
                    "-.5": "1.",
                    "http://example.com/a?b=c": "x'y",
                    '"dq"': "'sq'",
                }
            }
        ),
    ),
    (
        "special_characters",
        json.dumps(
            {
                "minion0": [
                    "tab\there",
                    "esc\u001b[31mred\u001b[0m",
                    "quote ' single",
                    'quote " double',
                    "both ' \"",
                    "back\\slash",
                    "bell\u0007",
                    "del\u007f",
                    "nbsp\u00a0x",
                    "bom\ufeffx",
                    "zwsp\u200bx",
                    "soft\u00adhyphen",
                    "private\ue000",
                    "nul\u0000x",
                    "c1\u0080\u009f",
                    "latin\u00ff\u0100",
                    "surrogate-free \U0010fffd",
                    "unassigned \u0378 \U000e0001",
                    "line\u2028sep",
                    "nel\u0085x",
                    "\u3000ideo",
                    "fffe\ufffe",
                ]
            }
        ),
    ),
    ("esc_in_key", json.dumps({"minion0": {"k\u001bey": "v"}})),
    (
        "long_strings",
        json.dumps(
            {
                "minion0": {
                    "words": LONG_WORDS,
                    "nospace": "x" * 200,
                    "tabbed": "\t" + LONG_WORDS,
                    "multi": LONG_WORDS + "\n" + LONG_WORDS,
                    "double_spaces": "aaaa  " * 30,
                    "quoted": "'" + LONG_WORDS,
                    "unicode_words": " ".join(["\u00e9\u00e9\u00e9\u00e9"] * 40),
                }
            }
        ),
    ),
    (
        "long_keys",
        json.dumps(
            {
                "minion0": {
                    "k" * 128: 1,
                    "k" * 129: 2,
                    "\u00e9" * 64: 3,
                    "\u00e9" * 65: 4,
                    "w " * 70: 5,
                }
            }
        ),
    ),
    ("multi_line_key", json.dumps({"minion0": {"a\nb": 1, "c": {"d\ne": [1]}}})),
    (
        "list_in_list_in_dict",
        json.dumps({"minion0": {"l": [[], {}, "", [[1]], {"a": []}]}}),
    ),
    (
        "long_list",
        json.dumps({"minion0": list(range(60)), "minion1": ["item%d" % i for i in range(30)]}),
    ),
    (
        "grains_like",
        json.dumps(
            {
                "minion0": {
                    "os": "Ubuntu",
                    "osrelease": "22.04",
                    "ipv4": ["10.0.0.5", "127.0.0.1"],
                    "mem_total": 1985,
                    "num_cpus": 2,
                    "saltversion": "3007.8",
                    "cpu_flags": ["fpu", "vme", "de", "pse", "tsc", "msr", "pae",
                                  "mce", "cx8", "apic", "sep", "mtrr", "pge", "mca",
                                  "cmov", "pat", "pse36", "clflush", "mmx", "fxsr",
                                  "sse", "sse2", "ht", "syscall", "nx", "lm"],
                    "gpus": [{"model": "Virtio GPU", "vendor": "unknown"}],
                    "virtual": "kvm",
                    "zmqversion": None,
                }
            }
        ),
    ),
    (
        "state_apply_like",
        json.dumps(
            {
                "minion0": {
                    "file_|-/etc/motd_|-/etc/motd_|-managed": {
                        "__id__": "/etc/motd",
                        "__run_num__": 0,
                        "__sls__": "motd",
                        "changes": {"diff": "--- \n+++ \n@@ -1 +1 @@\n-old\n+new\n"},
                        "comment": "File /etc/motd updated",
                        "duration": 12.345,
                        "name": "/etc/motd",
                        "result": True,
                        "start_time": "12:00:00.000000",
                    }
                }
            }
        ),
    ),
    (
        "numbers_as_strings",
        json.dumps(
            {"minion0": ["1", "1.0", "-1", "0", "007", "1e5", "true", "null", "", "0o7",
                         "1_0", "190:20:30", "0x_1", ".1", "1.", "+.5e+3", "NaN", "~"]}
        ),
    ),
    (
        "key_sorting",
        json.dumps(
            {"minion0": {"b": 1, "a": 2, "B": 3, "_": 4, "10": 5, "9": 6,
                         "\u00e9": 7, "A": 8, "": 9}},
            ensure_ascii=False,
        ),
    ),
    ("top_string", json.dumps("just a string")),
    ("top_string_multi_line", json.dumps("multi\nline\n")),
    ("top_int", "5"),
    ("top_float", "2.5"),
    ("top_null", "null"),
    ("top_true", "true"),
    ("top_list", '[1, "two", null, {"b": 1, "a": [2]}]'),
    ("top_empty_list", "[]"),
    ("top_empty_string", '""'),
    (
        "top_long_list",
        json.dumps(
            ["item number %d" % i for i in range(12)]
            + [{"zeta": LONG_WORDS, "alpha": list(range(30))}, [LONG_WORDS, "x"]]
        ),
    ),
    ("top_long_string", json.dumps(LONG_WORDS + "\nsecond line " + LONG_WORDS)),
    (
        "txt_values",
        json.dumps(
            {
                "m1": {"a": 1, "b": [1, "two"]},
                "m2": [1, 2],
                "m3": None,
                "m4": 1.0,
                "m5": "",
                "m6": "x\ny",
                "m7": False,
            }
        ),
    ),
    ("deep_nesting", json.dumps({"m": {"a": [{"b": [{"c": [[{"d": {"e": "f"}}]]}]}]}})),
]

# Pieces of random strings: YAML indicators, line breaks of every kind, quotes,
# text that resolves to another YAML type, non-printable and wide characters.
RANDOM_ATOMS = [
    " ", "  ", "\n", "\n\n", "\r\n", "\t", "'", '"', ":", ": ", "#", " #", "-", "- ",
    "?", "? ", ",", "[", "]", "{", "}", "&", "*", "!", "|", ">", "%", "@", "`", "\\",
    "\x1b", "\x00", "\x85", "\u2028", "\u2029", "\xa0", "\ufeff", "\u00e9",
    "\u65e5\u672c", "\U0001F600", "\ue000", "\u0378", "yes", "null", "~", "1",
    "0x1f", "1.5", "1e3", ".inf", "2001-12-14", "<<", "=", "---", "...", "word",
    "longerword", "x" * 30, "\x7f", "\x1c", "\u3000", "\x0b", "\x0c", "\r",
]
# Pieces of long random strings, to exercise line folding at 80 columns.
FOLD_ATOMS = ["ab", "abcdefgh", "x" * 13, " ", " ", " ", "  ", "\n", "'", "\t",
              "\u00e9", "\U0001F600", "\u2028", "-", ":", "#", " #", ": "]


def random_value(rnd, atoms, maxlen, depth):
    """A random JSON value built from `atoms`, nested at most `depth` deep."""

    def text(limit):
        if rnd.random() < 0.1:
            return " ".join(f"w{i}" for i in range(rnd.randint(10, 40)))
        return "".join(rnd.choice(atoms) for _ in range(rnd.randint(0, limit)))

    def scalar():
        r = rnd.random()
        if r < 0.5:
            return text(maxlen)
        if r < 0.6:
            return rnd.choice([None, True, False])
        if r < 0.75:
            return rnd.choice([0, -1, 7, 2**63 - 1, -(2**63), 2**64 - 1,
                               rnd.randint(-10**6, 10**6)])
        return rnd.choice([0.0, -0.0, 1.5, 1e20, 1e-7, 1e16, rnd.uniform(-1e6, 1e6),
                           rnd.uniform(0, 1) * 10 ** rnd.randint(-30, 30)])

    def value(d):
        r = rnd.random()
        if d <= 0 or r < 0.4:
            return scalar()
        if r < 0.7:
            return [value(d - 1) for _ in range(rnd.randint(0, 5))]
        return {text(8): value(d - 1) for _ in range(rnd.randint(0, 5))}

    if depth < 0:  # a top-level value that is not a dict of minions
        return value(-depth)
    return {text(6) or "minion": value(depth) for _ in range(rnd.randint(1, 3))}


def random_corpus():
    """Seeded random cases (the seed keeps the golden files stable)."""
    rnd = random.Random(3007)
    cases = []
    for i in range(8):
        data = random_value(rnd, RANDOM_ATOMS, 12, 3)
        cases.append((f"random_{i:02}", json.dumps(data, ensure_ascii=False)))
    for i in range(4):
        data = random_value(rnd, FOLD_ATOMS, 90, 2)
        cases.append((f"random_fold_{i:02}", json.dumps(data, ensure_ascii=False)))
    for i in range(4):
        data = random_value(rnd, FOLD_ATOMS if i % 2 else RANDOM_ATOMS, 40, -2)
        cases.append((f"random_top_{i:02}", json.dumps(data, ensure_ascii=False)))
    return cases


# Outputter -> the `--out-indent` values that change its output (None: unset).
INDENTS = {
    "nested": [None],
    "json": [None, -1, 0, 2],
    "yaml": [None, -1, 0, 1, 4, 10],
    "txt": [None],
    "raw": [None],
    "quiet": [None],
}


def variants():
    """Yield (variant name, outputter, color, retcode, indent)."""
    for out, indents in INDENTS.items():
        for indent in indents:
            suffix = "" if indent is None else f".indent{indent}"
            yield f"{out}{suffix}", out, False, 0, indent
        if out == "nested":
            yield "nested.color", out, True, 0, None
            yield "nested.retcode1", out, False, 1, None
            yield "nested.color.retcode1", out, True, 1, None
        if out in ("json", "txt", "raw"):
            # Colour must not change these.
            yield f"{out}.color", out, True, 0, None


def render(base, data, out, color, retcode, indent):
    """What `salt` prints to stdout for `data` (what display_output prints)."""
    opts = copy.deepcopy(base)
    opts["color"] = color
    if indent is not None:
        opts["output_indent"] = indent
    buf = io.StringIO()
    with contextlib.redirect_stdout(buf):
        salt.output.display_output(
            copy.deepcopy(data), out=out, opts=opts, _retcode=retcode
        )
    return buf.getvalue()


def printable_table():
    """Ranges of code points >= 0x80 that str.isprintable() rejects."""
    ranges = []
    start = None
    for cp in range(0x80, 0x110001):
        bad = cp <= 0x10FFFF and not chr(cp).isprintable()
        if bad and start is None:
            start = cp
        elif not bad and start is not None:
            ranges.append((start, cp - 1))
            start = None
    lines = [
        "//! Code points (>= 0x80) that Python's `str.isprintable()` rejects, which `repr()` escapes.",
        "//!",
        f"//! Generated by `semantics/tests/data/output/gen.py` from Python {sys.version.split()[0]}",
        f"//! (Unicode {unicodedata.unidata_version}); do not edit by hand.",
        "",
        "/// Sorted, non-overlapping inclusive ranges of non-printable code points.",
        "pub(super) const NON_PRINTABLE: &[(u32, u32)] = &[",
    ]
    for lo, hi in ranges:
        lines.append(f"    (0x{lo:04X}, 0x{hi:04X}),")
    lines.append("];")
    return "\n".join(lines) + "\n"


def main():
    assert salt.version.__version__ == "3007.8", salt.version.__version__
    assert yaml.__with_libyaml__, "PyYAML without libyaml: Salt would not use CSafeDumper"
    base = salt.config.master_config(None)
    for key in ("output", "output_indent", "color", "nested_indent"):
        base.pop(key, None)
    os.makedirs(CASES_DIR, exist_ok=True)
    names = set()
    for name, text in CORPUS + random_corpus():
        assert name not in names, name
        names.add(name)
        data = json.loads(text)
        expected = {}
        for variant, out, color, retcode, indent in variants():
            expected[variant] = render(base, data, out, color, retcode, indent)
        path = os.path.join(CASES_DIR, f"{name}.json")
        with open(path, "w", encoding="utf-8") as fh:
            json.dump({"input": data, "expected": expected}, fh, ensure_ascii=False,
                      indent=1)
            fh.write("\n")
    for stale in os.listdir(CASES_DIR):
        if stale.endswith(".json") and stale[: -len(".json")] not in names:
            os.remove(os.path.join(CASES_DIR, stale))
    with open(PRINTABLE_RS, "w", encoding="utf-8") as fh:
        fh.write(printable_table())
    print(f"wrote {len(names)} cases to {CASES_DIR}")


if __name__ == "__main__":
    main()
