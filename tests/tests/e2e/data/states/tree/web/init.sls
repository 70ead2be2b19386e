{% from "web/map.jinja" import web with context %}
{% set out = pillar['out'] %}
include:
  - .extra

web-conf:
  file.managed:
    - name: {{ out }}/etc/app.conf
    - source: salt://web/files/app.conf.j2
    - template: jinja
    - context:
        web: {{ web | json }}
    - mode: '0640'
    - require:
      - file: common-dir

reload-web:
  cmd.run:
    - name: echo reloaded >> {{ out }}/reloads
    - onchanges:
      - file: web-conf

web-marker:
  cmd.run:
    - name: touch {{ out }}/web.marker
    - creates: {{ out }}/web.marker

web-check:
  test.succeed_without_changes:
    - require:
      - cmd: web-marker
      - file: web-conf

{% for w in range(web.workers) %}
worker-{{ w }}:
  file.managed:
    - name: {{ out }}/etc/worker-{{ w }}.conf
    - contents: "worker {{ w }} of {{ web.workers }}"
    - require_in:
      - test: web-check
{% endfor %}
