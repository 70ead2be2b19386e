{% set out = pillar['out'] %}
common-dir:
  file.directory:
    - name: {{ out }}/etc
    - makedirs: True

motd:
  file.managed:
    - name: {{ out }}/etc/motd
    - contents: |
        Welcome to {{ grains['id'] }}
        managed by {{ opts['id'] }}
    - require:
      - file: common-dir

stale-file:
  file.absent:
    - name: {{ out }}/etc/stale.conf
