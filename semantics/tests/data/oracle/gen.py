"""Regenerates the oracle fixtures next to this file by asking Salt itself.

Salt 3007.8 in a virtualenv is the oracle; nothing here is copied from Salt:
    python3 -m venv /tmp/saltvenv
    /tmp/saltvenv/bin/pip install salt==3007.8 pyyaml jinja2 msgpack looseversion \
        packaging distro psutil tornado pyzmq requests cryptography
    /tmp/saltvenv/bin/python semantics/tests/data/oracle/gen.py

Each fixture is a JSON list of cases; semantics/tests/oracle.rs replays them.
"""

import fnmatch
import json
import math
import os
import random
import re

import salt.config
import salt.loader
import salt.utils.args
import salt.utils.data

HERE = os.path.dirname(os.path.abspath(__file__))


def dump(name, cases):
    with open(os.path.join(HERE, name), "w", encoding="utf-8") as f:
        json.dump(cases, f, ensure_ascii=False, indent=1)
        f.write("\n")
    print(name, len(cases))


class NotJson(Exception):
    pass


def to_json(v):
    """Salt's value as saltq represents it: big ints as digits, str() keys."""
    if v is None or isinstance(v, (bool, str)):
        return v
    if isinstance(v, int):
        return v if -(2**63) <= v < 2**64 else str(v)
    if isinstance(v, float):
        if not math.isfinite(v):
            raise NotJson()
        return v
    if isinstance(v, list):
        return [to_json(x) for x in v]
    if isinstance(v, dict):
        return {str(k): to_json(x) for k, x in v.items()}
    raise NotJson()


YAML_ARGS = [
    "1", "1.5", "-1", "+5", "-0", "0", "00", "010", "-010", "07", "-07", "09", "0x1F",
    "-0x1F", "0b101", "0o10", "0B1", "0x", "0b", "0x_1", "1_000", "-1_000", "1__0",
    "0_1", "1:30", "-1:30", "12:30:00", "1:60", "0:30", "1_000:30", "1:30.5",
    "190:20:30.15", "1e5", "1.0e5", "1.0e+5", "1.0E+5", "1E+5", "1e+5", "1.5e3",
    "6.8523015e+5", "685.230_15e+03", "1.", "0.", ".5", "+.5", ".", "._5", "1.5_",
    "1_0.5", "0.1_0", "1.2.3", "-1.5", "+1.5", "-0.0", "1.0", "0e0", ".inf", "-.inf",
    "+.inf", ".Inf", "-.INF", ".nan", ".NaN", ".NAN", "NaN", "inf",
    "20131219110700123489", "123456789012345678901234567890", "18446744073709551615",
    "18446744073709551616", "-9223372036854775808", "-9223372036854775809",
    "true", "True", "TRUE", "tRue", "false", "False", "yes", "Yes", "YES", "yES", "no",
    "No", "NO", "nO", "on", "On", "ON", "oN", "off", "Off", "OFF", "y", "n", "Y", "N",
    "null", "Null", "NULL", "nULL", "None", "none", "~", "~ ", " ~", "", " ", "---",
    "...", " --- ", "--- 1", "--- [1]", "--- [1] #c", "--- a: b # c", "--- - a # c",
    "---x", "... 1", "...x", "a ...",
    "'x'", "'it''s'", "'bad", "\"foo\"", "\"unterminated", "\"bad \\q\"", "\"\\x41\"",
    "\"\\u263A\"", "\"\\U0001F600\"", "\"\\N\"", "\"a\\ b\"", "\"\\x4\"", "\"\\u12\"",
    "\"\\e\\a\\b\\v\\f\\0\\/\\_\\L\\P\"", "\"é\"", "'a\\nb'", "\"a\\\\nb\"", "\"a\\\"",
    "\"a\" b", "'a' 'b'", "\"a\":1", "\"#\"", "'#'", "\"a\" # c",
    "[1,2]", "[1, 2]", "[]", "[[]]", "[1, [2, 3]]", "[a b, c]", "[a?b]", "[?a]",
    "[a, ?b]", "[a:1]", "[a: 1]", "[a: b: c]", "[-1, - 1]", "[-a]", "[:a]", "[a:b]",
    "[{a: 1}, {b: 2}]", "[a, b, ]", "[,]", "[a,,b]", "[1, 2", "[1]]", "[1] b",
    "[a, b]c", "[1 2]", "[1, 2]#c", "[1, 2] #c", "[a #b]", "[a, #b]", "[a#b]", "[|]",
    "[>]", "[!]", "[&]", "[*]", "[@]", "[`]", "[%]", "[a%]", "[é]", "[.inf]",
    "[20131219110700123489]", "[yes, no, ~, 1.5, '1']", "[? a: b]", "[? a]",
    "[!!str 1, !!int 2]", "[&a x, *a]", "[*a]", "[&a-b_c x]", "[&a.b x]", "[a:]",
    "[a,b?]", "[\"a\":1]", "[a, {b: [c, {d: e}]}]",
    "{a: 1}", "{a:1}", "{a: b c}", "{a: [b]}", "{\"a\": 1}", "{'a': 1}", "{\"a\":1}",
    "{'a':1}", "{[1]: 2}", "{1: a}", "{1: a, 1.0: b}", "{true: a, 1: b}", "{null: a}",
    "{~: a, : b}", "{: b}", "{a}", "{a: }", "{a:}", "{a:b: c}", "{a: 1,}", "{,}",
    "{a: 1, a: 2}", "{a: 1}}", "{}", "{a: {b: {c: [1, {d: e}]}}}", "{a: b}: c",
    "{é: ü}", "{? a: b}", "{? a}", "{a: b #c}", "{a: b}#x", "{a: 1} ", " {a: 1}",
    "{1.5: x, 2: y, yes: z, ~: w}", "{a: .inf}",
    "a: b", "a: 1 # c", "a: b #c", "a:  #c", "a: b: c #x", "a: [1] #x", "- a",
    "- a # x", "- - a #x", "- a: b #x", "- #c", "-  # c", "-", "- ", "- - a",
    "- ? a #c", "? a #x", "? a: b #x", "?x", ":x", "-x", "-1", "&a a: *a #c",
    "a: &x", "&a #c", "&a", "&a foo", "&foo", "&x [1, *x]", "&a[1]", "*", "*foo",
    "!", "!foo", "! 1", "!!str 1", "!!str", "!!str [1]", "!!int 3", "!!int abc",
    "!!int 010", "!!float 1", "!!float 1e5", "!!bool yes", "!!bool YES", "!!null x",
    "!!seq [1]", "!!map {a: 1}", "!<tag:yaml.org,2002:str> 1", "|", ">", "|-", ">-",
    "|+", "|2", "| # c", "| foo", "#", "# x", "# ", " # x", "foo # bar", "1 # x",
    "True # c", "[1, 2] # c", "x #", "x#", "a#b", "a #b", "%foo", "@foo", "`x",
    ",hi", "hi,", " foo ", "foo  bar", "1 2", "on off", "http://x.com", "a:b", "1:1",
    "key=val", "=", "<<", "2020-01-01", "2001-12-14t21:59:43.10-05:00",
    "2001-12-14 21:59:43.10 -5", "é", "a\\", "a\tb", "a\nb", "a\rb", "x\n",
    "web*", "G@os:Ubuntu", "salt://top.sls", "/etc/hosts", "C:\\temp", "50%",
    "echo hi; exit 3", "python_shell=True", "'single' and more", "a, b", "-a b",
    "?", ":", "- -", "-- x", "a - b", "{{ jinja }}", "[[1]]", "[[1], [2]]",
]


def gen_yamlify():
    cases = []
    for arg in YAML_ARGS:
        got = salt.utils.args.yamlify_arg(arg)
        try:
            want = to_json(got)
        except NotJson:
            want = arg
        cases.append({"arg": arg, "want": want})
    return cases


def gen_fnmatch(rng):
    cases = []
    pat_alphabet = "ab-]![*?\\^z"
    txt_alphabet = "ab-]![\\^z."
    for _ in range(3000):
        pat = "".join(rng.choice(pat_alphabet) for _ in range(rng.randint(0, 7)))
        txt = "".join(rng.choice(txt_alphabet) for _ in range(rng.randint(0, 4)))
        try:
            want = fnmatch.fnmatchcase(txt, pat)
        except re.error:
            want = None
        cases.append({"pattern": pat, "text": txt, "want": want})
    return cases


PCRE = [
    (r"web\d+", "web01.example.com"), (r"web\d+", "xweb01"), ("web", "we"),
    ("a|b", "bx"), (r"web\d+\Z", "web01"), (r"web\d+\Z", "web01x"), ("web$", "web"),
    ("a{,2}b", "aab"), ("a{,2}b", "aaab"), ("a{2}", "aa"), ("a{2,}", "aaaa"),
    ("a{", "a{"), ("a{}", "a{}"), ("a{x}", "a{x}"), ("a{1,x}", "a{1,x}"), ("x{,}", "xxx"),
    ("[[]", "["), ("[]a]", "]"), ("[^]a]", "b"), ("[a&&b]", "&"), ("[a~~b]", "~"),
    ("(?=web)w", "web"), ("(?!db)w", "web"), (r"(?<=w)e", "we"), (r"(\w)\1", "aa"),
    ("(?i)WEB", "web"), ("(?P<x>a)(?P=x)", "aa"), ("web(", "web("), ("*a", "a"),
    ("[a", "a"), (r"\d+\.\d+", "3.11"), (r"[\w.-]+", "web-1.a"), ("^web", "web1"),
    ("minion[0-9]", "minion7"), ("minion[^0-9]", "minion7"), ("", "anything"),
    (r"\bweb\b", "web.x"), (".*db.*", "prod-db-1"), (r"\S+", "x y"), (r"a\Z", "a\n"),
]


def gen_pcre():
    cases = []
    for pat, txt in PCRE:
        try:
            want = bool(re.match(pat, txt))
        except re.error:
            want = None
        cases.append({"pattern": pat, "text": txt, "want": want})
    return cases


DATA = {
    "two_level": {"foo": {"bar": "baz"}},
    "comb": {"foo": {"bar": "baz:woz"}},
    "dict_and_list": {"abc": ["def", "ghi", {"lorem": {"ipsum": [{"dolor": "sit"}]}}]},
    "three_level": {"a": {"b": {"c": "v"}}},
    "wild": {"a": {"b": {"ç": "d", "é": ["eff", "gee", "8ch"], "ĩ": {"j": "k"}}}},
    "grains": {
        "os": "Ubuntu",
        "osrelease": "22.04",
        "num_cpus": 4,
        "mem": 3.0,
        "virtual": None,
        "ssds": [],
        "empty": {},
        "is_prod": True,
        "roles": ["web", "DB", "cache:redis"],
        "custom": {"list": ["a", "b:c", {"deep": "x"}], "n": 0, "flag": False},
        "a:b": "colon-key",
        "ipv4": ["127.0.0.1", "10.1.2.3"],
        "mixed": [1, 2.5, True, None, ["x", "y"], {"k": "v"}],
        "weird": "Web*[1]",
    },
}

EXPRS = [
    "foo:bar:baz", "foo:bar:baz:woz", "foo:bar:baz:woz:wiz", "foo:bar", "foo:*",
    "abc:ghi", "abc:lorem:ipsum:dolor:sit", "abc:1", "abc:-1:lorem", "abc:lorem:*",
    "a:b:c:v", "a:c:v", "a:*:c:v", "*:*:*:*", "a:*:*:*", "a:b:*:*", "a:b:ç:*",
    "a:b:*:d", "a:*:ç:d", "*:b:ç:d", "*:*:ç:d", "*:*:*:d", "a:*:*:d", "a:b:*:ef*",
    "a:b:*:g*", "a:b:*:j:*", "a:b:*:j:k", "a:b:*:*:k", "a:b:*:*:*", "a:b:é:8*",
    "os:Ubuntu", "os:ubuntu", "os:UBU*", "os:Debian", "os", "os:", ":Ubuntu",
    "osrelease:22.04", "osrelease:22.*", "osrelease:22", "num_cpus:4", "num_cpus:4.0",
    "num_cpus:[0-9]", "mem:3.0", "mem:3", "virtual:None", "virtual:none", "virtual:*",
    "is_prod:true", "is_prod:True", "is_prod:1", "roles:web", "roles:db", "roles:w*",
    "roles:cache:redis", "roles:cache", "custom:list:b:c", "custom:list:b",
    "custom:list:deep:x", "custom:list:deep", "custom:list:2:deep:x", "custom:n:0",
    "custom:flag:false", "custom:*", "custom:list", "custom:flag", "a:b:colon-key",
    "a:b", "ipv4:10.*", "mixed:2.5", "mixed:true", "mixed:none", "mixed:k",
    "mixed:['x', 'y']", "mixed:[[]x*", "ssds:*", "empty:*", "*:Ubuntu", "*:web",
    "*:x", "*:*", "weird:web*", "weird:web\\*", "weird:Web*[[]1]", "roles:(web|db)",
    "roles:d.", "os:^u", "os:.*tu$", "osrelease:\\d+\\.\\d+", "os:U(", "os:(",
    "custom:list:b:[c]", "custom:list:b:(c", "custom:*:x", "custom:*:b:c",
    "missing:thing", "roles:-1", "roles:0", "roles:5", "roles: 0",
]


def gen_subdict():
    cases = []
    for name, data in DATA.items():
        for expr in EXPRS:
            for mode in ("glob", "regex", "exact"):
                want = salt.utils.data.subdict_match(
                    data,
                    expr,
                    regex_match=mode == "regex",
                    exact_match=mode == "exact",
                )
                cases.append(
                    {"data": name, "expr": expr, "delimiter": ":", "mode": mode, "want": bool(want)}
                )
    for expr in ["os|Ubuntu", "roles|web", "custom|list|b:c", "custom|list|b|c", "a:b|colon-key", "*|web", "os:Ubuntu"]:
        for mode in ("glob", "regex", "exact"):
            want = salt.utils.data.subdict_match(
                DATA["grains"], expr, delimiter="|",
                regex_match=mode == "regex", exact_match=mode == "exact",
            )
            cases.append({"data": "grains", "expr": expr, "delimiter": "|", "mode": mode, "want": bool(want)})
    return {"data": DATA, "cases": cases}


MINIONS = [
    {"id": "web01.example.com", "grains": DATA["grains"], "pillar": {"env": "prod", "tier": {"name": "front"}}},
    {"id": "db1", "grains": {"os": "Debian", "roles": ["db"], "ipv4": ["10.9.8.7"], "ipv6": ["fe80::1"]}, "pillar": {"env": "dev"}},
    {"id": "minion0", "grains": {}, "pillar": {}},
]

COMPOUND = [
    "web*", "*", "G@os:Ubuntu", "G@os:Ubuntu and web*", "G@os:ubuntu not E@db.*",
    "G@roles:web not G@os:Ubuntu", "not G@os:Ubuntu", "not web*", "not not web*",
    "web* or db*", "web* and db*", "web* or db* and G@os:Debian",
    "( web* or db* ) and G@os:Debian", "not ( web* or db* )", "( web* )",
    "(web* or db*)", "( ( db1 ) )", "S@10.0.0.0/8", "S@10.1.2.3", "S@10.1.2.4",
    "S@fe80::/10", "S@fe80::1", "I@env:prod", "I@env:prod or x", "I@tier:name:front",
    "J@env:pr.*", "J@env:^dev$", "P@os:(Ubuntu|Debian)", "P@roles:d.", "L@db1,minion0",
    "L@db1, minion0", "E@web\\d+", "E@minion[0-9]$", "G|@os|Ubuntu",
    "G|@custom|list|b:c", "P|@os|deb.*", "I|@tier|name|front", "J|@tier|name|fr.*",
    "G@custom:list:b:c", "G@roles:w* and not L@db1", "minion0 or G@os:*",
    "G@virtual:None", "G@is_prod:true", "G@num_cpus:4", "G@os:Ubuntu and",
    "and web*", "( web*", "web* )", "web* db1", "X@foo", "G@", "E@web(", "S@10.0.0.1/8",
    "S@nope", "( )", "web* and ( db1 or", "or", "not", "( and web* )", "web* not",
    "web* and not not db1", "L@", "G@os", "G@os:Ubuntu or G@os", "db1 ( minion0 )",
]


def gen_compound():
    cases = []
    for minion in MINIONS:
        opts = salt.config.minion_config(None)
        opts["id"] = minion["id"]
        opts["grains"] = minion["grains"]
        opts["pillar"] = minion["pillar"]
        matchers = salt.loader.matchers(opts)
        match = matchers["compound_match.match"]
        for tgt in COMPOUND:
            try:
                want = match(tgt, opts=opts, minion_id=minion["id"])
            except Exception:  # pylint: disable=broad-except
                want = False  # the minion would not run the job
            cases.append({"minion": minion["id"], "tgt": tgt, "want": bool(want)})
    return {"minions": MINIONS, "cases": cases}


def main():
    rng = random.Random(3007)
    dump("yamlify.json", gen_yamlify())
    dump("fnmatch.json", gen_fnmatch(rng))
    dump("pcre.json", gen_pcre())
    dump("subdict.json", gen_subdict())
    dump("compound.json", gen_compound())


if __name__ == "__main__":
    main()
