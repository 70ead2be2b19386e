# Every step is meant to succeed: salt.state, salt.function, salt.runner, salt.wheel, parallel
# runners. Salt 3007.8's parallel_runners fails anyway (in its threads); see the test.
db_first:
  salt.state:
    - tgt: db1
    - sls: app.db

both_ping:
  salt.function:
    - name: test.ping
    - tgt: '*'
    - require:
      - salt: db_first

who_is_up:
  salt.runner:
    - name: manage.up

runner_args:
  salt.runner:
    - name: test.arg
    - foo: bar

keys:
  salt.wheel:
    - name: key.list_all

together:
  salt.parallel_runners:
    - runners:
        up:
          - name: manage.up
        args:
          - name: test.arg
          - kwarg:
              x: 1
