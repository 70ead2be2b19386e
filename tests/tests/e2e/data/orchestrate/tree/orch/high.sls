# salt.state with highstate: True, and the master's own pillar in the orchestration's render.
everything_on_db1:
  salt.state:
    - tgt: db1
    - highstate: True

say_pillar:
  salt.function:
    - name: test.echo
    - tgt: web1
    - arg:
      - {{ pillar.get('orch_msg', 'no pillar') }}
    - require:
      - salt: everything_on_db1
