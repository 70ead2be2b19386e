{% set out = pillar['out'] %}
web-log-line:
  file.managed:
    - name: {{ out }}/etc/app.log.conf
    - contents: "level = info"

failing-step:
  cmd.run:
    - name: "exit 3"
    - onlyif: test -e {{ out }}/fail-please

recover:
  test.succeed_with_changes:
    - onfail:
      - cmd: failing-step

extend:
  motd:
    file.managed:
      - mode: '0644'
