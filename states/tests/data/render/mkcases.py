"""Writes cases.json (the inputs gen.py records Salt's answers for).

    python3 states/tests/data/render/mkcases.py
"""
import json, os

C = []
def sls(name, text, files=None, sls="top.x", main=None, **kw):
    main = main or sls.replace(".", "/") + ".sls"
    f = dict(files or {}); f[main] = text
    C.append(dict(name=name, files=f, sls=sls, main=main, **kw))
def tpl(name, text, files=None, **kw):
    f = dict(files or {}); f["tpl/file.conf"] = text
    C.append(dict(name=name, files=f, main="tpl/file.conf", kind="template", **kw))

# YAML 1.1 scalars
sls("yaml_scalars", """a: yes
b: no
c: on
d: off
e: True
f: FALSE
g: ~
h: null
i: 0644
j: '0644'
k: 0x1f
l: 1_000
m: 1.5
o: 2024-01-02
p: "yes"
q: 012
r: 0
s: +12
t: -0o17
u: 1e3
v: Yes
w: y
x: n
y: 0b101
z: 190:20:30
aa: 00
ab: 09
ac: .5
ad: 1.0e+3
""")
sls("yaml_order", """zeta:
  pkg.installed: []
alpha:
  file.managed:
    - name: /tmp/a
    - mode: 644
    - contents: |
        line1
        line2
beta:
  cmd.run:
    - name: echo hi
    - unless: test -f /x
""")
sls("yaml_anchors", """base: &b
  x: 1
  y: 2
other:
  <<: *b
  y: 3
list: &l [1, 2]
again: *l
""")
sls("yaml_duplicate", """a: 1
b: 2
a: 3
""")
sls("yaml_syntax_error", """a: 1
 b: [2
c: 3
""")
sls("yaml_empty", "")
sls("yaml_comment_only", "# nothing\n")
# shebangs
sls("shebang_yaml", "#!yaml\na: {{ not_jinja }}\n", cmp="first_line")
sls("shebang_json", '#!json\n{"b": 1, "a": [true, null]}\n')
sls("shebang_jinja_json", '#!jinja|json\n{"id": "{{ grains.id }}", "n": {{ pillar.web.port }}}\n')
sls("shebang_jinja_yaml_spaces", "#! jinja | yaml\nx: {{ 1 + 1 }}\n")
# context
sls("context_vars", """sls: {{ sls }}
slspath: '{{ slspath }}'
sls_path: '{{ sls_path }}'
slsdotpath: '{{ slsdotpath }}'
slscolonpath: '{{ slscolonpath }}'
tpldir: '{{ tpldir }}'
tplfile: '{{ tplfile }}'
tpldot: '{{ tpldot }}'
saltenv: {{ saltenv }}
id: {{ grains['id'] }}
os: {{ grains.os }}
port: {{ pillar['web']['port'] }}
optid: {{ opts['id'] }}
""", sls="web.server.nginx")
sls("context_init", """tpldir: '{{ tpldir }}'
tplfile: '{{ tplfile }}'
slspath: '{{ slspath }}'
sls: {{ sls }}
""", sls="web.app", main="web/app/init.sls")
sls("context_top", """tpldir: '{{ tpldir }}'
tplfile: '{{ tplfile }}'
slspath: '{{ slspath }}'
tpldot: '{{ tpldot }}'
""", sls="toplevel", main="toplevel.sls")
sls("salt_calls", """a: {{ salt['pillar.get']('web:port') }}
b: {{ salt['pillar.get']('nope:deeper', 'dflt') }}
c: {{ salt['grains.get']('os_family') }}
d: {{ salt['cmd.run']('echo hi there') }}
e: {{ salt.test.echo('dotted') }}
f: {{ salt['config.get']('id') }}
g: {{ salt['grains.get']('roles') }}
h: {{ salt['pillar.get']('web') | tojson }}
i: {{ salt['test.true']() }}
""")
sls("salt_unknown_function", "a: {{ salt['nope.nothing']() }}\n")
sls("pillar_get_missing", """a: {{ pillar.get('missing') }}
b: {{ pillar.get('missing', 'd') }}
c: {{ pillar.get('web', {}).get('port') }}
d: {{ grains.get('nope', []) }}
""")
# python output formatting in yaml
sls("python_repr", """a: {{ none }}
b: {{ true }}
c: {{ pillar.web }}
d: {{ pillar.web.users }}
e: {{ 1.0 }}
f: {{ [1, 'x', none, true] }}
g: {{ 'str' }}
h: {{ {'k': {'n': [1]}} }}
""")
# mutation
sls("mutation", """{%- set d = {'a': 1} %}
{%- do d.update({'b': 2}) %}
{%- do d.update(c=3) %}
{%- set l = [] %}
{%- do l.append('x') %}
{%- do l.extend(['y', 'z']) %}
{%- do l.insert(0, 'w') %}
{%- do l.remove('y') %}
{%- set popped = d.pop('a') %}
{%- set dflt = d.setdefault('e', 5) %}
{%- set again = d.setdefault('b', 9) %}
{%- set p = pillar.get('web') %}
{%- do p.update({'extra': true}) %}
d: {{ d | tojson }}
l: {{ l | tojson }}
popped: {{ popped }}
dflt: {{ dflt }}
again: {{ again }}
p: {{ pillar.web | tojson }}
keys: {{ d.keys() | list | tojson }}
items: {{ d.items() | list | tojson }}
values: {{ d.values() | list | tojson }}
lpop: {{ l.pop() }}
len: {{ l | length }}
""")
sls("mutation_nested", """{%- set cfg = {'server': {'listen': 80}, 'mods': []} %}
{%- do cfg.server.update({'ssl': true}) %}
{%- do cfg['mods'].append('rewrite') %}
{%- for m in ['a', 'b'] %}{% do cfg.mods.append(m) %}{% endfor %}
cfg: {{ cfg | tojson }}
""")
# loops
sls("loops", """{%- for i in range(10) %}
{%- if i == 2 %}{% continue %}{% endif %}
{%- if i > 4 %}{% break %}{% endif %}
item{{ i }}:
  cmd.run:
    - name: echo {{ i }} {{ loop.index }}
{%- endfor %}
{%- for u in pillar.web.users %}
user_{{ u }}:
  user.present:
    - name: {{ u }}
{%- endfor %}
{%- for k, v in pillar.web.items() %}
kv_{{ k }}: {{ v }}
{%- endfor %}
""")
sls("macros", """{%- macro pkg(name, version=none) -%}
{{ name }}:
  pkg.installed:
{%- if version %}
    - version: {{ version }}
{%- endif %}
{%- endmacro %}
{{ pkg('vim') }}
{{ pkg('curl', '1.2') }}
""")
# imports
MAP = """{% import_yaml tpldir ~ "/defaults.yaml" as defaults %}
{% set osmap = salt['grains.filter_by']({
    'Debian': {'pkg': 'nginx-full', 'svc': 'nginx'},
    'RedHat': {'pkg': 'nginx', 'svc': 'nginx'},
}, merge=salt['pillar.get']('nginx:lookup')) %}
{% do defaults.nginx.update(osmap) %}
{% set nginx = defaults.nginx %}
"""
sls("import_map", """{%- from "nginx/map.jinja" import nginx with context %}
nginx:
  pkg.installed:
    - name: {{ nginx.pkg }}
  service.running:
    - name: {{ nginx.svc }}
    - port: {{ nginx.port }}
""", files={"nginx/map.jinja": MAP, "nginx/defaults.yaml": "nginx:\n  port: 80\n  pkg: generic\n"}, sls="nginx.init", main="nginx/init.sls")
sls("import_relative", """{%- from "./map.jinja" import cfg %}
{%- import "../lib/macros.jinja" as m %}
{%- include "./inc.sls" %}
a: {{ cfg.x }}
b: {{ m.greet('bob') }}
""", files={"app/sub/map.jinja": "{% set cfg = {'x': 42} %}\n",
            "app/lib/macros.jinja": "{% macro greet(n) %}hi-{{ n }}{% endmacro %}\n",
            "app/sub/inc.sls": "inc: {{ sls }}\n"}, sls="app.sub.main", main="app/sub/main.sls")
sls("import_yaml_json_text", """{%- import_yaml "data/d.yaml" as y %}
{%- import_json "data/d.json" as j %}
{%- import_text "data/d.txt" as t %}
y: {{ y | tojson }}
j: {{ j | tojson }}
t: {{ t | tojson }}
""", files={"data/d.yaml": "a: yes\nb: 0644\nc: [1, two]\n",
            "data/d.json": '{"z": 1, "a": [true]}',
            "data/d.txt": "plain text\nline2\n"})
sls("load_tags", """{%- load_yaml as y %}
a: on
b:
  - 1
  - x
{%- endload %}
{%- load_json as j %}
{"k": [1, 2], "b": null}
{%- endload %}
{%- load_text as t %}
some text
{%- endload %}
y: {{ y | tojson }}
j: {{ j | tojson }}
t: {{ t | tojson }}
""")
sls("import_missing", '{% from "nope/map.jinja" import x %}\na: 1\n', cmp="first_line")
sls("include_missing_ignore", '{% include "nope.sls" ignore missing %}\na: 1\n')
# filters
sls("filters", """a: {{ 'yes' | to_bool }}
b: {{ 0 | to_bool }}
c: {{ [1, 2, 1, 3] | unique | tojson }}
d: {{ 'x' | sequence | tojson }}
e: {{ {'a': {'b': {'c': 7}}} | traverse('a:b:c') }}
f: {{ {'a': 1} | traverse('x:y', 'dflt') }}
g: {{ 'abc123' | regex_match('abc(\\\\d+)') | tojson }}
h: {{ 'xabc123' | regex_search('abc(\\\\d+)') | tojson }}
i: {{ 'a1b2' | regex_replace('\\\\d', '#') }}
j: {{ "it's" | yaml_squote }}
k: {{ 'say "hi"' | yaml_dquote }}
l: {{ 'plain' | yaml_encode }}
m: {{ {'b': 1, 'a': 2} | dictsort | tojson }}
n: {{ [3, 1, 2] | min }}
o: {{ [3, 1, 2] | max }}
p: {{ [1] is list }}
q: {{ 'x' is list }}
t: {{ 'abc' | md5 }}
u: {{ 'abc' | sha256 }}
v: {{ [1, 2, 3] | avg }}
w: {{ 'abc' | sha512 }}
x: {{ 'a b' | quote }}
y: {{ '{"a": [1]}' | load_json | tojson }}
z: {{ 'a: yes' | load_yaml | tojson }}
aa: {{ ['x', 'y'] | join(',') }}
ab: {{ 'Hello' | lower }}
ac: {{ 'a,b'.split(',') | tojson }}
ad: {{ '/etc' | path_join('nginx', 'x.conf') }}
ae: {{ {'k': [1, 'two']} | yaml }}
af: {{ {'k': [1, 'two']} | json }}
ag: {{ 'abc' | sha1 }}
ah: {{ [1, 2] | is_list }}
ai: {{ 'x' | is_list }}
aj: {{ '1.2.3.4' | is_ip }}
ak: {{ '::1' | is_ipv6 }}
al: {{ '1.2.3.4' | is_ipv4 }}
am: {{ [{'a': 1}, {'a': 2}] | map(attribute='a') | list | tojson }}
an: {{ 'abc' | base64_encode }}
ao: {{ 'YWJj' | base64_decode }}
ap: {{ [1, [2, [3]]] | flatten | tojson }}
aq: {{ 'a-b' | replace('-', '_') }}
ar: {{ [1, 2, 3] | difference([2]) | tojson }}
as: {{ [1, 2, 3] | intersect([2, 3, 4]) | tojson }}
at: {{ [1, 2] | union([2, 3]) | tojson }}
au: {{ [1, 2] | symmetric_difference([2, 3]) | tojson }}
av: {{ 'yes' | to_bool is sameas true }}
aw: {{ 'Hello' | upper }}
ax: {{ [3, 1, 2] | sort | tojson }}
ay: {{ 'x' | yaml_encode }}
az: {{ 3 | yaml_encode }}
""")
sls("strings_pycompat", """a: {{ tpldir.split('/') | tojson }}
b: {{ 'abc'.startswith('a') }}
c: {{ 'Abc'.upper() }}
d: {{ ' x '.strip() }}
e: {{ 'a.b.c'.replace('.', '/') }}
f: {{ 'x=%s' | format('y') }}

h: {{ 'abc'.endswith('c') }}
i: {{ 'a,b'.split(',')[1] }}
g: {{ '%s-%d' % ('a', 3) }}
j: {{ '%05.1f|%-4s|%x' % (3.14159, 'ab', 255) ~ '!' }}
k: {{ 'id=%(id)s' % grains }}
l: {{ ("%s" % pillar.web.users) | yaml_dquote }}
""", sls="web.server.nginx")
sls("jinja_undefined", "a: 1\nb: {{ nope }}\nc: 3\n")
sls("jinja_undefined_attr", "a: 1\nb: {{ pillar.web.nope }}\n")
sls("jinja_syntax_error", "a: 1\n{% if x %}\nb: 2\n")
sls("jinja_unknown_tag", "a: 1\n{% frobnicate %}\n")
sls("jinja_raise", "a: 1\n{{ raise('custom failure') }}\n", cmp="first_line")
sls("trailing_newline", "a: '{{ 1 }}'\n\n\n")
sls("set_block", """{%- set body %}
line {{ 1 }}
{%- endset %}
a: {{ body | tojson }}
b: {{ grains.roles | join(' ') }}
c: {{ grains.num_cpus * 2 }}
d: {{ grains.ipv4 | first }}
e: {{ 'web' in grains.roles }}
f: {{ pillar.empty | length }}
{%- set ns = namespace(found=false) %}
{%- for r in grains.roles %}{% if r == 'db' %}{% set ns.found = true %}{% endif %}{% endfor %}
g: {{ ns.found }}
""")
sls("renderer_option_yaml", "a: {{ x }}\n", cmp="first_line", opts={"renderer": "yaml"})
sls("json_in_yaml", """{%- set cfg = {'a': [1, 2], 'b': none} %}
cfg: {{ cfg | json }}
""")
sls("show_full_context_absent", """{%- set o = odict() %}
{%- do o.update({'z': 1}) %}
{%- do o.update({'a': 2}) %}
o: {{ o | tojson }}
""")
# templates
tpl("template_basic", """# managed by salt
server {{ grains.id }}
port {{ pillar.web.port }}
{%- for u in pillar.web.users %}
user {{ u }}
{%- endfor %}
{{ custom }} {{ saltenv }}
""", context={"custom": "ctxval"})
tpl("template_no_newline", "x={{ 1 }}")
tpl("template_undefined", "line1\nx={{ missing }}\n")
tpl("template_import", """{%- from "tpl/map.jinja" import m %}
v={{ m.v }}
""", files={"tpl/map.jinja": "{% set m = {'v': 'mapped'} %}"})


# second batch: constructs formulas use
def sls2(name, text, files=None, sls="top.y", main=None, **kw):
    main = main or sls.replace(".", "/") + ".sls"
    f = dict(files or {}); f[main] = text
    C.append(dict(name=name, files=f, sls=sls, main=main, **kw))
sls2("import_yaml_renders_jinja", """{%- set tplroot = tpldir.split('/')[0] %}
{%- import_yaml tplroot ~ "/defaults.yaml" as defaults %}
{%- import_json tplroot ~ "/osmap.json" as osmap %}
{%- set merged = salt['grains.filter_by'](osmap, grain='os_family', merge=salt['pillar.get']('app:lookup', {}), base='default') %}
{%- do defaults.app.update(merged) %}
app: {{ defaults.app | json }}
root: {{ tplroot }}
""", files={"app/defaults.yaml": "app:\n  id: {{ grains.id }}\n  port: 80\n  enabled: yes\n",
            "app/osmap.json": '{"default": {"user": "root", "pkgs": ["a"]}, "Debian": {"pkgs": ["deb"]}, "RedHat": {"pkgs": ["rpm"]}}'},
     sls="app.sub.main", main="app/sub/main.sls")
sls2("jinja_expressions", """a: {{ 1 / 2 }}
b: {{ 7 // 2 }}
c: {{ 7 % 3 }}
d: {{ 'ab' * 3 }}
e: {{ 2 ** 10 }}
f: {{ [1, 2] + [3] }}
g: {{ 'x' ~ 1 ~ none }}
h: {{ 'yes' if grains.os == 'Debian' else 'no' }}
i: {{ pillar.web.users | length > 1 }}
j: {{ (pillar.web.port | string)[:2] }}
k: {{ pillar.web.users[-1] }}
l: {{ 'Hello World' | lower | replace(' ', '_') }}
m: {{ range(3) | list }}
n: {{ grains.ipv4 | select('match', '^10\\\\.') | list }}
o: {{ pillar.web.users | map('upper') | list }}
p: {{ {'b': 2, 'a': 1} | dictsort(reverse=true) | first | last }}
q: {{ '{}-{}'.format('a', 'b') }}
r: {{ 'a' is string }}
s: {{ 5 is number }}
t: {{ pillar.web is mapping }}
u: {{ pillar.nope is defined }}
v: {{ pillar.get('nope') is none }}
w: {{ pillar.web.users | join(', ') }}
x: {{ 3.5 | int }}
y: {{ '42' | int + 1 }}
z: {{ 10 | float }}
""")
sls2("loop_vars", """{%- for u in pillar.web.users %}
{{ u }}:
  first: {{ loop.first }}
  last: {{ loop.last }}
  index0: {{ loop.index0 }}
  length: {{ loop.length }}
{%- endfor %}
{%- for k, v in pillar.web | dictsort %}
sorted_{{ k }}: {{ v }}
{%- endfor %}
{%- for i in [] %}
never: 1
{%- else %}
empty_else: true
{%- endfor %}
""")
sls2("strict_if_missing", "{% if pillar.nope %}\na: 1\n{% endif %}\nb: 2\n")
sls2("pillar_merge", """{%- set s = salt['pillar.get']('web', {'port': 1, 'extra': 'x'}, merge=True) %}
s: {{ s | json }}
""")
sls2("multiline_strings", """{%- set body = 'line1\\nline2' %}
a: |
  {{ body | indent(2) }}
b: {{ body | json }}
c: {{ 'tab\\there' | yaml_dquote }}
d: {{ "quote'd" | yaml_encode }}
""")
sls2("include_with_context", """{%- set local = 'L' %}
{% include 'inc/part.sls' %}
{% include 'inc/part2.sls' without context %}
main: {{ local }}
""", files={"inc/part.sls": "part: {{ local }}-{{ sls }}\n", "inc/part2.sls": "part2: {{ grains.id }}\n"})
sls2("macro_caller", """{%- macro wrap(name) -%}
{{ name }}:
  test.nop:
    - text: {{ caller() }}
{%- endmacro %}
{% call wrap('one') %}inside{% endcall %}
{%- macro kw(a, b='B') -%}
{{ a }}{{ b }}
{%- endmacro %}
k: '{{ kw('A') }}-{{ kw('A', b='C') }}'
""")
sls2("yaml_parser_error", "a:\n  - 1\n  b: 2\n", cmp="first_line")
sls2("yaml_tab_error", "a:\n\tb: 1\n")
sls2("yaml_unclosed_quote", "a: 'abc\nb: 1\n")
sls2("yaml_complex", """list_of_maps:
  - name: a
    val: 1
  - name: b
quoted_keys:
  "1": one
  2: two
  true: t
  null: n
flow: {a: [1, {b: c}], 'd e': "f"}
folded: >
  some folded
  text
literal_keep: |+
  kept

empty_list: []
empty_map: {}
sci: 6.02e+23
neg: -5
hex: 0xFF
octal_like: 0o17
version: 1.10
ip: 10.0.0.1
time: 12:30:45
date: 2001-12-14t21:59:43.10-05:00
tilde_str: '~'
""")
tpl("template_loops_ws", """{%- for u in pillar.web.users %}
user {{ u }}
{%- endfor %}
{% if pillar.web.enabled -%}
enabled
{%- endif %}
{{ pillar.web | tojson }}
{{ grains.roles }}
{{ none }} {{ true }} {{ 1.5 }}
""")


# third batch: errors in imported files, function failures, YAML tags
sls2("nested_undefined", """{%- from "lib/map.jinja" import m with context %}
a: {{ m }}
""", files={"lib/map.jinja": "{%- set x = 1 %}\n{%- set m = nope_in_map %}\n"}, cmp="known_gap")
sls2("nested_syntax_error", """{%- from "lib/bad.jinja" import m %}
a: 1
""", files={"lib/bad.jinja": "{% set m = 1 %}\n{% if %}\n"}, cmp="first_line")
sls2("salt_call_args", """b: {{ salt['test.echo'](text='kw') }}
c: {{ salt['grains.get']('nope', 'dflt') }}
d: {{ salt['pillar.get']('web:users:0') }}
""")
sls2("yaml_tags", """a: !!str 0644
b: !!int "12"
c: !!float "1"
d: !!bool "yes"
e: !!null ""
f: !!str yes
""")
sls2("import_yaml_missing_file", '{% import_yaml "nope.yaml" as d %}\na: 1\n', cmp="first_line")
sls2("mutation_shared_import", """{%- import_yaml "d/defaults.yaml" as d1 %}
{%- do d1.svc.update({'x': 1}) %}
{%- import_yaml "d/defaults.yaml" as d2 %}
a: {{ d1 | json }}
b: {{ d2 | json }}
""", files={"d/defaults.yaml": "svc:\n  name: n\n"})

tpl("template_serializers", """{%- set d = {'b': [1, 'two'], 'a': {'z': none, 'y': true}} %}
json: {{ d | json }}
json_unsorted: {{ d | json(sort_keys=False) }}
json_indent: {{ d | json(indent=2) }}
tojson: {{ d | tojson }}
yaml_flow: {{ d | yaml }}
yaml_block:
{{ d | yaml(False) }}
python: {{ d | python }}
""")

sls2("defaults_and_tests", """a: {{ pillar.nope | default('d') }}
b: {{ pillar.get('nope') | default('d2', true) }}
c: {{ pillar.web.port is defined and pillar.web.nope is not defined }}
d: {{ grains.roles | select('equalto', 'db') | list }}
e: {{ [{'n': 'a', 'on': true}, {'n': 'b', 'on': false}] | selectattr('on') | map(attribute='n') | list }}
f: {{ [{'n': 'a', 'on': true}, {'n': 'b', 'on': false}] | rejectattr('on') | map(attribute='n') | join }}
g: {{ pillar.web.users | reverse | list }}
h: {{ 'a b c' | wordcount }}
i: {{ pillar.web.users | first | upper }}
j: {{ [3, 1, 2] | sort(reverse=true) }}
k: {{ 'x' | center(5) | yaml_squote }}
l: {{ 'hello' | truncate(4, true, '') }}
m: {{ pillar.web.items() | list | length }}
n: {{ grains.ipv4 | batch(1) | list }}
o: {{ 1 is odd }}
p: {{ grains.num_cpus is divisibleby 2 }}
q: {{ ['a', 'b'] | map('regex_replace', 'a', 'z') | list }}
r: {{ 'abc' | list }}
s: {{ {'a': 1}.keys() | list }}
t: {{ 5 | string ~ 'x' }}
u: {{ 'a' in {'a': 1} }}
v: {{ 2 in [1, 2] }}
w: {{ 'ab' < 'b' }}
x: {{ none is none }}
y: {{ [1, 2, 3][1:] }}
z: {{ 'abcdef'[::2] }}
""")
sls2("yaml_encode_cases", """a: {{ 'a: b' | yaml_encode }}
b: {{ 'yes' | yaml_encode }}
c: {{ '' | yaml_encode }}
d: {{ true | yaml_encode }}
e: {{ none | yaml_encode }}
f: {{ 1.5 | yaml_encode }}
g: {{ "it's" | yaml_encode }}
h: {{ '#x' | yaml_encode }}
i: {{ '0644' | yaml_encode }}
j: {{ 'multi\\nline' | yaml_encode }}
k: {{ 'a' | yaml_dquote }}
l: {{ 'x"y\\\\z' | yaml_dquote }}
""")

sls2("yaml_doc_start", "# -*- coding: utf-8 -*-\n---\na: 1\n...\n")
sls2("yaml_two_documents", "a: 1\n---\nb: 2\n")
sls2("yaml_top_list", "- a\n- b\n")
sls2("yaml_top_scalar", "just text\n")
sls2("jinja_renders_empty", "{% if false %}\na: 1\n{% endif %}\n")

BLOCKS = """{% for u in pillar.web.users %}
    {% if u %}
user {{ u }}
    {% endif %}
{% endfor %}
end
"""
tpl("template_trim_blocks_legacy", BLOCKS, opts={"jinja_trim_blocks": True, "jinja_lstrip_blocks": True})
tpl("template_jinja_env", BLOCKS, opts={"jinja_env": {"trim_blocks": True}})
tpl("template_jinja_sls_env_ignored", BLOCKS, opts={"jinja_sls_env": {"trim_blocks": True}})
tpl("template_allow_undefined", "a={{ nope }}|{{ pillar.nope }}\n", opts={"allow_undefined": True})
sls2("sls_jinja_sls_env", "{% for u in pillar.web.users %}\n  {% if u %}\n{{ u }}: 1\n  {% endif %}\n{% endfor %}\n", opts={"jinja_sls_env": {"lstrip_blocks": True, "trim_blocks": True}})

sls2("salt_function_fails", "a: 1\nb: {{ salt['cmd.run']('true', runas='nosuchuser_xyz') }}\n")
sls2("salt_function_bad_args", "a: {{ salt['test.echo']() }}\n", cmp="first_line")

sls2("yaml_filter_data", """{%- set d = {'servers': ['ntp0.example.com', 'ntp1.example.com', 'ntp2.example.com', 'ntp3.example.com', 'ntp4.example.com', 'ntp5.example.com'], 'opts': {'a': 'x: y', 'b': 'multi\\nline', 'c': '', 'd': 'yes', 'e': 1.5, 'f': none, 'g': [{'k': 'v', 'n': [1, 2]}], 'h': '#c', 'i': '- x', 'j': "it's"}} %}
flow: {{ d | yaml }}
block:
  {{ d | yaml(False) | indent(2) }}
""")

sls2("strftime", """a: '{{ 1700000000 | strftime('%Y-%m-%d %H:%M:%S') }}'
b: '{{ '1700000000' | strftime }}'
c: '{{ 86400.5 | date_format('%d/%m/%y %j %A %B') }}'
""")

with open(os.path.join(os.path.dirname(os.path.abspath(__file__)), "cases.json"), "w") as fh:
    json.dump(C, fh, indent=1)
