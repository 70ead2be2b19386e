# web1 fails and is allowed to; the next step still runs.
everyone:
  salt.state:
    - tgt: '*'
    - sls: app.maybe
    - fail_minions: web1

after:
  salt.function:
    - name: test.echo
    - tgt: db1
    - arg:
      - still here
    - require:
      - salt: everyone
